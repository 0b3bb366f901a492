import type { Clock } from '@kubelet-ts/core';
import type { StartSlots } from './slots.js';

export interface AdaptiveSlotsOptions {
  readonly clock: Clock;
  /** The limit to begin with. Default 4. */
  readonly initial?: number;
  /** Never fewer holders than this. Default 1. */
  readonly min?: number;
  /** Never more holders than this. Default 32. */
  readonly max?: number;
  /** Hears every change of the limit (the gauge). */
  readonly onLimit?: (limit: number) => void;
}

/** A window's completions per second must rise by this share to count as a rise … */
const RISE = 1.05;
/** … and fall below this share to count as a fall. */
const FALL = 0.9;
/** Calls this many times slower than the fastest window's mean say the engine queues: back off. */
const SLOWDOWN = 2;
/** The multiplicative decrease. */
const DECREASE = 0.75;

/**
 * A counting semaphore whose size finds the engine's best concurrency while the agent works
 * (issue 14): AIMD on throughput, measured in windows of completions. A window closes once as many
 * holders as the limit have finished; it is judged only when the limit was the bottleneck in it
 * (someone waited for a slot), since an idle agent says nothing about the engine. Then:
 * completions per second rose by 5 % → the limit grows by one; they fell by 10 %, or the mean
 * hold time grew past twice the best window's (the engine queues the calls) → the limit shrinks
 * to three quarters; otherwise it stays. Netflix's concurrency-limits (Vegas, Gradient2) and
 * Envoy's adaptive concurrency judge latency against a minimum the same way; throughput is the
 * goal here, as the bench measures it. Everything is timed on the injected clock: deterministic
 * under a virtual one.
 */
export class AdaptiveSlots implements StartSlots {
  private held = 0;
  private readonly waiting: Array<() => void> = [];
  private current: number;
  private readonly min: number;
  private readonly max: number;
  private window: { startedAt: number; count: number; totalMs: number; saturated: boolean };
  private previousRate: number | undefined;
  private bestMeanMs = Infinity;

  constructor(private readonly options: AdaptiveSlotsOptions) {
    this.min = options.min ?? 1;
    this.max = options.max ?? 32;
    this.current = Math.min(this.max, Math.max(this.min, options.initial ?? 4));
    this.window = this.newWindow();
    if (!Number.isInteger(this.min) || this.min < 1 || this.max < this.min)
      throw new Error(`adaptive concurrency bounds must be integers with 1 ≤ min ≤ max, got [${this.min}, ${this.max}]`);
    options.onLimit?.(this.current);
  }

  /** The current limit. */
  get limit(): number {
    return this.current;
  }

  async acquire(): Promise<() => void> {
    if (this.held >= this.current) {
      this.window.saturated = true;
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else this.held += 1;
    const since = this.options.clock.now();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.completed(this.options.clock.now() - since);
      this.hand();
    };
  }

  /** Gives the freed slot to waiters while the (possibly new) limit allows. */
  private hand(): void {
    this.held -= 1;
    while (this.held < this.current && this.waiting.length > 0) {
      this.held += 1;
      this.waiting.shift()!();
    }
  }

  private completed(heldMs: number): void {
    const w = this.window;
    w.count += 1;
    w.totalMs += heldMs;
    if (w.count < this.current) return;
    const now = this.options.clock.now();
    this.window = this.newWindow();
    if (!w.saturated) return;
    // A window shorter than a millisecond on the clock still counts: as one millisecond.
    const rate = (w.count * 1000) / Math.max(1, now - w.startedAt);
    const meanMs = w.totalMs / w.count;
    this.bestMeanMs = Math.min(this.bestMeanMs, Math.max(meanMs, 1));
    const previous = this.previousRate;
    this.previousRate = rate;
    if ((previous !== undefined && rate < previous * FALL) || meanMs > this.bestMeanMs * SLOWDOWN)
      this.set(Math.floor(this.current * DECREASE));
    else if (previous === undefined || rate > previous * RISE) this.set(this.current + 1);
  }

  private set(limit: number): void {
    const bounded = Math.min(this.max, Math.max(this.min, limit));
    if (bounded === this.current) return;
    this.current = bounded;
    this.options.onLimit?.(bounded);
  }

  private newWindow(): { startedAt: number; count: number; totalMs: number; saturated: boolean } {
    return { startedAt: this.options.clock.now(), count: 0, totalMs: 0, saturated: this.waiting.length > 0 };
  }
}

/**
 * The adaptive limit's ceiling. The engine does the work, so the agent's cores do not bound it;
 * the bench's best raw concurrency was 8 on 2 cores, and 32 leaves room for a bigger engine while
 * capping what a misjudged window can pile onto one.
 */
export const MAX_CONCURRENCY = 32;
