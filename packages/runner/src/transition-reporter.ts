import { identityOf, type BackOff, type ContainerSummary, type KubeletEvent } from '@kubelet-ts/core';

/**
 * Turns what passes see into transition events, each once: a container's exit (with its code)
 * and the start of a crash back-off. Remembers only ids still present, so it stays bounded.
 */
export class TransitionReporter {
  private readonly reportedExits = new Set<string>();
  private readonly reportedBackOffs = new Set<string>();

  constructor(
    private readonly node: string,
    private readonly emit: (event: Omit<KubeletEvent, 'time'>) => void,
    /** Exits older than this (the agent's start) are history, not news. */
    private readonly since: () => number,
  ) {}

  /**
   * Each exit seen since the agent started gets one ContainerExited event, with its code. Exits in
   * `busy` pods wait: their worker is acting on them, and an exit it caused (a stop before a
   * removal or a replacement) is its own doing, not news; one it did not cause is told once the
   * pod is not busy, if the container is still there.
   */
  exits(actual: readonly ContainerSummary[], busy: ReadonlySet<string> = new Set()): void {
    const exited = new Set<string>();
    for (const c of actual) {
      if (c.state !== 'exited') continue;
      const identity = identityOf(c.labels);
      if (identity === undefined || identity.node !== this.node) continue;
      exited.add(c.id);
      if (this.reportedExits.has(c.id) || (c.finishedAt !== undefined && c.finishedAt < this.since()) || busy.has(identity.podId)) continue;
      this.reportedExits.add(c.id);
      this.emit({
        type: 'ContainerExited',
        podId: identity.podId,
        container: identity.container,
        reason: c.exitCode === 0 ? 'Completed' : 'Error',
        message: `${c.name} exited with code ${c.exitCode ?? 'unknown'}`,
      });
    }
    for (const id of this.reportedExits) if (!exited.has(id)) this.reportedExits.delete(id);
  }

  backOffs(backOffs: readonly BackOff[]): void {
    const current = new Set(backOffs.map((b) => b.id));
    for (const id of this.reportedBackOffs) if (!current.has(id)) this.reportedBackOffs.delete(id);
    for (const b of backOffs) {
      if (this.reportedBackOffs.has(b.id)) continue;
      this.reportedBackOffs.add(b.id);
      this.emit({
        type: 'BackOff',
        podId: b.podId,
        container: b.container,
        reason: 'CrashLoopBackOff',
        message: `back-off ${b.delayMs / 1000} s restarting ${b.container} (exit code ${b.exitCode ?? 'unknown'}, ${b.restartCount} restarts so far)`,
      });
    }
  }
}
