import { describe, expect, it } from '@jest/globals';
import { validateManifest, type ContainerManifest, type ContainerView, type PodView, type RestartPolicy } from '@kubelet-ts/core';
import { podPhase, renderPodList, rfc3339 } from '../src/pod-list.js';

const T = Date.UTC(2026, 11, 3, 10, 0, 0);
const OPTIONS = { nodeName: 'node-1', runtime: 'docker', hostIP: '192.0.2.10' };

function checked(raw: Record<string, unknown>): ContainerManifest {
  const result = validateManifest({ version: 'v1beta1', ...raw }, { allowHostNetwork: true });
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return result.manifest;
}

const running = (name: string, extra: Partial<ContainerView> = {}): ContainerView => ({
  name,
  image: 'app:1',
  state: 'running',
  id: `${name}-2`,
  startedAt: T + 5_000,
  restartCount: 0,
  started: true,
  ready: true,
  ...extra,
});
const exited = (name: string, exitCode: number, extra: Partial<ContainerView> = {}): ContainerView => ({
  name,
  image: 'app:1',
  state: 'exited',
  id: `${name}-1`,
  exitCode,
  startedAt: T,
  finishedAt: T + 3_000,
  restartCount: 0,
  started: false,
  ready: false,
  ...extra,
});
const missing = (name: string, extra: Partial<ContainerView> = {}): ContainerView => ({
  name,
  image: 'app:1',
  state: 'missing',
  restartCount: 0,
  started: false,
  ready: false,
  waitingReason: 'ContainerCreating',
  ...extra,
});

function render(view: Partial<PodView> & { containers: readonly ContainerView[] }, raw: Record<string, unknown> = {}) {
  const manifest = checked({ id: 'web', containers: view.containers.map((c) => ({ name: c.name, image: 'app:1' })), ...raw });
  const list = renderPodList([{ view: { id: manifest.id, source: 'file', ...view }, manifest }], OPTIONS);
  return list.items[0]!;
}

const statusOf = (item: ReturnType<typeof render>, name: string) => item.status.containerStatuses.find((s) => s.name === name);
const condition = (item: ReturnType<typeof render>, type: string) => item.status.conditions.find((c) => c.type === type);

describe('podPhase (the kubelet getPhase)', () => {
  const cases: Array<[string, ContainerView[], RestartPolicy, string]> = [
    ['nothing made yet', [missing('a')], 'Always', 'Pending'],
    ['one running, one still being created', [running('a'), missing('b')], 'Always', 'Pending'],
    ['all running', [running('a'), running('b')], 'Never', 'Running'],
    ['one running, one ended', [running('a'), exited('b', 1)], 'Never', 'Running'],
    ['all ended, Always restarts them', [exited('a', 0)], 'Always', 'Running'],
    ['all ended with 0', [exited('a', 0), exited('b', 0)], 'Never', 'Succeeded'],
    ['all ended with 0 under OnFailure', [exited('a', 0)], 'OnFailure', 'Succeeded'],
    ['one ended with an error, Never', [exited('a', 0), exited('b', 2)], 'Never', 'Failed'],
    ['one ended with an error, OnFailure restarts it', [exited('a', 2)], 'OnFailure', 'Running'],
    [
      'waiting for a restart after an earlier run ended counts as ended',
      [missing('a', { state: 'created', lastRun: { id: 'a-0', exitCode: 1 } })],
      'Always',
      'Running',
    ],
  ];
  it.each(cases)('%s', (_name, containers, policy, phase) => {
    expect(podPhase(containers, policy)).toBe(phase);
  });
});

