import { describe, expect, it } from '@jest/globals';
import { ManualClock } from '@kubelet-ts/conformance';
import { AdaptiveSlots } from '../src/adaptive-slots.js';
import { agentFixture } from './agent-fixture.js';
import { pod, settle, ScriptedSource } from './helpers.js';

/**
 * A simulated engine on a virtual clock: `tasks` starts are asked for at once (the agent saturates
 * the limit), each holds its slot for `latency(inFlight)` ms, where `inFlight` is how many the
 * engine was handling when it began.
 */
async function run(slots: AdaptiveSlots, clock: ManualClock, tasks: number, latency: (inFlight: number) => number): Promise<number[]> {
  let inFlight = 0;
  let done = 0;
  const limits: number[] = [];
  const one = async () => {
    const release = await slots.acquire();
    inFlight += 1;
    await new Promise<void>((resolve) => clock.setTimeout(resolve, latency(inFlight)));
    inFlight -= 1;
    done += 1;
    release();
    limits.push(slots.limit);
  };
  const all = Promise.all(Array.from({ length: tasks }, one));
  while (done < tasks) {
    await clock.advance(5);
    await settle();
  }
  await all;
  return limits;
}

describe('AdaptiveSlots: the engine pace found while working (issue 14)', () => {
  it('grows the limit one by one while more concurrency gives more completions per second, up to its bound', async () => {
    const clock = new ManualClock(0);
    const seen: number[] = [];
    const slots = new AdaptiveSlots({ clock, max: 12, onLimit: (l) => seen.push(l) });
    // Each start takes 100 ms whatever the concurrency: twice the starts, twice the rate.
    const limits = await run(slots, clock, 400, () => 100);
    expect(seen[0]).toBe(4);
    expect(seen.slice(0, 5)).toEqual([4, 5, 6, 7, 8]);
    expect(slots.limit).toBe(12);
    expect(Math.max(...limits)).toBe(12);
  });

  it("settles near the engine's best concurrency when more only queues the calls", async () => {
    const clock = new ManualClock(0);
    const slots = new AdaptiveSlots({ clock });
    // The engine works 8 starts at a time; beyond that each waits its turn and the rate falls a
    // little (the bench saw this on a 2-core engine).
    const limits = await run(slots, clock, 800, (n) => (n <= 8 ? 100 : 100 * (n / 8) ** 1.5));
    const late = limits.slice(-300);
    expect(Math.max(...late)).toBeLessThanOrEqual(12);
    expect(Math.min(...late)).toBeGreaterThanOrEqual(5);
  });

  it('backs off when the engine slows down under load', async () => {
    const clock = new ManualClock(0);
    const slots = new AdaptiveSlots({ clock, max: 16 });
    await run(slots, clock, 300, () => 100);
    const before = slots.limit;
    expect(before).toBeGreaterThanOrEqual(12);
    // The engine is now four times slower per call, more so the more it is given.
    await run(slots, clock, 200, (n) => 400 * Math.max(1, n / 4));
    expect(slots.limit).toBeLessThan(before / 2);
    expect(slots.limit).toBeGreaterThanOrEqual(1);
  });

  it('judges only windows in which the limit was the bottleneck, and stays within its bounds', async () => {
    const clock = new ManualClock(0);
    const slots = new AdaptiveSlots({ clock, min: 2, max: 6, initial: 1 });
    expect(slots.limit).toBe(2); // the initial value is bounded too
    // One at a time, never waiting for a slot: nothing learnt.
    for (let i = 0; i < 20; i++) await run(slots, clock, 1, () => 50);
    expect(slots.limit).toBe(2);
    await run(slots, clock, 200, () => 50);
    expect(slots.limit).toBe(6);
    await run(slots, clock, 200, (n) => 50 * n ** 2);
    expect(slots.limit).toBe(2);
    expect(() => new AdaptiveSlots({ clock, min: 0 })).toThrow(/1 ≤ min ≤ max/);
    expect(() => new AdaptiveSlots({ clock, min: 5, max: 4 })).toThrow(/1 ≤ min ≤ max/);
  });

  describe('in the agent', () => {
    const f = agentFixture();

    it('keeps a fixed concurrency when asked for one, and shows it as the gauge', async () => {
      const k = f.kubelet([new ScriptedSource('a', { initial: [pod('web')] })], { concurrency: 3 });
      await k.start();
      expect((await k.metrics()).body).toMatch(/^kubelet_ts_start_concurrency 3$/m);
    });
  });
});
