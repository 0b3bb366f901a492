import { describe, expect, it } from '@jest/globals';
import { Labels, wrapRuntime, type ContainerRuntime } from '@kubelet-ts/core';
import { ManualClock } from '@kubelet-ts/conformance';
import { MemoryRuntime } from '@kubelet-ts/runtime-memory';
import { PodCache } from '../src/pod-cache.js';
import { agentFixture, HOST } from './agent-fixture.js';
import { pod, podListOf, settle, ScriptedSource } from './helpers.js';

const HOUR = 3_600_000;

describe('the pod cache (issue 21)', () => {
  const f = agentFixture();
  /** Lists of the whole host since `from` (a pod's own list names the pod as its target). */
  const hostLists = (from: number) =>
    f.runtime.calls.slice(from).filter((c) => (c.op === 'list' || c.op === 'listSandboxes') && c.target === undefined);

  it('answers 1,000 reads of its pods view, pod list, plan and container names with no runtime list', async () => {
    const k = f.kubelet([new ScriptedSource('a', { initial: [pod('web'), pod('db'), pod('cache')] })], { syncFrequencyMs: HOUR });
    await k.start();
    await k.sync();
    const from = f.runtime.calls.length;
    const lists = f.runtime.callCount('list') + f.runtime.callCount('listSandboxes');
    for (let i = 0; i < 250; i++) {
      const views = await k.pods();
      expect(views.map((v) => [v.id, v.containers[0]?.state])).toEqual([
        ['web', 'running'],
        ['db', 'running'],
        ['cache', 'running'],
      ]);
      expect((await podListOf(k)).items).toHaveLength(3);
      expect((await k.plan()).steps).toEqual([]);
      expect(await k.containerInfo('web/web')).toMatchObject({ state: 'running' });
    }
    expect(f.runtime.callCount('list') + f.runtime.callCount('listSandboxes')).toBe(lists);
    // containerInfo's inspect is the engine's own record, asked for by name: the only calls.
    expect(new Set(f.runtime.calls.slice(from).map((c) => c.op))).toEqual(new Set(['inspect']));
  });

  it('lists only the pod an event names, never the whole host', async () => {
    const k = f.kubelet([new ScriptedSource('a', { initial: [pod('web'), pod('db')] })], { syncFrequencyMs: HOUR });
    await k.start();
    await k.sync();
    const from = f.runtime.calls.length;
    const pass = f.nextPass(k);
    f.runtime.exit(f.one('web').id, 1);
    expect(await pass).toMatchObject({ pods: ['web'], actions: 1 });
    await settle();
    expect(hostLists(from)).toEqual([]);
    const podLists = f.runtime.calls.slice(from).filter((c) => c.op === 'list');
    expect(podLists.length).toBeGreaterThan(0);
    expect(new Set(podLists.map((c) => c.target))).toEqual(new Set(['web']));
    // What the agent shows is what the runtime runs: the replacement, and the crashed one kept.
    const [web] = (await k.pods()).filter((v) => v.id === 'web');
    expect(web?.containers[0]).toMatchObject({ state: 'running', restartCount: 1 });
  });

  it('shows what a worker did as soon as sync() resolves, from the pod it looked at', async () => {
    const source = new ScriptedSource('a', { initial: [pod('web')] });
    const k = f.kubelet([source], { syncFrequencyMs: HOUR });
    await k.start();
    await k.sync();
    source.push([pod('web'), pod('db')]);
    await k.sync();
    expect((await k.pods()).map((v) => [v.id, v.containers[0]?.state])).toEqual([
      ['web', 'running'],
      ['db', 'running'],
    ]);
  });
});

describe('PodCache', () => {
  const clock = new ManualClock(1_000);

  /** A runtime whose whole-host list answers at once but whose reply is held until `release`. */
  function slowRelists(inner: MemoryRuntime): { runtime: ContainerRuntime; hold: () => void; release: () => void } {
    let gate: Promise<void> | undefined;
    let open: () => void = () => {};
    return {
      runtime: wrapRuntime(inner, {
        around: async (operation, args, proceed) => {
          const answer = await proceed();
          const whole = (args[0] as { podId?: string } | undefined)?.podId === undefined;
          if ((operation === 'list' || operation === 'listSandboxes') && whole && gate !== undefined) await gate;
          return answer;
        },
      }),
      hold: () => (gate = new Promise((resolve) => (open = resolve))),
      release: () => {
        gate = undefined;
        open();
      },
    };
  }

  async function running(runtime: MemoryRuntime, podId: string): Promise<string> {
    runtime.addImage('app:1');
    const sandbox = await runtime.runSandbox({
      name: `${podId}-POD`,
      podId,
      hostname: podId,
      ports: [],
      labels: { [Labels.sandbox]: podId, [Labels.node]: HOST },
    });
    const labels = {
      [Labels.manifestId]: podId,
      [Labels.containerName]: 'main',
      [Labels.specHash]: 'v1-0123456789abcdef',
      [Labels.source]: 'a',
      [Labels.node]: HOST,
    };
    const c = await runtime.create({ name: `${podId}-main`, podId, image: 'app:1', env: {}, ports: [], mounts: [], labels }, sandbox.id);
    await runtime.start(c.id);
    return c.id;
  }

  it('keeps what a newer pod list saw over an older relist that answered later', async () => {
    const memory = new MemoryRuntime({ clock });
    const slow = slowRelists(memory);
    const cache = new PodCache({ runtime: slow.runtime, hostname: HOST, clock });
    const a = await running(memory, 'a');
    await running(memory, 'b');
    slow.hold();
    const relist = cache.relist(); // sees a running
    await settle();
    await memory.remove(a, { force: true });
    await cache.refresh(['a']); // sees a gone
    slow.release();
    await relist;
    expect(cache.snapshot().containers.map((c) => c.labels[Labels.manifestId])).toEqual(['b']);
    // The next relist is newer than that pod list: it decides again.
    await running(memory, 'a2');
    await cache.relist();
    expect(
      cache
        .snapshot()
        .containers.map((c) => c.labels[Labels.manifestId])
        .sort(),
    ).toEqual(['a2', 'b']);
  });

  it("asks for an exited container's times once, and forgets them when it is gone", async () => {
    const memory = new MemoryRuntime({ clock });
    // Listing as Docker does: no start and end times, so they must be inspected.
    const docker = {
      ...wrapRuntime(memory, {}),
      list: async () => (await memory.list()).map(({ startedAt: _s, finishedAt: _f, exitCode: _e, ...c }) => c),
    };
    const cache = new PodCache({ runtime: docker, hostname: HOST, clock });
    const id = await running(memory, 'a');
    memory.exit(id, 3);
    for (let i = 0; i < 3; i++) await cache.relist();
    expect(memory.callCount('inspect')).toBe(1);
    expect(cache.snapshot().containers[0]).toMatchObject({ state: 'exited', exitCode: 3, finishedAt: 1_000 });
    await memory.remove(id);
    await cache.relist();
    expect(cache.snapshot().containers).toEqual([]);
    expect(cache.snapshot().updatedAt).toBe(1_000);
  });
});
