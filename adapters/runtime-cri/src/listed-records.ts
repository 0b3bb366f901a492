import type { ContainerSummary, SandboxSummary } from '@kubelet-ts/core';
import type { CriContainer, PodSandbox, PodSandboxStatus } from './cri-api.js';
import { sandboxSummaryOf, stateOf, summaryOf } from './mapping.js';

/** Status calls a list has in flight at once, for sandboxes it has not seen before. */
const CONCURRENCY = 16;

/**
 * The records the adapter's lists hand out, kept from one list to the next: a container's or
 * sandbox's record is the same object while its state (and a sandbox's address) is the one the
 * last list saw. CRI never changes a container's or sandbox's name, labels, image or creation time,
 * only its state, so an unchanged one is not mapped again, and the agent's quiet pass knows it by
 * identity, as it knows the in-memory runtime's (measured on containerd, 200 pods: the pass's own
 * work after its lists went from about 0.9 ms to 0.3 ms). A list of the whole host forgets the ids
 * it did not return.
 */
export class ListedRecords {
  private readonly containers = new Kept<ContainerSummary>();
  private readonly sandboxes = new Kept<SandboxSummary>();
  /** Each ready sandbox's pod IP once asked (undefined: none, on the node's network). */
  private readonly addresses = new Map<string, string | undefined>();

  /** @param status CRI `PodSandboxStatus`: `ListPodSandbox` gives no address. */
  constructor(private readonly status: (id: string) => Promise<PodSandboxStatus>) {}

  /** The records of listed containers; `complete` when the list was of the whole host. */
  containersOf(listed: readonly CriContainer[], complete: boolean): ContainerSummary[] {
    return this.containers.of(
      listed,
      complete,
      (c, known) => known.state === stateOf(c.state),
      (c) => summaryOf(c),
    );
  }

  /**
   * The records of listed sandboxes, with the pod IP of each ready one: asked once a sandbox
   * (`PodSandboxStatus`) and kept for its life (CRI never changes it). A sandbox the runtime cannot
   * tell of now is asked again by the next list. An empty address (the node's network) is none.
   */
  async sandboxesOf(listed: readonly PodSandbox[], complete: boolean): Promise<SandboxSummary[]> {
    const ready = (s: PodSandbox) => s.state === 'SANDBOX_READY';
    const unknown = listed.filter((s) => ready(s) && !this.addresses.has(s.id));
    for (let i = 0; i < unknown.length; i += CONCURRENCY)
      await Promise.all(
        unknown.slice(i, i + CONCURRENCY).map(async (s) => {
          const status = await this.status(s.id).catch(() => undefined);
          if (status !== undefined) this.addresses.set(s.id, status.network?.ip || undefined);
        }),
      );
    const ipOf = (s: PodSandbox) => (ready(s) ? this.addresses.get(s.id) : undefined);
    const records = this.sandboxes.of(
      listed,
      complete,
      (s, known) => known.state === (ready(s) ? 'ready' : 'notready') && known.ip === ipOf(s),
      (s) => {
        const record = sandboxSummaryOf(s);
        const ip = ipOf(s);
        return ip === undefined ? record : { ...record, ip };
      },
    );
    if (complete) for (const id of this.addresses.keys()) if (!this.sandboxes.has(id)) this.addresses.delete(id);
    return records;
  }
}

/** Records by id, each with the number of the last list that returned it. */
class Kept<R> {
  private readonly byId = new Map<string, { record: R; list: number }>();
  private lists = 0;

  has(id: string): boolean {
    return this.byId.has(id);
  }

  of<T extends { readonly id: string }>(
    listed: readonly T[],
    complete: boolean,
    same: (item: T, known: R) => boolean,
    make: (item: T) => R,
  ): R[] {
    const list = ++this.lists;
    const out: R[] = [];
    let seen = 0;
    for (const item of listed) {
      let entry = this.byId.get(item.id);
      if (entry === undefined) {
        entry = { record: make(item), list };
        this.byId.set(item.id, entry);
        seen += 1;
      } else {
        if (entry.list !== list) seen += 1;
        entry.list = list;
        if (!same(item, entry.record)) entry.record = make(item);
      }
      out.push(entry.record);
    }
    // Every kept id listed (the steady case): nothing to forget, and no walk of the map.
    if (complete && this.byId.size > seen) for (const [id, entry] of this.byId) if (entry.list !== list) this.byId.delete(id);
    return out;
  }
}
