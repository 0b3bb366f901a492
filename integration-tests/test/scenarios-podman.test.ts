import { afterAll } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runnerScenarios } from '@kubelet-ts/conformance';
import { createKubelet } from '@kubelet-ts/runner';
import { DockerRuntime } from '@kubelet-ts/runtime-docker';
import { assertPodman, podmanHost, TEST_IMAGES } from '@kubelet-ts/testkit';

let volumesRoot: string | undefined;

afterAll(async () => {
  if (volumesRoot !== undefined) await rm(volumesRoot, { recursive: true, force: true });
});

// The agent's scenarios on the Docker adapter, served by Podman's Docker-compatible API.
runnerScenarios('podman', {
  makeRuntime: async () => {
    await assertPodman();
    volumesRoot = await mkdtemp(join(tmpdir(), 'kubelet-ts-podman-volumes-'));
    return new DockerRuntime({ host: podmanHost(), podInfraImage: TEST_IMAGES.pause, hostIp: '127.0.0.1', volumesRoot });
  },
  makeAgent: (parts) => createKubelet(parts),
  image: TEST_IMAGES.busybox,
  // A shell that ends on SIGTERM (busybox sleep as PID 1 would wait for the kill).
  command: ['sh', '-c', 'trap "exit 0" TERM; while true; do sleep 1; done'],
});
