import { Labels, type Clock, type ContainerRuntime, type ContainerSummary, type SandboxSummary } from '@kubelet-ts/core';
import { withExitTimes } from './exit-times.js';

/** The runtime as the agent last saw it. */
export interface PodCacheSnapshot {
  /** Every labelled container (of every node sharing the engine), this node's exited ones with their exit times. */
  readonly containers: readonly ContainerSummary[];
  readonly sandboxes: readonly SandboxSummary[];
  /** When the runtime was last looked at (a relist or a pod's list); undefined before the first relist. */
  readonly updatedAt: number | undefined;
}

/** What a relist saw: the runtime's records as listed (for the quiet pass), and the snapshot they made. */
export interface Relisted extends PodCacheSnapshot {
  readonly listed: readonly ContainerSummary[];
}

type ExitTimes = Pick<ContainerSummary, 'startedAt' | 'finishedAt' | 'exitCode'>;

interface PodEntry {
  containers: readonly ContainerSummary[];
  sandboxes: readonly SandboxSummary[];
  /** The sequence number of the look that gave this entry (see `PodCache`). */
  seq: number;
}

/** The pod key of containers and sandboxes that carry no pod label (none, unless listed by mistake). */
const NO_POD = '';

/**
 * The pod cache (the kubelet's PLEG cache, `pleg/generic.go`): every pod's sandboxes and containers
 * as the runtime last showed them, with the time of that look. It is written by relists (each full
 * pass) and by one pod's list (`refresh`: a runtime event named the pod, or its worker just acted
 * on it); passes, the read API, the plan preview and the metrics read it, so a read of the agent
 * never calls the engine and an event costs a list of one pod, not of the host.
 *
 * Looks can overlap (a relist, slow on a big host, and a pod's list started after it): each look
 * takes a sequence number when it starts, and a pod's entry is only replaced by a look that started
 * after the one that gave it, so an older relist never undoes what a newer pod list saw.
 *
 * Exited containers need their start and end times (the crash back-off); a runtime whose list lacks
 * them (Docker) is asked once per exited container (`inspect`), and the answer is kept while the
 * container is listed: an exited container's times never change.
 */
export class PodCache {
  /** The last relist, as listed (steady state: the snapshot is these very arrays, no copy). */
  private base: { readonly containers: readonly ContainerSummary[]; readonly sandboxes: readonly SandboxSummary[]; readonly seq: number } =
    {
      containers: [],
      sandboxes: [],
      seq: 0,
    };
  /** Pods looked at on their own after the last relist began: these entries replace the relist's. */
  private readonly pods = new Map<string, PodEntry>();
  private readonly exits = new Map<string, ExitTimes>();
  private seq = 0;
  private updatedAt: number | undefined;
  /** When the last relist began (its look is at least that fresh); undefined before the first. */
  private relistBegan: number | undefined;
  private flat: { containers: readonly ContainerSummary[]; sandboxes: readonly SandboxSummary[] } | undefined;

  constructor(private readonly options: { readonly runtime: ContainerRuntime; readonly hostname: string; readonly clock: Clock }) {}

  /** What the runtime last showed. Calls nothing. */
  snapshot(): PodCacheSnapshot {
    this.flat ??= this.merged();
    return { ...this.flat, updatedAt: this.updatedAt };
  }

  /** When the last relist began; undefined before the first. */
  get relistedAt(): number | undefined {
    return this.relistBegan;
  }

  /** What the last relist and the pods' own looks since show, as a relist would hand it over. Calls nothing. */
  current(): Relisted {
    const snapshot = this.snapshot();
    return { listed: snapshot.containers, ...snapshot };
  }

  /** Lists the whole host (containers and sandboxes) and replaces what the cache holds. */
  async relist(): Promise<Relisted> {
    const { runtime } = this.options;
    const seq = ++this.seq;
    const began = this.options.clock.now();
    const [listed, sandboxes] = await Promise.all([runtime.list(), runtime.listSandboxes()]);
    const containers = await this.withExitTimes(listed);
    this.base = { containers, sandboxes, seq };
    this.relistBegan = began;
    // A pod looked at after this relist began is as that newer look saw it, listed here or not
    // (an empty entry is such a look that found the pod gone); older looks are superseded.
    for (const [podId, entry] of this.pods) if (entry.seq < seq) this.pods.delete(podId);
    this.changed();
    this.forgetExitsOfGone();
    return { listed, ...this.snapshot() };
  }

  /** Lists these pods only (`list({ podId })`) and replaces their entries. */
  async refresh(podIds: Iterable<string>): Promise<void> {
    const { runtime } = this.options;
    await Promise.all(
      [...podIds].map(async (podId) => {
        const seq = ++this.seq;
        const [listed, sandboxes] = await Promise.all([runtime.list({ podId }), runtime.listSandboxes({ podId })]);
        const containers = await this.withExitTimes(listed);
        // A newer look already answered: a relist that began later, or this pod's own.
        if (this.base.seq > seq || (this.pods.get(podId)?.seq ?? 0) > seq) return;
        // Kept even when empty, until a later relist: an older relist must not bring the pod back.
        this.pods.set(podId, { containers, sandboxes, seq });
        this.changed();
      }),
    );
  }

  /** The last relist with the pods looked at since in place of what it saw of them. */
  private merged(): { containers: readonly ContainerSummary[]; sandboxes: readonly SandboxSummary[] } {
    const { base, pods } = this;
    if (pods.size === 0) return base;
    const entries = [...pods.values()];
    return {
      containers: [
        ...base.containers.filter((c) => !pods.has(c.labels[Labels.manifestId] ?? NO_POD)),
        ...entries.flatMap((e) => e.containers),
      ],
      sandboxes: [...base.sandboxes.filter((s) => !pods.has(s.labels[Labels.sandbox] ?? NO_POD)), ...entries.flatMap((e) => e.sandboxes)],
    };
  }

  /** This node's exited containers with their exit times, from memory or, once each, from `inspect`. */
  private withExitTimes(listed: readonly ContainerSummary[]): Promise<readonly ContainerSummary[]> {
    return withExitTimes(this.options.runtime, listed, this.options.hostname, this.exits);
  }

  private forgetExitsOfGone(): void {
    if (this.exits.size === 0) return;
    const listed = new Set(this.snapshot().containers.map((c) => c.id));
    for (const id of this.exits.keys()) if (!listed.has(id)) this.exits.delete(id);
  }

  private changed(): void {
    this.flat = undefined;
    this.updatedAt = this.options.clock.now();
  }
}
