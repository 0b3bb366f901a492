import { describe, expect, it } from '@jest/globals';
import { ManualClock } from '@kubelet-ts/conformance';
import { Labels, buildContainerSpec, buildSandboxSpec, type ContainerManifest, type PlanAction } from '@kubelet-ts/core';
import { MemoryRuntime } from '@kubelet-ts/runtime-memory';
import { PlanExecutor } from '../src/executor.js';
import { pod, RecordingEventSink } from './helpers.js';

describe('the executor puts every container in its pod sandbox', () => {
  const web = pod('web');
  const create = (m: ContainerManifest, sandbox?: string): PlanAction => ({
    type: 'create',
    podId: m.id,
    container: 'web',
    reason: 'new',
    pullPolicy: 'IfNotPresent',
    spec: buildContainerSpec(m, m.containers[0]!, { node: 'node-a', source: 'a' }),
    ...(sandbox === undefined ? {} : { sandbox }),
  });
  const setup = () => {
    const clock = new ManualClock(1_000_000);
    const runtime = new MemoryRuntime({ clock, images: ['nginx:1'] });
    const events = new RecordingEventSink();
    return { runtime, events, executor: new PlanExecutor({ runtime, events, clock }) };
  };

  it("creates in the ready sandbox the plan names, or in the one the pod's run-sandbox step made", async () => {
    const { runtime, executor } = setup();
    const ready = await runtime.runSandbox(buildSandboxSpec(web, { node: 'node-a', source: 'a' }));
    expect(await executor.executePod({ podId: 'web', actions: [create(web, ready.id)] })).toEqual({ actions: 1, failures: 0 });
    const other = pod('other');
    const run: PlanAction = {
      type: 'run-sandbox',
      podId: 'other',
      container: 'POD',
      reason: 'new',
      spec: buildSandboxSpec(other, { node: 'node-a', source: 'a' }),
    };
    expect(await executor.executePod({ podId: 'other', actions: [run, create(other)] })).toEqual({ actions: 2, failures: 0 });
    const made = runtime.sandboxSnapshot().find((s) => s.labels[Labels.sandbox] === 'other')!;
    expect(runtime.snapshot().map((c) => runtime.sandboxOf(c.id))).toEqual([ready.id, made.id]);
  });

  it('refuses a create the plan gives no sandbox (none ready, no run-sandbox step): Internal, and nothing made', async () => {
    const { runtime, events, executor } = setup();
    expect(await executor.executePod({ podId: 'web', actions: [create(web)] })).toEqual({ actions: 1, failures: 1 });
    expect(events.ofType('ContainerFailed', 'web')).toEqual([
      expect.objectContaining({ reason: 'Internal', message: expect.stringContaining('no sandbox') }),
    ]);
    expect(runtime.snapshot()).toEqual([]);
    expect(runtime.callCount('create')).toBe(0);
  });
});
