import { afterAll } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runtimeContract } from '@kubelet-ts/conformance';
import { assertPodman, busyboxPodNetwork, podmanHost, RegistryServer, removePulledImage, TEST_IMAGES } from '@kubelet-ts/testkit';
import { DockerRuntime } from '../src/index.js';

let volumesRoot: string | undefined;

afterAll(async () => {
  if (volumesRoot !== undefined) await rm(volumesRoot, { recursive: true, force: true });
});

// The Docker adapter, unchanged in its options, on Podman's Docker-compatible API.
runtimeContract(
  'podman',
  async () => {
    await assertPodman();
    volumesRoot = await mkdtemp(join(tmpdir(), 'kubelet-ts-podman-volumes-'));
    return new DockerRuntime({ host: podmanHost(), podInfraImage: TEST_IMAGES.pause, hostIp: '127.0.0.1', volumesRoot });
  },
  {
    // busybox's sleep ignores SIGTERM as PID 1, so stop exercises the kill at the timeout too.
    image: TEST_IMAGES.busybox,
    command: ['sleep', '3600'],
    // Its registry, localhost:1, is blocked in the service's registries.conf (scripts/podman.sh):
    // refused without a dial. Another Podman dials 127.0.0.1:1, refused, and retries for 3 s.
    missingImage: 'localhost:1/kubelet-ts/missing:none',
    podNetwork: busyboxPodNetwork,
    events: {},
    logs: {},
    streaming: {},
    stats: {},
    refusesStdinOnce: true,
    // Its registries.conf lets it pull from a registry on 127.0.0.1 over plain HTTP (scripts/podman.sh).
    pullSecrets: {
      privateImage: async () => {
        const registry = await RegistryServer.start();
        const image = await registry.push(TEST_IMAGES.busybox, 'contract/busybox:1');
        const close = async () => {
          await removePulledImage('podman', image);
          await registry.stop();
        };
        return { image, username: registry.username, password: registry.password, close };
      },
    },
  },
);
