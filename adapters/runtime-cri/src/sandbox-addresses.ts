import type { SandboxSummary } from '@kubelet-ts/core';
import type { PodSandboxStatus } from './cri-api.js';

/** Status calls a list has in flight at once, for sandboxes it has not seen before. */
const CONCURRENCY = 16;

/**
 * The pod IPs of the sandboxes a list returns: `ListPodSandbox` gives none, so each ready sandbox's
 * `PodSandboxStatus` is asked once and its address kept for the life of the sandbox (CRI never
 * changes it). A steady list asks nothing; a sandbox the runtime cannot tell of now is asked again
 * by the next list. An empty address (a sandbox on the node's network) is kept as none.
 */
export class SandboxAddresses {
  private readonly known = new Map<string, string | undefined>();

  constructor(private readonly status: (id: string) => Promise<PodSandboxStatus>) {}

  async of(sandboxes: readonly SandboxSummary[], complete: boolean): Promise<SandboxSummary[]> {
    const unknown = sandboxes.filter((s) => s.state === 'ready' && !this.known.has(s.id));
    for (let i = 0; i < unknown.length; i += CONCURRENCY)
      await Promise.all(
        unknown.slice(i, i + CONCURRENCY).map(async (s) => {
          const status = await this.status(s.id).catch(() => undefined);
          if (status !== undefined) this.known.set(s.id, status.network?.ip || undefined);
        }),
      );
    // A list of every sandbox tells which are gone.
    if (complete) {
      const listed = new Set(sandboxes.map((s) => s.id));
      for (const id of this.known.keys()) if (!listed.has(id)) this.known.delete(id);
    }
    return sandboxes.map((s) => {
      const ip = s.state === 'ready' ? this.known.get(s.id) : undefined;
      return ip === undefined ? s : { ...s, ip };
    });
  }
}
