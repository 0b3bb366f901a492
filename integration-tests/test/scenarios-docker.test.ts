import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runnerScenarios } from '@kubelet-ts/conformance';
import { createKubelet } from '@kubelet-ts/runner';
import { DockerRuntime } from '@kubelet-ts/runtime-docker';
import { buildTestImages, TEST_IMAGES } from '@kubelet-ts/testkit';

runnerScenarios('docker', {
  makeRuntime: async () => {
    const images = await buildTestImages();
    return new DockerRuntime({
      podInfraImage: images.pause,
      hostIp: '127.0.0.1',
      volumesRoot: await mkdtemp(join(tmpdir(), 'kubelet-ts-volumes-')),
    });
  },
  makeAgent: (parts) => createKubelet(parts),
  image: TEST_IMAGES.busybox,
  // A shell that ends on SIGTERM (busybox sleep as PID 1 would wait for the kill).
  command: ['sh', '-c', 'trap "exit 0" TERM; while true; do sleep 1; done'],
});
