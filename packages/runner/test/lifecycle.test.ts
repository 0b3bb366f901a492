import { describe, expect, it } from '@jest/globals';
import { checkedManifest } from '@kubelet-ts/conformance';
import { KubeletError, Labels, type ContainerManifest } from '@kubelet-ts/core';
import { MemoryRuntime } from '@kubelet-ts/runtime-memory';
import type { KubeletOptions } from '../src/kubelet.js';
import type { PassResult } from '../src/sync-loop.js';
import { agentFixture, SYNC_MS } from './agent-fixture.js';
import { ScriptedSource, settle } from './helpers.js';

describe('container lifecycle on the in-memory runtime, with a virtual clock', () => {
  const f = agentFixture();

  async function agent(manifests: ContainerManifest[], options: Partial<KubeletOptions> = {}) {
    const source = new ScriptedSource('a', { initial: manifests });
    const k = f.kubelet([source], options);
    await k.start();
    await settle();
    return { k, source };
  }

  const containers = (podId: string) =>
    f.runtime
      .snapshot()
      .filter((c) => c.labels['io.kubelet-ts.manifest-id'] === podId)
      .sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id));
  const running = (podId: string) => containers(podId).find((c) => c.state === 'running');

  describe('crash back-off', () => {
    it('restarts a first crash at once, then after 10 s, 20 s, 40 s …, keeping only the newest exited one', async () => {
      await agent([checkedManifest({ id: 'crash', containers: [{ name: 'main', image: 'app:1' }] })]);
      const restarts: number[] = [];
      for (const expected of [0, 10_000, 20_000, 40_000]) {
        const crashedAt = f.clock.now();
        f.runtime.exit(running('crash')!.id, 1);
        await settle();
        if (expected > 0) {
          // Nothing before the back-off ends …
          await f.clock.advance(expected - 1);
          expect(running('crash')).toBeUndefined();
          // … and the restart when it does (the pass is woken by the back-off's end).
          await f.clock.advance(1);
          await settle();
        }
        expect(running('crash')).toBeDefined();
        restarts.push(running('crash')!.createdAt - crashedAt);
        // Garbage collection keeps one exited container for inspection.
        await f.clock.advance(SYNC_MS);
        expect(containers('crash').filter((c) => c.state === 'exited')).toHaveLength(1);
      }
      expect(restarts).toEqual([0, 10_000, 20_000, 40_000]);
      // A BackOff event is written once per waiting container, when a pass first finds it waiting.
      const announced = f.events.ofType('BackOff', 'crash').map((e) => Number(e.message.match(/back-off (\d+) s/)?.[1]));
      expect(announced).toEqual([10, 20, 40]);
      expect(f.events.ofType('ContainerRestarted', 'crash')).toHaveLength(4);
    });

    it('shows the restart count, the back-off and the last exit code in pods()', async () => {
      const { k } = await agent([checkedManifest({ id: 'crash', containers: [{ name: 'main', image: 'app:1' }] })]);
      await f.clock.advance(5_000);
      f.runtime.exit(running('crash')!.id, 1);
      await settle(); // a first crash: replaced at once
      await f.clock.advance(5_000);
      f.runtime.exit(running('crash')!.id, 3);
      await settle(); // the second in a row waits 10 s
      const [view] = await k.pods();
      expect(view?.containers[0]).toMatchObject({
        state: 'exited',
        exitCode: 3,
        restartCount: 1,
        backOff: { until: 1_020_000, delayMs: 10_000 },
      });
      await f.clock.advance(10_000);
      await settle();
      const [after] = await k.pods();
      expect(after?.containers[0]).toMatchObject({ state: 'running', exitCode: 3, restartCount: 2 });
      expect(after?.containers[0]?.backOff).toBeUndefined();
    });

    it('leaves a container that completed under OnFailure, and one that failed under Never', async () => {
      await agent([
        checkedManifest({ id: 'job', restartPolicy: 'OnFailure', containers: [{ name: 'main', image: 'app:1' }] }),
        checkedManifest({ id: 'once', restartPolicy: 'Never', containers: [{ name: 'main', image: 'app:1' }] }),
      ]);
      f.runtime.exit(running('job')!.id, 0);
      f.runtime.exit(running('once')!.id, 1);
      await f.clock.advance(10 * SYNC_MS);
      expect(containers('job').map((c) => c.state)).toEqual(['exited']);
      expect(containers('once').map((c) => c.state)).toEqual(['exited']);
      expect(
        f.events
          .ofType('ContainerExited')
          .map((e) => e.reason)
          .sort(),
      ).toEqual(['Completed', 'Error']);
    });
  });

  describe('liveness probes', () => {
    it('restarts a container whose exec probe fails failureThreshold times, saying why', async () => {
      const probe = { exec: { command: ['check'] }, initialDelaySeconds: 5, periodSeconds: 2, failureThreshold: 3 };
      await agent([checkedManifest({ id: 'sick', containers: [{ name: 'main', image: 'app:1', livenessProbe: probe }] })]);
      const first = running('sick')!;
      f.runtime.onExec(first.id, () => ({ exitCode: 1, output: 'unhealthy' }));
      await f.clock.advance(5_000 + 2 * 2_000); // probes at 5 s, 7 s, 9 s
      await settle();
      expect(f.events.ofType('ProbeFailed', 'sick')).toHaveLength(3);
      expect(f.events.ofType('ContainerKilled', 'sick')[0]?.message).toContain('liveness probe failed 3 times');
      expect(containers('sick').find((c) => c.id === first.id)?.state).toBe('exited');
      // The restart policy (Always) takes over, with the crash back-off.
      await f.clock.advance(10_000);
      await settle();
      expect(running('sick')?.id).not.toBe(first.id);
      expect(f.events.ofType('ContainerRestarted', 'sick')).toHaveLength(1);
    });

    it('kills an unhealthy container through its pod worker, never while that worker acts on the pod', async () => {
      const probe = { exec: { command: ['check'] }, initialDelaySeconds: 0, periodSeconds: 1, failureThreshold: 1 };
      const pair = (side: string) =>
        checkedManifest({
          id: 'pair',
          terminationGracePeriodSeconds: 25,
          containers: [
            { name: 'main', image: 'app:1', livenessProbe: probe },
            { name: 'side', image: side },
          ],
        });
      const { source } = await agent([pair('side:1')]);
      const named = (name: string) => containers('pair').find((c) => c.labels[Labels.containerName] === name && c.state === 'running')!;
      const main = named('main');
      const side = named('side');
      // The pod's worker replaces `side`, whose process ignores the stop signal (25 s of grace), and
      // then fails to create the new one: a worker that ends in failure asks for no pass itself.
      f.runtime.hangOnStop(side.id);
      f.runtime.failNext('create', 'Unavailable');
      source.push([pair('side:2')]);
      await settle();
      const busySince = f.clock.now();
      f.runtime.onExec(main.id, () => ({ exitCode: 1, output: 'unhealthy' }));
      await f.clock.advance(2_000);
      await settle();
      expect(f.events.ofType('ProbeFailed', 'pair')).toHaveLength(1);
      // The prober only recorded it: nothing stops `main` while the worker acts on the pod.
      expect(f.runtime.calls.filter((c) => c.op === 'stop' && c.target === main.id)).toEqual([]);
      expect(f.runtime.snapshot().find((c) => c.id === main.id)?.state).toBe('running');
      await f.clock.advance(25_000 - 2_000);
      await settle();
      // The worker is done with the pod; the result waiting for it is planned at once (not at the
      // next period, 5 s later), and the pod's next worker kills `main`.
      const stops = f.runtime.calls.filter((c) => c.op === 'stop' && c.target === main.id);
      expect(stops).toHaveLength(1);
      expect(stops[0]!.time).toBe(busySince + 25_000);
      expect(f.events.ofType('ContainerKilled', 'pair')).toEqual([expect.objectContaining({ container: 'main', reason: 'Liveness' })]);
    });

    it('keeps a container whose probe passes', async () => {
      const probe = { exec: { command: ['check'] }, periodSeconds: 1, failureThreshold: 1 };
      await agent([checkedManifest({ id: 'well', containers: [{ name: 'main', image: 'app:1', livenessProbe: probe }] })]);
      await f.clock.advance(30_000);
      expect(f.runtime.callCount('exec')).toBeGreaterThanOrEqual(25);
      expect(f.events.ofType('ProbeFailed')).toEqual([]);
      expect(containers('well')).toHaveLength(1);
    });
  });

  describe('graceful stop', () => {
    it("gives a container its manifest's grace period before the kill, and stops a pod's containers at once", async () => {
      const { source } = await agent([
        checkedManifest({
          id: 'web',
          terminationGracePeriodSeconds: 5,
          containers: [
            { name: 'a', image: 'app:1' },
            { name: 'b', image: 'app:1' },
          ],
        }),
      ]);
      for (const c of containers('web')) f.runtime.hangOnStop(c.id);
      source.push([]);
      await settle();
      await f.clock.advance(4_999);
      expect(containers('web').map((c) => c.state)).toEqual(['running', 'running']);
      await f.clock.advance(1);
      await settle();
      // Both killed at the end of one grace period: concurrently, not 5 s + 5 s.
      expect(containers('web')).toEqual([]);
      expect(f.events.ofType('ContainerStopped', 'web').map((e) => e.time)).toEqual([1_005_000, 1_005_000]);
    });
  });

  describe('per-pod workers', () => {
    it('does not let a slow pull of one pod delay another pod, and acts on a pod once at a time', async () => {
      f.runtime = new MemoryRuntime({ clock: f.clock, pullable: 'any', pullLatencyMs: 60_000 });
      f.runtime.addImage('fast:1');
      const { k, source } = await agent([checkedManifest({ id: 'slow', containers: [{ name: 'main', image: 'slow:1' }] })]);
      expect(running('slow')).toBeUndefined();
      source.push([
        checkedManifest({ id: 'slow', containers: [{ name: 'main', image: 'slow:1' }] }),
        checkedManifest({ id: 'quick', containers: [{ name: 'main', image: 'fast:1' }] }),
      ]);
      await settle();
      expect(running('quick')).toBeDefined();
      // Periodic passes while the pull goes on neither wait for it nor start a second one.
      const passes: PassResult[] = [];
      k.on('pass', (r) => passes.push(r));
      await f.clock.advance(3 * SYNC_MS);
      expect(passes.length).toBeGreaterThanOrEqual(3);
      expect(f.runtime.callCount('pull')).toBe(1);
      await f.clock.advance(60_000);
      await settle();
      expect(running('slow')).toBeDefined();
      expect(f.runtime.callCount('create')).toBe(2);
    });
  });

  describe('stopping does not hold up starting', () => {
    it('starts a new pod at once while four pods stop with a 75 s grace period (concurrency 2)', async () => {
      const slow = (id: string) =>
        checkedManifest({ id, terminationGracePeriodSeconds: 75, containers: [{ name: 'main', image: 'app:1' }] });
      const { source } = await agent(['a', 'b', 'c', 'd'].map(slow), { concurrency: 2 });
      // PID 1 ignores SIGTERM: each stop takes the whole grace period.
      for (const c of f.runtime.snapshot()) f.runtime.hangOnStop(c.id);
      source.push([]);
      await settle();
      await f.clock.advance(1_000);
      source.push([checkedManifest({ id: 'fresh', containers: [{ name: 'main', image: 'app:1' }] })]);
      await settle();
      expect(running('fresh')).toBeDefined();
      expect(['a', 'b', 'c', 'd'].map((id) => running(id)?.state)).toEqual(['running', 'running', 'running', 'running']);
      await f.clock.advance(74_000);
      await settle();
      expect(['a', 'b', 'c', 'd'].flatMap((id) => containers(id))).toEqual([]);
    });

    it('still starts no more than `concurrency` pods at once', async () => {
      f.runtime = new MemoryRuntime({ clock: f.clock, pullable: 'any', pullLatencyMs: 10_000 });
      await agent(
        ['a', 'b', 'c', 'd', 'e'].map((id) => checkedManifest({ id, containers: [{ name: 'main', image: `img-${id}:1` }] })),
        { concurrency: 2 },
      );
      const pullTimes = () => f.runtime.calls.filter((c) => c.op === 'pull').map((c) => c.time - 1_000_000);
      expect(pullTimes()).toEqual([0, 0]);
      await f.clock.advance(10_000);
      await settle();
      expect(pullTimes()).toEqual([0, 0, 10_000, 10_000]);
      await f.clock.advance(10_000);
      await settle();
      expect(pullTimes()).toEqual([0, 0, 10_000, 10_000, 20_000]);
      await f.clock.advance(10_000); // the last pull ends, so the agent can close
      await settle();
      expect(['a', 'b', 'c', 'd', 'e'].map((id) => running(id)?.state)).toEqual(['running', 'running', 'running', 'running', 'running']);
    });
  });

  describe('a pod the engine refuses to start', () => {
    it('is created again only after a back-off (10 s, 20 s, …), with an event, not on every pass', async () => {
      f.runtime.setFault('start', (call) =>
        containers('clash').some((c) => c.id === call.target) ? new KubeletError('Conflict', 'port 10250 is already allocated') : undefined,
      );
      const { k } = await agent(
        [
          checkedManifest({ id: 'clash', containers: [{ name: 'main', image: 'app:1' }] }),
          checkedManifest({ id: 'fine', containers: [{ name: 'main', image: 'app:1' }] }),
        ],
        {
          syncFrequencyMs: 1_000,
        },
      );
      expect(running('fine')).toBeDefined();
      for (let i = 0; i < 40; i++) await f.clock.advance(1_000);
      const creates = f.runtime.calls
        .filter((c) => c.op === 'create' && c.target?.startsWith('main--clash'))
        .map((c) => c.time - 1_000_000);
      expect(creates).toEqual([0, 10_000, 30_000]);
      expect(f.events.ofType('BackOff', 'clash').map((e) => e.reason)).toEqual([
        'RunContainerError',
        'RunContainerError',
        'RunContainerError',
      ]);
      expect(f.events.ofType('ContainerFailed', 'clash')).toHaveLength(3);
      // What made it fail is gone: the next try after the back-off starts it, and the count resets.
      f.runtime.setFault('start', undefined);
      await f.clock.advance(40_000);
      await k.sync();
      expect(running('clash')).toBeDefined();
    });
  });

  describe('image pull policy', () => {
    it('pulls an image that is present for Always and :latest, not for IfNotPresent', async () => {
      f.runtime.addImage('app:latest');
      f.runtime.addImage('app:1');
      await agent([
        checkedManifest({ id: 'latest', containers: [{ name: 'main', image: 'app:latest' }] }),
        checkedManifest({ id: 'pinned', containers: [{ name: 'main', image: 'app:1' }] }),
        checkedManifest({ id: 'always', containers: [{ name: 'main', image: 'app:1', imagePullPolicy: 'Always' }] }),
      ]);
      expect(
        f.runtime.calls
          .filter((c) => c.op === 'pull')
          .map((c) => c.target)
          .sort(),
      ).toEqual(['app:1', 'app:latest']);
      expect(['latest', 'pinned', 'always'].every((p) => running(p) !== undefined)).toBe(true);
    });

    it('never pulls for Never, and says why the container cannot start', async () => {
      await agent([checkedManifest({ id: 'never', containers: [{ name: 'main', image: 'absent:1', imagePullPolicy: 'Never' }] })]);
      expect(f.runtime.callCount('pull')).toBe(0);
      expect(f.events.ofType('ImagePullFailed', 'never')[0]).toMatchObject({ reason: 'ErrImageNeverPull' });
    });

    it('backs off a failing pull, 10 s doubling, without holding up other pods', async () => {
      f.runtime = new MemoryRuntime({ clock: f.clock, pullable: ['good:1'] });
      await agent([
        checkedManifest({ id: 'bad', containers: [{ name: 'main', image: 'missing:1' }] }),
        checkedManifest({ id: 'good', containers: [{ name: 'main', image: 'good:1' }] }),
      ]);
      expect(running('good')).toBeDefined();
      const pullTimes = () => f.runtime.calls.filter((c) => c.op === 'pull' && c.target === 'missing:1').map((c) => c.time - 1_000_000);
      await f.clock.advance(60_000);
      // Passes run every 10 s; pulls only after 10 s, then 20 s, then 40 s.
      expect(pullTimes()).toEqual([0, 10_000, 30_000]);
      expect(f.events.ofType('BackOff', 'bad').every((e) => e.reason === 'ImagePullBackOff')).toBe(true);
    });
  });
});
