/** An opaque timer of a `Clock`, which only that clock's `clearTimeout` takes. */
export type TimerHandle = { readonly __timer: unique symbol };

/** Time as the agent sees it; a virtual clock makes back-off and periods testable. */
export interface Clock {
  now(): number;
  setTimeout(callback: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

/** Wall-clock time and Node's timers: the default clock. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms) as unknown as TimerHandle,
  clearTimeout: (handle) => clearTimeout(handle as unknown as NodeJS.Timeout),
};

/** Resolves after `ms` on the given clock. */
export function sleep(clock: Clock, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimeout(resolve, ms));
}

/**
 * Calls `callback` every `ms` on the given clock until the returned function is called: the
 * clock's `setInterval`, re-armed before each call so the period does not drift by the callback's
 * own time. (A `Clock` has only one-shot timers, which is all a virtual clock needs to offer.)
 */
export function repeatEvery(clock: Clock, ms: number, callback: () => void): () => void {
  let stopped = false;
  let handle: TimerHandle;
  const tick = () => {
    if (stopped) return;
    handle = clock.setTimeout(tick, ms);
    callback();
  };
  handle = clock.setTimeout(tick, ms);
  return () => {
    stopped = true;
    clock.clearTimeout(handle);
  };
}
