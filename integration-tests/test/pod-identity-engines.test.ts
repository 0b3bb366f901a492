import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1PodList } from '@kubernetes/client-node';
// Its model (de)serializer, as its API clients read a response (not exported from the index).
import { ObjectSerializer } from '@kubernetes/client-node/dist/serializer.js';
import { AgentProcess, runCli } from './agent-process.js';
import { AGENT_ENGINES } from './agent-engines.js';

/**
 * Pods as a cluster knows them (issue 42), on each real engine through one agent:
 * - a pod deleted and made again under its name, as a Deployment's controller or `kubectl replace
 *   --force` does (the same name, a new uid): the old pod's container and sandbox go, the new
 *   pod's start, and everything the agent makes carries the kubelet's uid, namespace and name labels;
 * - deletion as a state: a pod marked for deletion with a grace of 2 s, whose spec says 30 and
 *   whose container ignores the stop signal, stops within the 2 s (its preStop hook first), is
 *   shown Terminating meanwhile, and the agent says when it is done; a pod that leaves its source
 *   is shown Terminating until its container and sandbox are gone.
 */
describe.each(AGENT_ENGINES)('pod identity and deletion on $name, through the agent', (engine) => {
  const node = `e2e-identity-${engine.name.split(' ')[0]!.toLowerCase()}-${process.pid}`;
  let dir: string;
  let agent: AgentProcess | undefined;
  let url: string;
  let busybox: string;
  let flags: string[];

  const write = (name: string, document: object) => writeFile(join(dir, `${name}.yaml`), JSON.stringify(document));
  const v1Pod = (metadata: Record<string, unknown>, grace: number, container: Record<string, unknown>) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata,
    spec: { terminationGracePeriodSeconds: grace, containers: [{ name: 'main', image: busybox, ...container }] },
  });
  /** `web` of namespace `shop`, with the uid given: it stops at once on SIGTERM. */
  const web = (uid: string) =>
    v1Pod({ name: 'web', namespace: 'shop', uid }, 2, { command: ['sh', '-c', "trap 'exit 0' TERM; while true; do sleep 0.2; done"] });
  /** A pod deaf to SIGTERM (only the end of the grace stops it), with a preStop hook. */
  const deaf = (name: string, metadata: Record<string, unknown> = {}, grace = 30) =>
    v1Pod({ name, uid: `uid-${name}`, ...metadata }, grace, {
      command: ['sh', '-c', "trap '' TERM; while true; do sleep 0.2; done"],
      lifecycle: { preStop: { exec: { command: ['sh', '-c', 'echo prestop > /proc/1/fd/1'] } } },
    });
  type Listed = {
    items: Array<{
      metadata: { name: string; uid: string; deletionTimestamp?: string; deletionGracePeriodSeconds?: number };
      status: {
        phase: string;
        conditions: Array<{ type: string; status: string; lastTransitionTime?: string }>;
        containerStatuses?: Array<{ containerID?: string }>;
      };
    }>;
  };
  const listed = async (name: string) =>
    ((await (await fetch(`${url}/pods`)).json()) as Listed).items.find((p) => p.metadata.name === name);
  const made = async (name: string) => (await engine.labelled(node)).filter((m) => m.labels['io.kubernetes.pod.name'] === name);
  const at = (type: string, podId: string) => agent!.events(type, podId).map((l) => Number(l['time']));

  beforeAll(async () => {
    const prepared = await engine.prepare();
    busybox = prepared.busybox;
    dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-e2e-identity-'));
    await write('web', web('11111111-1111-4111-8111-111111111111'));
    await write('marked', deaf('marked'));
    await write('leaving', deaf('leaving', {}, 3));
    await write('job', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'job', uid: 'uid-job' },
      spec: { restartPolicy: 'Never', containers: [{ name: 'main', image: busybox, command: ['sh', '-c', 'sleep 1; exit 0'] }] },
    });
    // Two pods whose names joined with their namespaces read the same (`a.b`): two pods on the host.
    const sleeper = { command: ['sh', '-c', "trap 'exit 0' TERM; while true; do sleep 0.2; done"] };
    await write('a-b-in-default', v1Pod({ name: 'a.b', uid: 'uid-ab' }, 2, sleeper));
    await write('a-in-b', v1Pod({ name: 'a', namespace: 'b', uid: 'uid-a' }, 2, sleeper));
    // A pod asking for 200 CPUs: the node's admission refuses it (OutOfcpu).
    await write('greedy', v1Pod({ name: 'greedy', uid: 'uid-greedy' }, 2, { ...sleeper, resources: { requests: { cpu: '200' } } }));
    flags = [...prepared.flags, '--config', dir, '--hostname-override', node, '--sync-frequency', '1s', '--file-check-frequency', '1s'];
    agent = new AgentProcess(flags);
    url = await agent.serverUrl();
    await agent.until(
      () =>
        ['web.shop', 'marked', 'leaving', 'job', 'a.b.default', 'a.b'].every((id) => agent!.events('ContainerStarted', id).length === 1),
      'the six pods started',
      60_000,
    );
  }, 120_000);

  afterAll(async () => {
    await agent?.stop();
    await engine.cleanUp(node);
    await rm(dir, { recursive: true, force: true });
  });

  it('labels the pod’s sandbox and container with io.kubernetes.pod.uid, .namespace and .name', async () => {
    const ours = await made('web');
    expect(ours.map((m) => m.kind).sort()).toEqual(['container', 'sandbox']);
    for (const m of ours)
      expect(m.labels).toMatchObject({
        'io.kubernetes.pod.uid': '11111111-1111-4111-8111-111111111111',
        'io.kubernetes.pod.namespace': 'shop',
        'io.kubernetes.pod.name': 'web',
      });
  });

  it('runs a.b in default and a in b as two pods: a sandbox and a container each, labelled and listed apart', async () => {
    const labelled = (await engine.labelled(node)).filter((m) => ['uid-ab', 'uid-a'].includes(m.labels['io.kubernetes.pod.uid']!));
    expect(
      labelled
        .map((m) => [
          m.kind,
          m.labels['io.kubernetes.pod.namespace'],
          m.labels['io.kubernetes.pod.name'],
          m.labels['io.kubernetes.pod.uid'],
        ])
        .sort(),
    ).toEqual([
      ['container', 'b', 'a', 'uid-a'],
      ['container', 'default', 'a.b', 'uid-ab'],
      ['sandbox', 'b', 'a', 'uid-a'],
      ['sandbox', 'default', 'a.b', 'uid-ab'],
    ]);
    const items = (
      (await (await fetch(`${url}/pods`)).json()) as { items: Array<{ metadata: Record<string, string>; status: { phase: string } }> }
    ).items;
    const two = items.filter((p) => ['uid-ab', 'uid-a'].includes(p.metadata['uid']!));
    expect(two.map((p) => [p.metadata['namespace'], p.metadata['name'], p.status.phase]).sort()).toEqual([
      ['b', 'a', 'Running'],
      ['default', 'a.b', 'Running'],
    ]);
    expect(agent!.events('ManifestConflict')).toEqual([]);
  });

  it('shows a pod beyond the node’s allocatable Failed with OutOfcpu, as the kubelet’s admission writes it, and makes nothing for it', async () => {
    await agent!.until(() => agent!.events('PodRejected', 'greedy').length === 1, 'the rejection', 10_000);
    expect(agent!.events('PodRejected', 'greedy')[0]).toMatchObject({ reason: 'OutOfcpu' });
    const list = ObjectSerializer.deserialize(await (await fetch(`${url}/pods`)).json(), 'V1PodList') as V1PodList;
    const greedy = list.items.find((p) => p.metadata?.name === 'greedy');
    expect(greedy?.status).toMatchObject({ phase: 'Failed', reason: 'OutOfcpu', qosClass: 'Burstable' });
    expect(greedy?.status?.message).toMatch(
      /^Pod was rejected: Node didn't have enough resource: cpu, requested: 200000, used: \d+, capacity: \d+$/,
    );
    expect(await made('greedy')).toEqual([]);
    // The others run beside it, each container with the engine's name for the image it ran.
    const ab = list.items.find((p) => p.metadata?.name === 'a.b');
    expect(ab?.status?.phase).toBe('Running');
    expect(ab?.status?.containerStatuses?.[0]?.imageID).toMatch(/sha256:[0-9a-f]{64}$/);
  });

  it('replaces a pod made again with a new uid: the old one stops, its container and sandbox go, the new one starts', async () => {
    const before = await listed('web');
    const oldContainer = before!.status.containerStatuses![0]!.containerID!.replace(/^[a-z]+:\/\//, '');
    const oldIds = (await made('web')).map((m) => m.id);
    await write('web', web('22222222-2222-4222-8222-222222222222'));
    await agent!.until(() => agent!.events('ContainerStarted', 'web.shop').length === 2, 'the new pod started', 60_000);
    expect(agent!.events('ContainerRemoved', 'web.shop').map((l) => l.msg)).toEqual([`removed ${oldContainer} (pod-replaced)`]);
    expect(agent!.events('SandboxRemoved', 'web.shop').map((l) => l.msg)).toEqual([
      expect.stringContaining('(pod-replaced; and the pod volumes)'),
    ]);
    const now = await made('web');
    expect(now.map((m) => m.kind).sort()).toEqual(['container', 'sandbox']);
    expect(now.some((m) => oldIds.includes(m.id))).toBe(false);
    for (const m of now) expect(m.labels['io.kubernetes.pod.uid']).toBe('22222222-2222-4222-8222-222222222222');
    expect((await listed('web'))!.metadata.uid).toBe('22222222-2222-4222-8222-222222222222');
  });

  it('stops a pod marked for deletion with a grace of 2 s within the 2 s, preStop first, shown Terminating until it says it is done', async () => {
    const deletionTimestamp = new Date().toISOString();
    await write('marked', deaf('marked', { deletionTimestamp, deletionGracePeriodSeconds: 2 }));
    await agent!.until(() => agent!.events('ContainerKilled', 'marked').length === 1, 'the stop to begin', 10_000);
    expect((await listed('marked'))?.metadata).toMatchObject({ deletionTimestamp, deletionGracePeriodSeconds: 2 });
    // Read by a client that is not ours: @kubernetes/client-node's own model of a PodList.
    const list = ObjectSerializer.deserialize(await (await fetch(`${url}/pods`)).json(), 'V1PodList') as V1PodList;
    const pod = list.items.find((p) => p.metadata?.name === 'marked')!;
    expect(pod.metadata?.deletionTimestamp).toEqual(new Date(deletionTimestamp));
    expect(pod.metadata?.deletionGracePeriodSeconds).toBe(2);
    expect(pod.status?.qosClass).toBe('BestEffort');
    expect(pod.status?.conditions?.map((c) => [c.type, c.lastTransitionTime instanceof Date])).toEqual([
      ['PodReadyToStartContainers', true],
      ['Initialized', true],
      ['Ready', true],
      ['ContainersReady', true],
      ['PodScheduled', true],
    ]);
    expect((await runCli(['get', 'pods', '--server', url])).stdout).toMatch(/\nmarked\s+\S+\s+Terminating\s/);
    await agent!.until(() => agent!.events('PodTerminated', 'marked').length === 1, 'the pod to be said terminated', 10_000);
    const [killed] = at('ContainerKilled', 'marked');
    const [terminated] = at('PodTerminated', 'marked');
    // Killed at the end of the deletion's 2 s (not the spec's 30), and said at once: the preStop hook
    // takes from the 2 s, but the stop keeps at least 2 s after it, as the kubelet's does.
    expect(terminated! - killed!).toBeGreaterThanOrEqual(1_900);
    expect(terminated! - killed!).toBeLessThan(4_000);
    // Nothing starts again while it stays marked in its source.
    await new Promise((r) => setTimeout(r, 2_500));
    expect(agent!.events('ContainerStarted', 'marked')).toHaveLength(1);
    expect(agent!.events('PodTerminated', 'marked')).toHaveLength(1);
  }, 30_000);

  it('shows a pod that left its source as Terminating until its container and sandbox are gone, then drops it', async () => {
    await rm(join(dir, 'leaving.yaml'));
    // Marked as the API server marks a pod deleted with its grace: the spec's 3 s.
    let shown = await listed('leaving');
    for (let i = 0; i < 40 && shown?.metadata.deletionTimestamp === undefined; i++) {
      await new Promise((r) => setTimeout(r, 100));
      shown = await listed('leaving');
    }
    expect(shown?.metadata).toMatchObject({ deletionTimestamp: expect.any(String), deletionGracePeriodSeconds: 3 });
    expect((await runCli(['get', 'pods', '--server', url])).stdout).toMatch(/\nleaving\s+\S+\s+Terminating\s/);
    await agent!.until(() => agent!.events('PodTerminated', 'leaving').length === 1, 'the pod to be said terminated', 15_000);
    expect(agent!.events('SandboxRemoved', 'leaving')).toHaveLength(1);
    expect(await listed('leaving')).toBeUndefined();
    expect(await made('leaving')).toEqual([]);
  }, 30_000);

  it('keeps a Succeeded pod Succeeded across an agent restart, restarting nothing', async () => {
    let done = await listed('job');
    for (let i = 0; i < 50 && done?.status.phase !== 'Succeeded'; i++) {
      await new Promise((r) => setTimeout(r, 200));
      done = await listed('job');
    }
    expect(done?.status.phase).toBe('Succeeded');
    const container = done!.status.containerStatuses![0]!.containerID;
    await agent!.stop();
    agent = new AgentProcess(flags);
    url = await agent.serverUrl();
    // Three sync periods after it listens: every pass that could restart the job has run.
    await new Promise((r) => setTimeout(r, 3_500));
    const again = await listed('job');
    expect(again?.status.phase).toBe('Succeeded');
    expect(again!.status.containerStatuses![0]!.containerID).toBe(container);
    expect(again!.status.conditions.find((c) => c.type === 'Ready')).toMatchObject({ status: 'False', reason: 'PodCompleted' });
    expect(agent.events('ContainerStarted', 'job')).toEqual([]);
  }, 60_000);
});
