import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildContainerSpec, buildSandboxSpec, type ContainerManifest, type KubeletEvent } from '@kubelet-ts/core';
import { StaticManifestSource } from '@kubelet-ts/manifest';
import { checkedManifest } from '@kubelet-ts/conformance';
import { createKubelet } from '@kubelet-ts/runner';
import { DockerRuntime } from '@kubelet-ts/runtime-docker';
import { buildTestImages, independentDocker, removeLabelled, TEST_IMAGES } from '@kubelet-ts/testkit';

const NODE = `upgrade-identity-${process.pid}`;
const UID = '6f1c3c62-1d2e-11e4-8c21-0800200c9a66';

/** Labels as the release before issue 42 wrote them: the same, without the kubelet's `io.kubernetes.pod.*`. */
const beforeIdentity = (labels: Readonly<Record<string, string>>) =>
  Object.fromEntries(Object.entries(labels).filter(([key]) => !key.startsWith('io.kubernetes.pod.')));

/**
 * An agent upgraded from the release before pods carried the kubelet's uid, namespace and name
 * labels adopts what that release left running, on a real Docker engine: a pod with a uid, its
 * sandbox and containers made then (today's specs, less the new labels), nothing restarted.
 */
describe('upgrading from the release before the pod identity labels, on a real Docker engine', () => {
  const docker = independentDocker();
  let volumes: string;
  let runtime: DockerRuntime;
  const started = new Map<string, string>();

  const manifest = (): ContainerManifest =>
    checkedManifest({
      id: 'kept.shop',
      namespace: 'shop',
      uuid: UID,
      containers: [
        { name: 'web', image: TEST_IMAGES.busybox, command: ['sleep', '3600'] },
        { name: 'side', image: TEST_IMAGES.busybox, command: ['sleep', '3600'] },
      ],
    });

  beforeAll(async () => {
    await buildTestImages();
    volumes = await mkdtemp(join(tmpdir(), 'kubelet-ts-upgrade-identity-'));
    runtime = new DockerRuntime({ podInfraImage: TEST_IMAGES.pause, hostIp: '127.0.0.1', volumesRoot: volumes });
    const m = manifest();
    const context = { node: NODE, source: 'test' };
    const sandboxSpec = buildSandboxSpec(m, context);
    const sandbox = await runtime.runSandbox({ ...sandboxSpec, labels: beforeIdentity(sandboxSpec.labels) });
    for (const c of m.containers) {
      const spec = buildContainerSpec(m, c, context);
      const created = await runtime.create({ ...spec, labels: beforeIdentity(spec.labels) }, sandbox.id);
      await runtime.start(created.id);
      started.set(created.id, (await docker.getContainer(created.id).inspect()).State.StartedAt);
    }
  });

  afterAll(async () => {
    await removeLabelled(`io.kubelet-ts.node=${NODE}`);
    await rm(volumes, { recursive: true, force: true });
  });

  it('adopts the pod as it is: nothing created, stopped or restarted, no label rewritten', async () => {
    const listed = await docker.listContainers({ all: true, filters: { label: [`io.kubelet-ts.node=${NODE}`] } });
    expect(listed).toHaveLength(3);
    expect(listed.every((c) => !('io.kubernetes.pod.uid' in c.Labels))).toBe(true);
    const events: KubeletEvent[] = [];
    const agent = createKubelet({
      runtime,
      sources: [new StaticManifestSource('test', [manifest()])],
      hostname: NODE,
      events: { emit: (e) => events.push(e) },
    });
    await agent.start();
    try {
      expect(await agent.sync()).toMatchObject({ actions: 0, failures: 0 });
      expect(await agent.sync()).toMatchObject({ actions: 0, failures: 0 });
      expect(events.filter((e) => e.podId === 'kept.shop').map((e) => e.type)).toEqual([]);
      for (const [id, at] of started) {
        const info = await docker.getContainer(id).inspect();
        expect([info.State.Running, info.State.StartedAt]).toEqual([true, at]);
      }
      expect((await agent.pods()).map((p) => [p.id, p.uuid])).toEqual([['kept.shop', UID]]);
    } finally {
      await agent.close();
    }
  });
});