describe('renderPodList', () => {
  it('is a v1 PodList; metadata and spec are toV1Pod’s, with the node, the namespace, a stable uid and the source annotations', () => {
    const manifest = checked({ id: 'web', containers: [{ name: 'app', image: 'app:1' }] });
    const view: PodView = { id: 'web', source: 'file:/etc/kubelet', containers: [running('app')] };
    const list = renderPodList([{ view, manifest }], OPTIONS);
    expect(list).toMatchObject({ kind: 'PodList', apiVersion: 'v1', metadata: {} });
    const [item] = list.items;
    expect(item).toMatchObject({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web', namespace: 'default' },
      spec: { nodeName: 'node-1', containers: [{ name: 'app', image: 'app:1' }] },
    });
    expect(item!.metadata['annotations']).toEqual({
      'kubernetes.io/config.source': 'file',
      'kubernetes.io/config.hash': expect.stringMatching(/^[0-9a-f]{32}$/),
      'kubelet-ts.io/source': 'file:/etc/kubelet',
    });
    expect(item!.metadata['uid']).toMatch(/^[0-9a-f]{32}$/);
    // The same pod from the same source keeps its uid; another source or node gives another.
    const again = renderPodList([{ view, manifest }], OPTIONS).items[0]!;
    expect(again.metadata['uid']).toBe(item!.metadata['uid']);
    expect(renderPodList([{ view: { ...view, source: 'http' }, manifest }], OPTIONS).items[0]!.metadata['uid']).not.toBe(
      item!.metadata['uid'],
    );
    expect(renderPodList([{ view, manifest }], { ...OPTIONS, nodeName: 'node-2' }).items[0]!.metadata['uid']).not.toBe(
      item!.metadata['uid'],
    );
    expect(item!.status).toMatchObject({ phase: 'Running', hostIP: '192.0.2.10', startTime: '2026-12-03T10:00:05Z' });
    // A view without the sandbox's address (a runtime that lists none) shows no podIP; one with it shows it.
    expect(item!.status['podIP']).toBeUndefined();
    const addressed = renderPodList([{ view: { ...view, podIP: '10.88.0.7' }, manifest }], OPTIONS).items[0]!;
    expect(addressed.status).toMatchObject({ podIP: '10.88.0.7', podIPs: [{ ip: '10.88.0.7' }] });
  });

  it('keeps a given uuid as uid, the v1 namespace, labels and annotations, and maps each source to the kubelet’s config.source', () => {
    const item = render(
      { containers: [running('app')], source: 'server' },
      { uuid: '2f1d1a7e-0000-4000-8000-000000000001', namespace: 'kube-system', labels: { tier: 'node' }, annotations: { owner: 'ops' } },
    );
    expect(item.metadata).toMatchObject({
      uid: '2f1d1a7e-0000-4000-8000-000000000001',
      namespace: 'kube-system',
      labels: { tier: 'node' },
    });
    expect(item.metadata['annotations']).toMatchObject({
      owner: 'ops',
      'kubernetes.io/config.source': 'http',
      'kubelet-ts.io/source': 'server',
    });
    for (const [source, kind] of [
      ['http', 'http'],
      ['etcd', 'etcd'],
      ['custom', 'custom'],
    ]) {
      expect(
        (render({ containers: [running('app')], source: source! }).metadata['annotations'] as Record<string, string>)[
          'kubernetes.io/config.source'
        ],
      ).toBe(kind);
    }
  });

  it('gives a hostNetwork pod the host’s address as podIP', () => {
    const item = render({ containers: [running('app')] }, { hostNetwork: true });
    expect(item.status).toMatchObject({ hostIP: '192.0.2.10', podIP: '192.0.2.10', podIPs: [{ ip: '192.0.2.10' }] });
    expect(item.spec).toMatchObject({ hostNetwork: true });
  });

  it('shows every container state: running, waiting (ContainerCreating, CrashLoopBackOff, ImagePullBackOff) and terminated (Completed, Error), with lastState', () => {
    const item = render(
      {
        containers: [
          running('up', {
            imageRef: 'sha256:0123abcd',
            restartCount: 2,
            lastRun: { id: 'up-1', exitCode: 137, startedAt: T, finishedAt: T + 4_000 },
          }),
          missing('new'),
          exited('crashing', 1, { restartCount: 3, backOff: { until: T + 43_000, delayMs: 40_000 }, waitingReason: 'CrashLoopBackOff' }),
          missing('unpullable', {
            waitingReason: 'ImagePullBackOff',
            pullBackOff: { until: T + 10_000, message: 'NotFound: no such image' },
          }),
          exited('done', 0),
          exited('broken', 2, { lastRun: { id: 'broken-0', exitCode: 2 } }),
        ],
      },
      { restartPolicy: 'Never' },
    );
    expect(statusOf(item, 'up')).toEqual({
      name: 'up',
      image: 'app:1',
      // The engine's name for the image it ran; empty for a container not made yet (the kubelet's).
      imageID: 'sha256:0123abcd',
      containerID: 'docker://up-2',
      restartCount: 2,
      ready: true,
      started: true,
      state: { running: { startedAt: '2026-12-03T10:00:05Z' } },
      lastState: {
        terminated: {
          exitCode: 137,
          reason: 'Error',
          startedAt: '2026-12-03T10:00:00Z',
          finishedAt: '2026-12-03T10:00:04Z',
          containerID: 'docker://up-1',
        },
      },
    });
    expect(statusOf(item, 'new')).toEqual({
      name: 'new',
      image: 'app:1',
      imageID: '',
      restartCount: 0,
      ready: false,
      started: false,
      state: { waiting: { reason: 'ContainerCreating' } },
      lastState: {},
    });
    expect(statusOf(item, 'crashing')).toMatchObject({
      containerID: 'docker://crashing-1',
      restartCount: 3,
      state: {
        waiting: {
          reason: 'CrashLoopBackOff',
          message: 'back-off 40s restarting failed container=crashing pod=web; until 2026-12-03T10:00:43Z',
        },
      },
      lastState: {
        terminated: {
          exitCode: 1,
          reason: 'Error',
          startedAt: '2026-12-03T10:00:00Z',
          finishedAt: '2026-12-03T10:00:03Z',
          containerID: 'docker://crashing-1',
        },
      },
    });
    expect(statusOf(item, 'unpullable')).toMatchObject({
      state: {
        waiting: {
          reason: 'ImagePullBackOff',
          message: 'Back-off pulling image "app:1" until 2026-12-03T10:00:10Z: NotFound: no such image',
        },
      },
      lastState: {},
    });
    expect(statusOf(item, 'done')).toMatchObject({
      state: { terminated: { exitCode: 0, reason: 'Completed', finishedAt: '2026-12-03T10:00:03Z' } },
      lastState: {},
    });
    expect(statusOf(item, 'broken')).toMatchObject({
      state: { terminated: { exitCode: 2, reason: 'Error' } },
      lastState: { terminated: { exitCode: 2, containerID: 'docker://broken-0' } },
    });
    // The back-off is also an annotation, for tools that read metadata only.
    expect(JSON.parse((item.metadata['annotations'] as Record<string, string>)['kubelet-ts.io/back-off']!)).toEqual({
      crashing: { until: '2026-12-03T10:00:43Z', delaySeconds: 40 },
    });
    expect(item.status['phase']).toBe('Pending'); // `new` and `unpullable` wait
  });

  it("shows a container the engine refused to create as CreateContainerError with the engine's words (issue 27)", () => {
    const item = render({
      containers: [
        missing('tiny', {
          waitingReason: 'CreateContainerError',
          refused: { until: T + 10_000, message: 'Minimum memory limit allowed is 6MB' },
        }),
      ],
    });
    expect(statusOf(item, 'tiny')).toMatchObject({
      state: {
        waiting: {
          reason: 'CreateContainerError',
          message: 'Minimum memory limit allowed is 6MB (tried again after 2026-12-03T10:00:10Z)',
        },
      },
      ready: false,
    });
    expect(item.status['phase']).toBe('Pending');
  });

  it('sets Ready and ContainersReady from every container’s ready, naming the unready; Initialized and PodScheduled are True; PodReadyToStartContainers from the sandbox', () => {
    const ready = render({ containers: [running('a'), running('b')], sandboxReady: true });
    expect(ready.status['conditions']).toEqual([
      { type: 'PodReadyToStartContainers', status: 'True' },
      { type: 'Initialized', status: 'True' },
      { type: 'Ready', status: 'True' },
      { type: 'ContainersReady', status: 'True' },
      { type: 'PodScheduled', status: 'True' },
    ]);
    const unready = render({ containers: [running('a'), running('b', { ready: false }), running('c', { started: false, ready: false })] });
    expect(condition(unready, 'Ready')).toEqual({
      type: 'Ready',
      status: 'False',
      reason: 'ContainersNotReady',
      message: 'containers with unready status: [b c]',
    });
    expect(condition(unready, 'ContainersReady')).toMatchObject({ status: 'False', reason: 'ContainersNotReady' });
    // No ready sandbox (none yet, or a dead one): the pod is not ready to start containers.
    expect(condition(unready, 'PodReadyToStartContainers')).toEqual({ type: 'PodReadyToStartContainers', status: 'False' });
    expect(statusOf(unready, 'c')).toMatchObject({ started: false, ready: false, state: { running: {} } });
    const completed = render({ containers: [exited('a', 0)] }, { restartPolicy: 'Never' });
    expect(completed.status['phase']).toBe('Succeeded');
    expect(condition(completed, 'Ready')).toEqual({ type: 'Ready', status: 'False', reason: 'PodCompleted' });
  });

  it('writes times as RFC 3339 in UTC, to the second', () => {
    expect(rfc3339(T + 1_999)).toBe('2026-12-03T10:00:01Z');
  });
});
