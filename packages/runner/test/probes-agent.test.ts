import { describe, expect, it } from '@jest/globals';
import { checkedManifest } from '@kubelet-ts/conformance';
import { Labels, type ContainerManifest, type ExecResult } from '@kubelet-ts/core';
import { MemoryRuntime } from '@kubelet-ts/runtime-memory';
import { agentFixture } from './agent-fixture.js';
import { ScriptedSource, podListOf, settle } from './helpers.js';

const ok: ExecResult = { exitCode: 0, output: '' };
const fail: ExecResult = { exitCode: 1, output: 'no' };

describe('the agent with startup, readiness and liveness probes (in-memory runtime, virtual clock)', () => {
  const f = agentFixture();

  async function agent(manifests: ContainerManifest[]) {
    const k = f.kubelet([new ScriptedSource('a', { initial: manifests })]);
    await k.start();
    await settle();
    return k;
  }
  const runningOf = (podId: string) => f.of(podId).find((c) => c.state === 'running');
  async function statusOf(k: Awaited<ReturnType<typeof agent>>) {
    const [item] = (await podListOf(k)).items;
    const conditions = item!.status.conditions;
    const [container] = item!.status.containerStatuses;
    return { phase: item!.status.phase, ready: conditions.find((c) => c.type === 'Ready')!.status, container: container! };
  }

  it('goes through startup → ready → not ready (no restart) → liveness failure → kill, and /pods says so at each step', async () => {
    const timing = { initialDelaySeconds: 0, periodSeconds: 2 };
    const m = checkedManifest({
      id: 'web',
      containers: [
        {
          name: 'app',
          image: 'app:1',
          startupProbe: { ...timing, exec: { command: ['started'] }, failureThreshold: 10 },
          readinessProbe: { ...timing, exec: { command: ['ready'] }, failureThreshold: 2 },
          livenessProbe: { ...timing, exec: { command: ['live'] }, failureThreshold: 2 },
        },
      ],
    });
    const answers: Record<string, ExecResult> = { started: fail, ready: ok, live: ok };
    const asked: string[] = [];
    const k = await agent([m]);
    const first = runningOf('web')!;
    f.runtime.onExec(first.id, (_c, command) => {
      asked.push(command[0]!);
      return answers[command[0]!]!;
    });

    // Starting: the startup probe fails; liveness and readiness wait; the container is neither started nor ready.
    await f.clock.advance(4_000);
    await settle();
    expect(asked).toEqual(['started', 'started', 'started']); // at 0, 2 and 4 s
    expect(await statusOf(k)).toMatchObject({
      phase: 'Running',
      ready: 'False',
      container: { started: false, ready: false, state: { running: {} } },
    });

    // Started: the other two begin; readiness passes at once.
    answers['started'] = ok;
    await f.clock.advance(2_000);
    await settle();
    expect(asked.filter((c) => c !== 'started')).toEqual(['live', 'ready']);
    expect(await statusOf(k)).toMatchObject({ ready: 'True', container: { started: true, ready: true } });
    expect(f.events.ofType('ContainerReady', 'web')).toHaveLength(1);

    // Not ready: reported, nothing restarted.
    answers['ready'] = fail;
    await f.clock.advance(10_000);
    await settle();
    expect(await statusOf(k)).toMatchObject({ ready: 'False', container: { started: true, ready: false, restartCount: 0 } });
    expect(f.events.ofType('ContainerNotReady', 'web')).toHaveLength(1);
    expect(runningOf('web')?.id).toBe(first.id);
    expect(f.events.ofType('ContainerKilled')).toEqual([]);

    // Liveness fails twice: the pod's worker kills the container, saying why.
    answers['live'] = fail;
    await f.clock.advance(4_000);
    await settle();
    const [kill, ...more] = f.events.ofType('ContainerKilled', 'web');
    expect(more).toEqual([]);
    expect(kill?.message).toMatch(/^liveness probe failed 2 times: exited with code 1: no; killing it/);
    expect(f.of('web').find((c) => c.id === first.id)?.state).toBe('exited');
    expect(f.runtime.callCount('stop')).toBe(1);
  });

  it('shows a container whose image cannot be pulled as waiting in ErrImagePull with the pull’s error, then in ImagePullBackOff once a pass 10 s after a failure waits on it', async () => {
    f.runtime = new MemoryRuntime({ clock: f.clock, pullable: [] });
    const k = await agent([checkedManifest({ id: 'nopull', containers: [{ name: 'app', image: 'missing:1' }] })]);
    expect(f.events.ofType('ImagePullFailed', 'nopull')).toHaveLength(1);
    const failed = await statusOf(k);
    expect(failed.phase).toBe('Pending');
    expect(failed.container.state).toEqual({
      waiting: { reason: 'ErrImagePull', message: expect.stringMatching(/^NotFound: pull missing:1: /) },
    });
    // A pass a second later is held back by the pull's back-off (10 s), and still says ErrImagePull:
    // the kubelet's pod worker syncs a failed pod again only 10 s later (workerBackOffPeriod).
    await f.clock.advance(1_000);
    await k.sync();
    await settle();
    expect(f.events.ofType('BackOff', 'nopull')).toHaveLength(1);
    expect((await statusOf(k)).container.state).toEqual({
      waiting: { reason: 'ErrImagePull', message: expect.stringMatching(/^NotFound: pull missing:1: /) },
    });
    // At 10 s the back-off is over: the pull is tried again, fails, and backs off 20 s. A pass
    // 10 s into that finds it still backing off: the kubelet's next sync says ImagePullBackOff.
    await f.clock.advance(9_000);
    await k.sync();
    await settle();
    expect(f.events.ofType('ImagePullFailed', 'nopull')).toHaveLength(2);
    await f.clock.advance(10_000);
    await k.sync();
    await settle();
    const { container } = await statusOf(k);
    expect(container.state).toEqual({
      waiting: { reason: 'ImagePullBackOff', message: expect.stringMatching(/^Back-off pulling image "missing:1" until \S+Z: NotFound: /) },
    });
    const [view] = await k.pods();
    expect(view?.containers[0]).toMatchObject({
      state: 'missing',
      waitingReason: 'ImagePullBackOff',
      pullBackOff: { until: expect.any(Number), retried: true },
    });
    expect(f.of('nopull').filter((c) => c.labels[Labels.containerName] === 'app')).toEqual([]);
  });

  it('gives the address ports are published on as hostIP, and the node name as spec.nodeName', async () => {
    const k = f.kubelet(
      [new ScriptedSource('a', { initial: [checkedManifest({ id: 'web', containers: [{ name: 'app', image: 'app:1' }] })] })],
      { probes: { host: '10.9.8.7' } },
    );
    await k.start();
    await settle();
    const [item] = (await podListOf(k)).items;
    expect(item).toMatchObject({ spec: { nodeName: 'node-a' }, status: { hostIP: '10.9.8.7', phase: 'Running' } });
    expect(item!.status['containerStatuses']).toEqual([
      expect.objectContaining({ containerID: expect.stringMatching(/^memory:\/\//), started: true, ready: true }),
    ]);
  });

  it('counts each probe run by type and result, and times it, as /metrics/probes labels them', async () => {
    const m = checkedManifest({
      id: 'web',
      namespace: 'shop',
      containers: [
        {
          name: 'app',
          image: 'app:1',
          readinessProbe: { initialDelaySeconds: 0, periodSeconds: 2, exec: { command: ['ready'] }, failureThreshold: 5 },
          livenessProbe: { initialDelaySeconds: 0, periodSeconds: 2, exec: { command: ['live'] }, failureThreshold: 5 },
        },
      ],
    });
    const k = await agent([m]);
    f.runtime.onExec(runningOf('web')!.id, (_c, command) => (command[0] === 'live' ? ok : fail));
    await f.clock.advance(4_000);
    await settle();
    const { contentType, body } = await k.probeMetrics();
    expect(contentType).toMatch(/^text\/plain; version=0.0.4/);
    const uid = (await podListOf(k)).items[0]!.metadata['uid'] as string;
    /** The value of the sample of `family` with exactly these labels (in any order). */
    const sampleOf = (family: string, labels: Record<string, string>) => {
      const wanted = Object.entries(labels)
        .map(([key, v]) => `${key}="${v}"`)
        .sort()
        .join(',');
      const line = body.split('\n').find(
        (l) =>
          l.startsWith(`${family}{`) &&
          l
            .slice(family.length + 1, l.lastIndexOf('}'))
            .split(',')
            .sort()
            .join(',') === wanted,
      );
      return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
    };
    const where = { container: 'app', pod: 'web', namespace: 'shop' };
    // At 0, 2 and 4 s each.
    expect(sampleOf('prober_probe_total', { probe_type: 'Liveness', result: 'successful', ...where, pod_uid: uid })).toBe(3);
    expect(sampleOf('prober_probe_total', { probe_type: 'Readiness', result: 'failed', ...where, pod_uid: uid })).toBe(3);
    expect(sampleOf('prober_probe_duration_seconds_count', { probe_type: 'Liveness', ...where })).toBe(3);
    expect(body).not.toContain('result="unknown"');
  });
});
