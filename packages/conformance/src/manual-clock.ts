import type { Clock, TimerHandle } from '@kubelet-ts/core';

interface Timer {
  readonly id: number;
  readonly due: number;
  readonly callback: () => void;
}

/**
 * A virtual clock: time moves only when a test calls `advance`. Timers fire in due order, and
 * pending promise chains run between timers, so "sleep then act" code behaves as it would in real
 * time, only instantly and the same way every run.
 */
export class ManualClock implements Clock {
  private current: number;
  private nextId = 1;
  private timers: Timer[] = [];

  constructor(start = 0) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  setTimeout(callback: () => void, ms: number): TimerHandle {
    const timer = { id: this.nextId++, due: this.current + Math.max(0, ms), callback };
    this.timers.push(timer);
    return timer.id as unknown as TimerHandle;
  }

  clearTimeout(handle: TimerHandle): void {
    this.timers = this.timers.filter((t) => t.id !== (handle as unknown as number));
  }

  /** Timers not yet fired. */
  get pending(): number {
    return this.timers.length;
  }

  /** Moves time forward by `ms`, firing every timer that falls due on the way. */
  async advance(ms: number): Promise<void> {
    const target = this.current + ms;
    await settle();
    for (;;) {
      const next = this.earliest();
      if (next === undefined || next.due > target) break;
      this.timers = this.timers.filter((t) => t !== next);
      this.current = next.due;
      next.callback();
      await settle();
    }
    this.current = target;
    await settle();
  }

  private earliest(): Timer | undefined {
    let best: Timer | undefined;
    for (const t of this.timers) if (best === undefined || t.due < best.due || (t.due === best.due && t.id < best.id)) best = t;
    return best;
  }
}

/** Lets every queued promise continuation run (several macrotask turns, for chains of awaits). */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** A timer that a held clock keeps until the test fires it. */
export interface HeldTimer {
  readonly ms: number;
  readonly fire: () => void;
}

/**
 * A clock whose timers fire only when the test fires them (`timers[i].fire()`), in any order, and
 * whose time stands at 0: proof that an adapter takes its timing from the clock it is given and no
 * system timer stands in for it.
 */
export function heldClock(): { readonly clock: Clock; readonly timers: HeldTimer[] } {
  const timers: HeldTimer[] = [];
  const clock: Clock = {
    now: () => 0,
    setTimeout: (fire, ms) => (timers.push({ ms, fire }), timers.length as unknown as TimerHandle),
    clearTimeout: () => {},
  };
  return { clock, timers };
}
