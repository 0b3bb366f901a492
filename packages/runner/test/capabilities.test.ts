import { describe, expect, it } from '@jest/globals';
import { CAPABILITIES, type ContainerRuntime } from '@kubelet-ts/core';
import { GuardedRuntime } from '@kubelet-ts/conformance';
import { LostReplies, MemoryRuntime, SeededRandom } from '@kubelet-ts/runtime-memory';
import { KubeletMetrics } from '../src/metrics.js';
import { agentFixture } from './agent-fixture.js';
import { pod, settle, ScriptedSource } from './helpers.js';

const HOUR = 3_600_000;

/** Every decorator of a runtime the agent and its tests build; each must keep every power (issue 21). */
const WRAPPERS: ReadonlyArray<readonly [string, (inner: ContainerRuntime) => ContainerRuntime]> = [
  ["the agent's metrics", (inner) => new KubeletMetrics(async () => []).instrument(inner)],
  ['LostReplies', (inner) => new LostReplies(inner, new SeededRandom(1), 0.5).runtime],
  ['GuardedRuntime', (inner) => new GuardedRuntime(inner).runtime],
];

describe('declared capabilities', () => {
  const f = agentFixture();

  it.each(WRAPPERS)('%s keeps every capability of the runtime it wraps', (_name, wrap) => {
    const memory = new MemoryRuntime();
    expect(Object.keys(memory.capabilities).sort()).toEqual([...CAPABILITIES].sort());
    expect(Object.keys(wrap(memory).capabilities).sort()).toEqual([...CAPABILITIES].sort());
    // …and declares none the runtime lacks.
    expect(wrap({ ...wrap(memory), capabilities: {} }).capabilities).toEqual({});
  });

  it.each(WRAPPERS)('%s passes image calls on to the image service of the runtime it wraps', async (_name, wrap) => {
    const memory = new MemoryRuntime({ pullable: ['app:1'] });
    const wrapped = wrap(memory);
    await expect(wrapped.images.hasImage('app:1')).resolves.toBe(false);
    await wrapped.images.pull('app:1');
    await expect(wrapped.images.hasImage('app:1')).resolves.toBe(true);
    expect(memory.calls.map((c) => [c.op, c.target])).toEqual([
      ['hasImage', 'app:1'],
      ['pull', 'app:1'],
      ['hasImage', 'app:1'],
    ]);
  });

  it('reacts to runtime events through wrappers of wrappers (the chaos suite runs so)', async () => {
    const lossy = new LostReplies(new GuardedRuntime(f.runtime).runtime, new SeededRandom(1), 0.5);
    const k = f.kubelet([new ScriptedSource('a', { initial: [pod('web')] })], { runtime: lossy.runtime, syncFrequencyMs: HOUR });
    await k.start();
    await settle();
    const [first] = f.of('web').filter((c) => c.state === 'running');
    await f.clock.advance(1_000);
    const pass = f.nextPass(k);
    f.runtime.exit(first!.id, 1);
    expect(await pass).toMatchObject({ pods: ['web'], actions: 1, startedAt: 1_001_000 });
    expect(f.of('web').filter((c) => c.state === 'running')).toHaveLength(1);
    expect((await k.metrics()).body).toMatch(/kubelet_ts_runtime_events_total\{type="exited"\} 1/);
  });

  it('serves figures through its own metrics wrapper, and times them', async () => {
    const k = f.kubelet([new ScriptedSource('a', { initial: [pod('web')] })]);
    await k.start();
    await settle();
    f.runtime.setStats(f.one('web').id, { cpuNs: 7, memoryBytes: 4096 });
    await expect(k.stats('web/web')).resolves.toMatchObject({ cpu: { usageNanoseconds: 7 }, memory: { usageBytes: 4096 } });
    expect((await k.metrics()).body).toMatch(/kubelet_ts_runtime_call_duration_seconds_count\{operation="stats"\} 1/);
  });

  it('refuses a runtime that declares a power it does not have, or declares nothing', () => {
    const memory = new MemoryRuntime();
    const hollow = { ...new KubeletMetrics(async () => []).instrument(memory), capabilities: { events: {} as never } };
    expect(() => f.kubelet([], { runtime: hollow })).toThrow(
      'the memory runtime declares the events capability, but capabilities.events has no events() method',
    );
    const undeclared = { ...new KubeletMetrics(async () => []).instrument(memory), capabilities: undefined as never };
    expect(() => f.kubelet([], { runtime: undeclared })).toThrow(
      'the memory runtime declares no capabilities: give it `capabilities: {}` (or the powers it has)',
    );
  });
});
