import { describe, expect, it } from '@jest/globals';
import type { ContainerManifest } from '@kubelet-ts/core';
import { parseManifests } from '@kubelet-ts/manifest';
import { agentFixture } from './agent-fixture.js';
import { ScriptedSource, settle } from './helpers.js';

/** v1 Pods as a file gives them; `resources` are the container's requests. */
function pods(
  specs: ReadonlyArray<{ name: string; uid?: string; requests?: Record<string, string>; nodeSelector?: Record<string, string> }>,
) {
  const text = specs
    .map(({ name, uid, requests, nodeSelector }) =>
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, uid: uid ?? `uid-${name}` },
        spec: {
          ...(nodeSelector === undefined ? {} : { nodeSelector }),
          containers: [{ name: 'app', image: 'app:1', ...(requests === undefined ? {} : { resources: { requests } }) }],
        },
      }),
    )
    .join('\n---\n');
  const parsed = parseManifests(text, 'pods.yaml', { placementAtAdmission: true });
  expect(parsed.rejected).toEqual([]);
  return parsed.manifests as ContainerManifest[];
}

describe('admission: a pod the node will not run is Failed with the kubelet’s reason, and the others run (issue 42)', () => {
  const f = agentFixture();

  async function started(source: ScriptedSource, options: Parameters<typeof f.kubelet>[1]) {
    const k = f.kubelet([source], options);
    await k.start();
    await settle();
    await k.sync();
    return k;
  }
  const running = () =>
    f
      .ours()
      .filter((c) => c.state === 'running')
      .map((c) => c.labels['io.kubernetes.pod.name'])
      .sort();
  const statusOf = async (k: Awaited<ReturnType<typeof started>>, name: string) =>
    (await k.podStatuses()).find((r) => r.key.name === name)?.status;

  it('refuses the pod beyond --max-pods with OutOfpods, keeps it Failed when room is made, and decides a new uid again', async () => {
    const source = new ScriptedSource('a', { initial: pods([{ name: 'one' }, { name: 'two' }, { name: 'three' }]) });
    const k = await started(source, { allocatable: { pods: 2 } });
    expect(running()).toEqual(['one', 'two']);
    expect(await statusOf(k, 'three')).toMatchObject({
      phase: 'Failed',
      reason: 'OutOfpods',
      message: "Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2",
      containerStatuses: [],
    });
    expect(f.events.events.filter((e) => e.type === 'PodRejected').map((e) => [e.podId, e.reason])).toEqual([['three', 'OutOfpods']]);

    // Room is made: the rejected pod stays Failed (the kubelet never admits it again), and is not announced again.
    source.push(pods([{ name: 'two' }, { name: 'three' }]));
    await settle();
    await k.sync();
    await k.sync();
    expect(running()).toEqual(['two']);
    expect(await statusOf(k, 'three')).toMatchObject({ phase: 'Failed', reason: 'OutOfpods' });
    expect(f.events.events.filter((e) => e.type === 'PodRejected')).toHaveLength(1);

    // Made again with a new uid, it is a new pod: admitted now that it fits.
    source.push(pods([{ name: 'two' }, { name: 'three', uid: 'uid-three-2' }]));
    await settle();
    await k.sync();
    expect(running()).toEqual(['three', 'two']);
    expect(await statusOf(k, 'three')).toMatchObject({ phase: 'Running' });
  });

  it('refuses a pod whose CPU or memory requests do not fit beside those admitted, with the figures, as the kubelet says them', async () => {
    const source = new ScriptedSource('a', {
      initial: pods([
        { name: 'big', requests: { cpu: '600m', memory: '300Mi' } },
        { name: 'cpu', requests: { cpu: '600m' } },
        { name: 'mem', requests: { memory: '800Mi' } },
        { name: 'small', requests: { cpu: '400m', memory: '100Mi' } },
        { name: 'none' },
      ]),
    });
    const k = await started(source, { allocatable: { cpuMillis: 1000, memoryBytes: 1024 * 1024 * 1024 } });
    expect(running()).toEqual(['big', 'none', 'small']);
    expect(await statusOf(k, 'cpu')).toMatchObject({
      phase: 'Failed',
      reason: 'OutOfcpu',
      message: "Pod was rejected: Node didn't have enough resource: cpu, requested: 600, used: 600, capacity: 1000",
    });
    expect(await statusOf(k, 'mem')).toMatchObject({
      phase: 'Failed',
      reason: 'OutOfmemory',
      message: `Pod was rejected: Node didn't have enough resource: memory, requested: ${800 * 1024 * 1024}, used: ${300 * 1024 * 1024}, capacity: ${1024 * 1024 * 1024}`,
    });
    expect(await statusOf(k, 'small')).toMatchObject({ phase: 'Running' });
  });

  it('refuses a pod for another node with NodeAffinity when its source leaves placement to admission; a node with the label runs it', async () => {
    const forSsd = () => pods([{ name: 'picky', nodeSelector: { disk: 'ssd' } }, { name: 'easy' }]);
    const k = await started(new ScriptedSource('a', { initial: forSsd() }), {});
    expect(running()).toEqual(['easy']);
    expect(await statusOf(k, 'picky')).toEqual({
      phase: 'Failed',
      reason: 'NodeAffinity',
      message: "Pod was rejected: Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
      conditions: [],
      qosClass: 'BestEffort',
      containerStatuses: [],
    });
    await k.close();

    const labelled = await started(new ScriptedSource('b', { initial: forSsd() }), { hostname: 'ssd-node', nodeLabels: { disk: 'ssd' } });
    expect(
      f
        .ours('ssd-node')
        .filter((c) => c.state === 'running')
        .map((c) => c.labels['io.kubernetes.pod.name'])
        .sort(),
    ).toEqual(['easy', 'picky']);
    expect(await labelled.podStatuses()).toHaveLength(2);
  });
});
