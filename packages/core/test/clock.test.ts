import { describe, expect, it } from '@jest/globals';
import { repeatEvery, type Clock, type TimerHandle } from '../src/clock.js';

/** Timers that fire only when `fire` runs the earliest one. */
function steppedClock() {
  let now = 0;
  let nextId = 1;
  const timers = new Map<number, { due: number; callback: () => void }>();
  const clock: Clock = {
    now: () => now,
    setTimeout: (callback, ms) => {
      timers.set(nextId, { due: now + ms, callback });
      return nextId++ as unknown as TimerHandle;
    },
    clearTimeout: (handle) => void timers.delete(handle as unknown as number),
  };
  const fire = () => {
    const [id, timer] = [...timers].sort((a, b) => a[1].due - b[1].due)[0]!;
    timers.delete(id);
    now = timer.due;
    timer.callback();
  };
  return { clock, fire, pending: () => timers.size };
}

describe('repeatEvery', () => {
  it('calls back every period on the clock until stopped, leaving no timer behind', () => {
    const { clock, fire, pending } = steppedClock();
    const times: number[] = [];
    const stop = repeatEvery(clock, 20, () => times.push(clock.now()));
    fire();
    fire();
    fire();
    expect(times).toEqual([20, 40, 60]);
    stop();
    expect(pending()).toBe(0);
  });

  it('can be stopped from inside its own callback', () => {
    const { clock, fire, pending } = steppedClock();
    let calls = 0;
    const stop = repeatEvery(clock, 5, () => {
      calls += 1;
      stop();
    });
    fire();
    expect(calls).toBe(1);
    expect(pending()).toBe(0);
  });
});
