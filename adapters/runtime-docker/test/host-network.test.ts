import { afterAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { HOST_NETWORK_SANDBOX_HASH, Labels, buildContainerName } from '@kubelet-ts/core';
import { assertPodman, buildTestImages, podmanHost, TEST_IMAGES } from '@kubelet-ts/testkit';
import { DockerRuntime } from '../src/index.js';

const roots: string[] = [];

afterAll(async () => {
  for (const root of roots) await rm(root, { recursive: true, force: true });
});

// Docker, and Podman through the same adapter: a host-network pod is a holder on the host's
// network, and its containers join it (so the host's network and hostname), on both.
describe.each([
  ['docker', async () => (await buildTestImages(), undefined)],
  ['podman', async () => (await assertPodman(), podmanHost())],
])('a host-network sandbox on %s', (engine, connect) => {
  it("is a holder with NetworkMode host that publishes nothing; its containers see the host's hostname", async () => {
    const host = await connect();
    const root = await mkdtemp(join(tmpdir(), 'kubelet-ts-hostnet-'));
    roots.push(root);
    const runtime = new DockerRuntime({
      ...(host === undefined ? {} : { host }),
      podInfraImage: TEST_IMAGES.pause,
      hostIp: '127.0.0.1',
      volumesRoot: root,
    });
    const docker = host === undefined ? new Docker() : new Docker({ socketPath: host.replace(/^unix:\/\//, '') });
    const podId = `hostnet-${engine}-${process.pid}`;
    const sandbox = await runtime.runSandbox({
      name: buildContainerName(podId, 'POD'),
      podId,
      hostname: podId,
      ports: [],
      hostNetwork: true,
      labels: {
        [Labels.sandbox]: podId,
        [Labels.sandboxHash]: HOST_NETWORK_SANDBOX_HASH,
        [Labels.node]: 'test-node',
        [Labels.source]: 'test',
      },
    });
    try {
      const holder = await docker.getContainer(sandbox.id).inspect();
      expect(holder.HostConfig.NetworkMode).toBe('host');
      expect(Object.keys(holder.HostConfig.PortBindings ?? {})).toEqual([]);
      const c = await runtime.create(
        {
          name: buildContainerName(podId, 'main'),
          podId,
          image: TEST_IMAGES.busybox,
          command: ['sleep', '3600'],
          env: {},
          ports: [],
          mounts: [],
          labels: { [Labels.manifestId]: podId },
        },
        sandbox.id,
      );
      await runtime.start(c.id);
      expect((await runtime.exec(c.id, ['hostname'], 5000)).output.trim()).toBe(hostname());
    } finally {
      await runtime.removeSandbox(sandbox.id, { volumes: true });
    }
  }, 60_000);
});
