import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Labels, buildContainerSpec, type KubeletEvent } from '@kubelet-ts/core';
import { StaticManifestSource } from '@kubelet-ts/manifest';
import { GuardedRuntime, checkedManifest } from '@kubelet-ts/conformance';
import { createKubelet, type Kubelet } from '@kubelet-ts/runner';
import { DockerRuntime } from '@kubelet-ts/runtime-docker';
import { buildTestImages, independentDocker, removeLabelled, TEST_IMAGES } from '@kubelet-ts/testkit';

const NODE = `foreign-${process.pid}`;
/** On every foreign container this test makes, so that it can remove them. */
const MADE_HERE = `kubelet-ts-test.foreign=${process.pid}`;

async function until(check: () => boolean | Promise<boolean>, what: string, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const web = checkedManifest({
  id: 'web',
  containers: [
    // Crashes at once, so the agent inspects exit times, restarts it and collects the older exits.
    { name: 'app', image: TEST_IMAGES.busybox, command: ['sh', '-c', 'sleep 0.3; exit 1'] },
    // Fails its liveness probe, so the agent execs in it and kills it.
    {
      name: 'probed',
      image: TEST_IMAGES.busybox,
      command: ['sh', '-c', 'trap "exit 0" TERM; while true; do sleep 1; done'],
      livenessProbe: { exec: { command: ['false'] }, periodSeconds: 1, failureThreshold: 1 },
    },
  ],
});

/**
 * The agent in this process on the real engine, its DockerRuntime wrapped in a GuardedRuntime,
 * beside real foreign containers: one without labels, some with our label keys and garbage
 * values on our node, and another node's copies of our pod. The agent creates, crashes,
 * restarts, collects, probes, kills and removes its own; the foreign ones are never inspected,
 * stopped or removed, and keep running (or stay exited) with the same start time.
 */
describe('foreign containers beside the agent on a real Docker engine', () => {
  const docker = independentDocker();
  const events: KubeletEvent[] = [];
  const source = new StaticManifestSource('test', []);
  const foreign = new Map<string, { name: string; running: boolean; startedAt: string; finishedAt: string }>();
  let volumes: string;
  let guard: GuardedRuntime;
  let kubelet: Kubelet;

  async function place(name: string, labels: Record<string, string>, exits: boolean): Promise<void> {
    const cmd = exits ? ['sh', '-c', 'exit 3'] : ['sleep', '3600'];
    const c = await docker.createContainer({
      name: `${name}-${process.pid}`,
      Image: TEST_IMAGES.busybox,
      Cmd: cmd,
      Labels: { ...labels, [MADE_HERE.split('=')[0]!]: String(process.pid) },
    });
    await c.start();
    if (exits) await c.wait();
    const info = await c.inspect();
    foreign.set(c.id, {
      name: info.Name.replace(/^\//, ''),
      running: info.State.Running,
      startedAt: info.State.StartedAt,
      finishedAt: info.State.FinishedAt,
    });
  }

  // The forged foreign containers carry these labels too.
  const ours = async () =>
    (await docker.listContainers({ all: true, filters: { label: [`${Labels.node}=${NODE}`, `${Labels.manifestId}=web`] } })).filter(
      (c) => !foreign.has(c.Id),
    );
  const ofType = (type: string, container?: string) =>
    events.filter((e) => e.type === type && (container === undefined || e.container === container));

  beforeAll(async () => {
    await buildTestImages();
    volumes = await mkdtemp(join(tmpdir(), 'kubelet-ts-foreign-'));
    const forged = { [Labels.manifestId]: 'web', [Labels.containerName]: 'app', [Labels.node]: NODE };
    const otherNode = buildContainerSpec(web, web.containers[0]!, { node: `${NODE}-b`, source: 'test' }).labels;
    await place('foreign-plain', {}, false);
    await place('foreign-bad-hash', { ...forged, [Labels.specHash]: 'garbage' }, false);
    await place('foreign-bad-hash-exited', { ...forged, [Labels.specHash]: 'v1-zz', [Labels.restartCount]: 'x' }, true);
    await place('foreign-bad-id', { ...forged, [Labels.manifestId]: '../web', [Labels.specHash]: otherNode[Labels.specHash]! }, false);
    await place('foreign-other-node', otherNode, false);
    await place('foreign-other-node-exited', otherNode, true);

    guard = new GuardedRuntime(new DockerRuntime({ podInfraImage: TEST_IMAGES.pause, hostIp: '127.0.0.1', volumesRoot: volumes }));
    guard.protect(...[...foreign].flatMap(([id, c]) => [id, c.name]));
    kubelet = createKubelet({
      runtime: guard.runtime,
      sources: [source],
      hostname: NODE,
      syncFrequencyMs: 300,
      crashBackOff: { initialMs: 300, maxMs: 600 },
      events: { emit: (e) => events.push(e) },
    });
    await kubelet.start();
  });

  afterAll(async () => {
    await kubelet.close();
    await removeLabelled(`${Labels.node}=${NODE}`);
    await removeLabelled(MADE_HERE);
    await rm(volumes, { recursive: true, force: true });
  });

  it('crashes, restarts, collects, probes and kills its own containers beside them', async () => {
    source.set([web]);
    await until(
      () => ofType('ContainerRestarted', 'app').length >= 2 && ofType('ContainerKilled', 'probed').length >= 1,
      'two restarts of app and a liveness kill',
    );
    const onOurs = (op: string) => guard.calls.some((c) => c.op === op && !foreign.has(c.id));
    for (const op of ['inspect', 'start', 'stop', 'remove', 'exec']) expect({ op, called: onOurs(op) }).toEqual({ op, called: true });
    expect(guard.foreignCalls()).toEqual([]);
  });

  it('shows none of them through containerInfo, pods or metrics', async () => {
    for (const [id, { name }] of foreign) {
      for (const wanted of [id, id.slice(0, 12), name]) await expect(kubelet.containerInfo(wanted)).resolves.toBeUndefined();
    }
    expect((await kubelet.containerInfo('web/probed'))?.labels[Labels.node]).toBe(NODE);
    const shown = (await kubelet.pods()).flatMap((p) => p.containers.map((c) => c.id));
    expect(shown.some((id) => id !== undefined && foreign.has(id))).toBe(false);
    await kubelet.plan();
    await kubelet.metrics();
  });

  it('removes its own pod, and has not touched a foreign container', async () => {
    source.set([]);
    await until(async () => (await ours()).length === 0, 'our containers removed');
    await kubelet.close();
    expect(guard.foreignCalls()).toEqual([]);
    for (const [id, before] of foreign) {
      const info = await docker.getContainer(id).inspect();
      expect({
        name: before.name,
        running: info.State.Running,
        startedAt: info.State.StartedAt,
        finishedAt: info.State.FinishedAt,
      }).toEqual(before);
    }
  });
});
