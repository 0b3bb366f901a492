import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildContainerSpec, buildSandboxSpec, canonicalJson, type KubeletEvent } from '@kubelet-ts/core';
import { StaticManifestSource } from '@kubelet-ts/manifest';
import { checkedManifest } from '@kubelet-ts/conformance';
import { createKubelet } from '@kubelet-ts/runner';
import { DockerRuntime } from '@kubelet-ts/runtime-docker';
import { buildTestImages, freePort, independentDocker, removeLabelled, TEST_IMAGES } from '@kubelet-ts/testkit';

const NODE = `upgrade-${process.pid}`;

/**
 * An agent upgraded from the release before pods were explicit adopts what that release left
 * running: its infrastructure containers become the pods' sandboxes, and nothing is restarted.
 * The pod is made here the way that release made it, literally (its label keys, its ports hash,
 * its names and its Engine API calls), not through today's code.
 */
describe('upgrading from the release with implicit pods, and an orphaned sandbox, on a real Docker engine', () => {
  const docker = independentDocker();
  let volumes: string;
  let port: number;
  let infraId: string;
  const containers = new Map<string, { id: string; startedAt: string }>();

  const manifest = () =>
    checkedManifest({
      id: 'legacy',
      containers: [
        {
          name: 'web',
          image: TEST_IMAGES.busybox,
          command: ['sh', '-c', 'mkdir -p /www && echo legacy > /www/index.html && exec httpd -f -p 8080 -h /www'],
          ports: [{ containerPort: 8080, hostPort: port }],
        },
        { name: 'side', image: TEST_IMAGES.busybox, command: ['sleep', '3600'] },
      ],
    });

  beforeAll(async () => {
    const images = await buildTestImages();
    volumes = await mkdtemp(join(tmpdir(), 'kubelet-ts-upgrade-'));
    port = await freePort();
    const m = manifest();
    // The previous release's ensureInfra: a pause container per pod, labelled with the pod id and the
    // hash of the pod's ports, named POD--<id>--<8 hex>, publishing every port of the pod.
    const podPorts = m.containers.flatMap((c) =>
      c.ports.map((p) => ({ containerPort: p.containerPort, hostPort: p.hostPort, protocol: p.protocol })),
    );
    const infra = await docker.createContainer({
      name: `POD--legacy--${randomBytes(4).toString('hex')}`,
      Image: images.pause,
      Labels: {
        'io.kubelet-ts.pod-infra': 'legacy',
        'io.kubelet-ts.pod-ports-hash': createHash('sha256').update(canonicalJson(podPorts)).digest('hex').slice(0, 16),
        'io.kubelet-ts.node': NODE,
        'io.kubelet-ts.source': 'test',
      },
      ExposedPorts: { '8080/tcp': {} },
      HostConfig: { PortBindings: { '8080/tcp': [{ HostIp: '127.0.0.1', HostPort: String(port) }] } },
    });
    await infra.start();
    infraId = infra.id;
    // Its containers, with the labels and names buildContainerSpec gave them then (spec hash v1).
    for (const c of m.containers) {
      const spec = buildContainerSpec(m, c, { node: NODE, source: 'test' });
      const created = await docker.createContainer({
        name: spec.name,
        Image: spec.image,
        Cmd: [...(spec.command ?? [])],
        Env: [],
        Labels: { ...spec.labels },
        HostConfig: { NetworkMode: `container:${infra.id}`, Binds: [] },
      });
      await created.start();
      containers.set(c.name, { id: created.id, startedAt: (await created.inspect()).State.StartedAt });
    }
  });

  afterAll(async () => {
    await removeLabelled(`io.kubelet-ts.node=${NODE}`);
    await rm(volumes, { recursive: true, force: true });
  });

  it('adopts the pod: the same holder and containers, nothing created, stopped or restarted', async () => {
    const events: KubeletEvent[] = [];
    const runtime = new DockerRuntime({ podInfraImage: TEST_IMAGES.pause, hostIp: '127.0.0.1', volumesRoot: volumes });
    const agent = createKubelet({
      runtime,
      sources: [new StaticManifestSource('test', [manifest()])],
      hostname: NODE,
      events: { emit: (e) => events.push(e) },
    });
    await agent.start();
    try {
      const pass = await agent.sync();
      expect(pass).toMatchObject({ actions: 0, failures: 0 });
      expect(await agent.plan()).toMatchObject({ inSync: true, steps: [] });
      expect(events.filter((e) => e.podId === 'legacy').map((e) => e.type)).toEqual([]);
      const sandboxes = (await runtime.listSandboxes()).filter((s) => s.labels['io.kubelet-ts.node'] === NODE);
      expect(sandboxes.map((s) => [s.id, s.state])).toEqual([[infraId, 'ready']]);
      for (const [, { id, startedAt }] of containers) {
        const info = await docker.getContainer(id).inspect();
        expect(info.State.Running).toBe(true);
        expect(info.State.StartedAt).toBe(startedAt);
      }
      expect(await (await fetch(`http://127.0.0.1:${port}/`)).text()).toContain('legacy');
    } finally {
      await agent.close();
    }
  });

  it('removes a sandbox left with no containers once its pod is gone (the agent died between the two)', async () => {
    const runtime = new DockerRuntime({ podInfraImage: TEST_IMAGES.pause, hostIp: '127.0.0.1', volumesRoot: volumes });
    const orphan = await runtime.runSandbox(
      buildSandboxSpec(checkedManifest({ id: 'orphan', containers: [{ name: 'x', image: TEST_IMAGES.busybox }] }), {
        node: NODE,
        source: 'test',
      }),
    );
    const events: KubeletEvent[] = [];
    // No source asks for the orphan's pod (the adopted pod above stays as it is).
    const agent = createKubelet({
      runtime,
      sources: [new StaticManifestSource('test', [manifest()])],
      hostname: NODE,
      events: { emit: (e) => events.push(e) },
    });
    await agent.start();
    try {
      await agent.sync();
      expect(events.filter((e) => e.podId === 'orphan').map((e) => e.type)).toEqual(['SandboxRemoved']);
      await expect(docker.getContainer(orphan.id).inspect()).rejects.toMatchObject({ statusCode: 404 });
    } finally {
      await agent.close();
    }
  });
});
