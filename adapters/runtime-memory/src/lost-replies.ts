import { KubeletError, wrapRuntime, type ContainerRuntime } from '@kubelet-ts/core';
import type { SeededRandom } from './seeded-random.js';

/**
 * Any `ContainerRuntime`, with replies that get lost: a share of calls reach the runtime and act,
 * and then the caller is told they timed out, as when an engine's answer never arrives. The
 * faults `SeededFaultInjector` injects happen before a call acts; these happen after, which is the
 * harder case for the agent (a container it was told was not created exists). Seeded: one seed
 * loses the same replies every run. `runtime` keeps every power of the one it wraps (its event
 * stream is passed on whole: an event is not a reply).
 */
export class LostReplies {
  /** The wrapped runtime: hand this to the agent. */
  readonly runtime: ContainerRuntime;
  /** Replies lost so far. */
  lost = 0;
  private active = false;

  constructor(
    inner: ContainerRuntime,
    private readonly random: SeededRandom,
    private readonly rate: number,
  ) {
    this.runtime = wrapRuntime(inner, {
      around: async (operation, _args, proceed) => {
        const result = await proceed();
        if (this.active && this.random.chance(this.rate)) {
          this.lost += 1;
          throw new KubeletError('Timeout', `chaos: the reply to ${operation} was lost (the call went through)`, { adapter: inner.name });
        }
        return result;
      },
    });
  }

  /** Starts losing replies (named apart from the runtime's own start and stop). */
  enable(): void {
    this.active = true;
  }

  /** Every reply arrives again. */
  disable(): void {
    this.active = false;
  }
}
