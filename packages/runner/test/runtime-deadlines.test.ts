import { describe, expect, it } from '@jest/globals';
import { ManualClock } from '@kubelet-ts/conformance';
import { MemoryRuntime } from '@kubelet-ts/runtime-memory';
import { withDeadlines } from '../src/runtime-deadlines.js';
import { agentFixture } from './agent-fixture.js';
import { pod, settle, ScriptedSource } from './helpers.js';

const HOUR = 3_600_000;
const deadlines = { callMs: 120_000, pullMs: 900_000, graceMarginMs: 60_000 };

describe('runtime call deadlines (issue 27: a frozen engine held every call)', () => {
  it('rejects a call the engine does not answer in time with Timeout, naming it; a prompt one passes', async () => {
    const clock = new ManualClock(0);
    const memory = new MemoryRuntime({ clock });
    const runtime = withDeadlines(memory, clock, deadlines);
    memory.setLatency('list', HOUR);
    const listing = runtime.list();
    const outcome = listing.then(
      () => 'answered',
      (e: { code?: string; message?: string }) => `${e.code}: ${e.message}`,
    );
    await clock.advance(120_000 - 1);
    await settle();
    await clock.advance(1);
    expect(await outcome).toBe('Timeout: list got no answer from the memory runtime within 120 s; the engine may be frozen or overloaded');
    memory.setLatency('list', 10);
    const prompt = runtime.list();
    await clock.advance(10);
    await expect(prompt).resolves.toEqual([]);
    expect(clock.pending).toBe(1); // the frozen list's own latency timer; no deadline left armed
  });

  it("waits out a stop's grace period and an exec's own timeout before its margin, and a pull longer", async () => {
    const clock = new ManualClock(0);
    const memory = new MemoryRuntime({ clock });
    const runtime = withDeadlines(memory, clock, deadlines);
    memory.setLatency('stop', HOUR);
    memory.setLatency('pull', HOUR);
    const settled: string[] = [];
    void runtime.stop('x', 75).catch(() => settled.push('stop'));
    void runtime.images.pull('app:1').catch(() => settled.push('pull'));
    await clock.advance(75_000 + 60_000 - 1);
    expect(settled).toEqual([]);
    await clock.advance(1);
    expect(settled).toEqual(['stop']);
    await clock.advance(900_000 - 135_000);
    expect(settled).toEqual(['stop', 'pull']);
  });

  describe('in the agent', () => {
    const f = agentFixture();

    it('serves its reads at once while the engine is frozen, and reports the pass that timed out', async () => {
      // Every periodic pass lists the host (eventedRelistMs 0): the one timed here must.
      const k = f.kubelet([new ScriptedSource('a', { initial: [pod('web')] })], { syncFrequencyMs: 60_000, eventedRelistMs: 0 });
      await k.start();
      await k.sync();
      f.runtime.setLatency('list', HOUR); // frozen: no list answers any more
      const pass = f.nextPass(k);
      await f.clock.advance(60_000); // the periodic pass lists, and waits
      // Reads answer from the pod cache, not the engine.
      expect((await k.pods()).map((v) => [v.id, v.containers[0]?.state])).toEqual([['web', 'running']]);
      await f.clock.advance(120_000);
      expect((await pass).error).toMatchObject({ code: 'Timeout' });
      expect((await k.pods())[0]?.containers[0]?.state).toBe('running');
      expect((await k.metrics()).body).toMatch(/kubelet_ts_runtime_call_errors_total\{operation="list",code="Timeout"\} 1/);
    });
  });
});
