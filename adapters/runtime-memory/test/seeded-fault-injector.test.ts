import { describe, expect, it } from '@jest/globals';
import type { KubeletError } from '@kubelet-ts/core';
import { ManualClock } from '@kubelet-ts/conformance';
import { MemoryRuntime, SeededFaultInjector, SeededRandom } from '../src/index.js';
import { podSandbox, spec } from './spec-fixture.js';

/** Makes `calls` list calls, each given its time on the clock, and says how each ended and when. */
async function listCalls(seed: number, calls: number): Promise<string[]> {
  const clock = new ManualClock();
  const runtime = new MemoryRuntime({ clock });
  const chaos = new SeededFaultInjector(runtime, new SeededRandom(seed), { failureRate: 0.2, maxLatencyMs: 100 });
  chaos.start();
  const outcomes: string[] = [];
  for (let i = 0; i < calls; i++) {
    const started = clock.now();
    const call = runtime.list().then(
      () => `ok@${clock.now() - started}`,
      (e: KubeletError) => `${e.code}@${clock.now() - started}`,
    );
    await clock.advance(100);
    outcomes.push(await call);
  }
  return outcomes;
}

describe('SeededRandom', () => {
  it('gives the same sequence for the same seed, and another for another seed', () => {
    const draw = (seed: number) => {
      const r = new SeededRandom(seed);
      return Array.from({ length: 20 }, () => r.int(1000));
    };
    expect(draw(42)).toEqual(draw(42));
    expect(draw(42)).not.toEqual(draw(43));
  });

  it('keeps its draws in range and roughly uniform', () => {
    const r = new SeededRandom(7);
    const counts = [0, 0, 0, 0];
    for (let i = 0; i < 4000; i++) counts[r.int(4)]! += 1;
    for (const n of counts) expect(n).toBeGreaterThan(900);
    expect(counts.reduce((a, b) => a + b)).toBe(4000);
  });
});

describe('SeededFaultInjector', () => {
  it('fails about the given share of calls, with runtime codes and random latency', async () => {
    const outcomes = await listCalls(1, 500);
    const failed = outcomes.filter((o) => !o.startsWith('ok'));
    expect(failed.length / outcomes.length).toBeGreaterThan(0.15);
    expect(failed.length / outcomes.length).toBeLessThan(0.25);
    expect(new Set(failed.map((o) => o.split('@')[0]))).toEqual(new Set(['NotFound', 'Conflict', 'Unavailable', 'Timeout', 'Internal']));
    const latencies = new Set(outcomes.map((o) => Number(o.split('@')[1])));
    expect(latencies.size).toBeGreaterThan(50);
    expect(Math.max(...latencies)).toBeLessThanOrEqual(100);
  });

  it('replays the same faults and latencies from the same seed', async () => {
    expect(await listCalls(99, 100)).toEqual(await listCalls(99, 100));
    expect(await listCalls(99, 100)).not.toEqual(await listCalls(100, 100));
  });

  it('never fails a stop or remove with NotFound, which the contract reads as "already gone"', async () => {
    const runtime = new MemoryRuntime({ images: ['app:1'] });
    const id = (await runtime.create(spec('a'), await podSandbox(runtime))).id;
    await runtime.start(id);
    const chaos = new SeededFaultInjector(runtime, new SeededRandom(3), { failureRate: 1, codes: ['NotFound'] });
    chaos.start();
    await expect(runtime.inspect(id)).rejects.toMatchObject({ code: 'NotFound' });
    await runtime.stop(id, 10);
    await runtime.remove(id);
    chaos.stop();
    await expect(runtime.list()).resolves.toEqual([]);
    expect(chaos.injected).toBe(1);
  });

  it('counts what it injected, fails before acting, and stops disturbing calls when stopped', async () => {
    const runtime = new MemoryRuntime({ images: ['app:1'] });
    const sandbox = await podSandbox(runtime);
    const chaos = new SeededFaultInjector(runtime, new SeededRandom(5), { failureRate: 1, codes: ['Unavailable'], operations: ['create'] });
    chaos.start();
    await expect(runtime.create(spec('a'), sandbox)).rejects.toMatchObject({ code: 'Unavailable' });
    await expect(runtime.list()).resolves.toEqual([]);
    expect(chaos.injected).toBe(1);
    chaos.stop();
    await expect(runtime.create(spec('a'), sandbox)).resolves.toMatchObject({ name: 'a' });
    expect(chaos.injected).toBe(1);
  });
});
