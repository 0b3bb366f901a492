import type { Clock } from '@kubelet-ts/core';
import type { StartSlots } from './slots.js';

export interface AdaptiveSlotsOptions {
  readonly clock: Clock;
  /** The limit to begin with. Default 4. */
  readonly initial?: number;
  /** Never fewer holders than this. Default 4 (`MIN_CONCURRENCY`). */
  readonly min?: number;
  /** Never more holders than this. Default 32. */
  readonly max?: number;
  /** Hears every change of the limit (the gauge). */
  readonly onLimit?: (limit: number) => void;
}

/** A window's completions per second must rise by this share over the last one's to count as a rise … */
const RISE = 1.1;
/** … and fall below this share to count as a fall. */
const FALL = 0.9;
/** A step up adds a quarter (at least one), a step down takes a fifth (at least one): 4, 5, 6, 8, 10, 13, 16, 20 … */
const stepUp = (limit: number) => limit + Math.max(1, Math.round(limit / 4));
const stepDown = (limit: number) => limit - Math.max(1, Math.round(limit / 5));
/**
 * A window is judged on at least this many completions: fewer, and a competing load on the host
 * makes its rate noise (issue 27 saw windows of 2-3 completions cut the limit again and again).
 */
const MIN_WINDOW = 8;

/** Completions counted since `startedAt`; `saturated` once someone waited for a slot in it. */
interface Window {
  readonly startedAt: number;
  count: number;
  saturated: boolean;
  afterStep: boolean;
}

/**
 * A counting semaphore whose size finds the engine's best concurrency while the agent works
 * (issues 14 and 27): a hill climb on throughput, measured in windows of completions. A window
 * closes once whole rounds of the limit, at least `MIN_WINDOW` holders, have finished; it is
 * judged only when the limit was the bottleneck in it (someone waited for a slot), since an idle
 * agent says nothing about the engine, and not when a step was taken in it (holders that began
 * under the old limit end in the next one). Against the last window judged: completions per second rose
 * by 10 % → one more step the way the last step went (up, at first); they fell by 10 % → a step
 * back the other way; neither → the limit stays. Steps are a quarter of the limit, so that a step
 * changes the rate by more than a window's noise wherever the engine still gains or loses by it.
 *
 * Throughput alone is judged. How long a call holds its slot is not: by Little's law it grows with
 * the limit whenever the engine's throughput is flat, so a rule on it ("twice the best window's
 * mean: back off", issue 14's first version) held the limit at the bottom of the plateau, and
 * under a competing load below it (issue 27: 2-3 pods at once on Docker, where 2 took 1.26× as long
 * as 4). The floor is 4 for the same reason: on the bench's engines, under load or not, fewer than
 * 4 at once was never the best and 2 cost up to a quarter more, while 4 to 16 were within noise of
 * each other; the kubelet itself bounds pod starts not at all. Netflix's concurrency-limits and
 * Envoy's adaptive concurrency judge latency against a minimum instead; throughput is the goal
 * here, as the bench measures it. Everything is timed on the injected clock: deterministic under
 * a virtual one.
 */
export class AdaptiveSlots implements StartSlots {
  private held = 0;
  private readonly waiting: Array<() => void> = [];
  private current: number;
  private readonly min: number;
  private readonly max: number;
  private window: Window;
  private previousRate: number | undefined;
  /** The way the last step went: the way to keep going while the rate rises. */
  private lastStep: 'up' | 'down' = 'up';

  constructor(private readonly options: AdaptiveSlotsOptions) {
    this.min = options.min ?? MIN_CONCURRENCY;
    this.max = options.max ?? MAX_CONCURRENCY;
    this.current = Math.min(this.max, Math.max(this.min, options.initial ?? MIN_CONCURRENCY));
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
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.completed();
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

  private completed(): void {
    const w = this.window;
    w.count += 1;
    // Whole rounds of the limit (8 at a limit of 4, 10 at 5, 9 at 9): a round of holders is what finishes together.
    if (w.count < this.current * Math.ceil(MIN_WINDOW / this.current)) return;
    const now = this.options.clock.now();
    this.window = this.newWindow();
    // The window after a step is left unjudged: holders that began under the old limit end in it.
    if (!w.saturated || w.afterStep) return;
    // A window shorter than a millisecond on the clock still counts: as one millisecond.
    const rate = (w.count * 1000) / Math.max(1, now - w.startedAt);
    const previous = this.previousRate;
    this.previousRate = rate;
    if (previous === undefined || rate > previous * RISE) this.step(this.lastStep);
    else if (rate < previous * FALL) this.step(this.lastStep === 'up' ? 'down' : 'up');
  }

  private step(way: 'up' | 'down'): void {
    this.lastStep = way;
    if (this.set(way === 'up' ? stepUp(this.current) : stepDown(this.current))) this.window.afterStep = true;
  }

  /** Moves the limit within its bounds; says whether it moved. */
  private set(limit: number): boolean {
    const bounded = Math.min(this.max, Math.max(this.min, limit));
    if (bounded === this.current) return false;
    this.current = bounded;
    this.options.onLimit?.(bounded);
    return true;
  }

  private newWindow(): Window {
    return { startedAt: this.options.clock.now(), count: 0, saturated: this.waiting.length > 0, afterStep: false };
  }
}

/**
 * The adaptive limit's ceiling. The engine does the work, so the agent's cores do not bound it;
 * the bench's best raw concurrency was 8 on 2 cores, and 32 leaves room for a bigger engine while
 * capping what a misjudged window can pile onto one.
 */
export const MAX_CONCURRENCY = 32;

/** The adaptive limit's floor (see `AdaptiveSlots`): fewer than 4 at once was never an engine's best on the bench. */
export const MIN_CONCURRENCY = 4;
