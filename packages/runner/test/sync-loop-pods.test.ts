import { describe, expect, it } from '@jest/globals';
import { ManualClock } from '@kubelet-ts/conformance';
import { SyncLoop, type PassResult } from '../src/sync-loop.js';
import { settle } from './helpers.js';

/** A loop whose passes are recorded (`undefined`: a full pass) and finish when `release` is called. */
function recordingLoop(clock: ManualClock, wakeIn = 10_000) {
  const passes: Array<readonly string[] | undefined> = [];
  let release: () => void = () => {};
  const result: PassResult = { startedAt: 0, durationMs: 0, desired: 0, actions: 0, failures: 0, held: 0, busy: 0 };
  const loop = new SyncLoop({
    clock,
    pass: async (pods) => {
      passes.push(pods === undefined ? undefined : [...pods].sort());
      // Planning takes until the test says so: requests meanwhile must wait for the next pass.
      await new Promise<void>((resolve) => (release = resolve));
      return { done: Promise.resolve(result) };
    },
    wakeIn: () => wakeIn,
    idle: async () => {},
    onDone: () => {},
  });
  return { loop, passes, release: () => release() };
}

describe('SyncLoop: passes of named pods (issue 14)', () => {
  it('coalesces pods asked for during a pass into one following pass of all of them', async () => {
    const clock = new ManualClock(0);
    const { loop, passes, release } = recordingLoop(clock);
    loop.start();
    loop.requestPods(['a']);
    await settle();
    loop.requestPods(['c']);
    loop.requestPods(['b', 'c']);
    release();
    await settle();
    expect(passes).toEqual([['a'], ['b', 'c']]);
    release();
    await settle();
    expect(passes).toHaveLength(2);
    await loop.close();
  });

  it('lets a full-pass request win over pod requests made meanwhile', async () => {
    const clock = new ManualClock(0);
    const { loop, passes, release } = recordingLoop(clock);
    loop.start();
    loop.requestPods(['a']);
    await settle();
    loop.requestPods(['b']);
    loop.request();
    loop.requestPods(['c']);
    release();
    await settle();
    release();
    await settle();
    expect(passes).toEqual([['a'], undefined]);
    await loop.close();
  });

  it('never postpones the periodic full pass with pod passes', async () => {
    const clock = new ManualClock(0);
    const { loop, passes, release } = recordingLoop(clock, 1_000);
    loop.start();
    loop.request();
    release();
    await settle(); // the full pass; the next is due at 1 000
    for (let t = 0; t < 4; t++) {
      await clock.advance(300);
      loop.requestPods(['a']);
      await settle();
      release();
      await settle();
    }
    // Pod passes at 300, 600, 900 and the full pass at 1 000 before the fourth pod pass at 1 200.
    expect(passes).toEqual([undefined, ['a'], ['a'], ['a'], undefined, ['a']]);
    release();
    await loop.close();
    expect(clock.pending).toBe(0);
  });
});
