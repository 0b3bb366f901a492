import { afterAll } from '@jest/globals';
import { runnerScenarios } from '@kubelet-ts/conformance';
import { createKubelet } from '@kubelet-ts/runner';
import { DockerRuntime } from '@kubelet-ts/runtime-docker';
import { buildTestImages, TEST_IMAGES, TempDirs } from '@kubelet-ts/testkit';

/** The volume roots the runtimes were made with, removed once the suite is done. */
const volumeRoots = new TempDirs('kubelet-ts-volumes-');
afterAll(() => volumeRoots.removeAll());

runnerScenarios('docker', {
  makeRuntime: async () => {
    const images = await buildTestImages();
    return new DockerRuntime({
      podInfraImage: images.pause,
      hostIp: '127.0.0.1',
      volumesRoot: await volumeRoots.make(),
    });
  },
  makeAgent: (parts) => createKubelet(parts),
  image: TEST_IMAGES.busybox,
  // A shell that ends on SIGTERM (busybox sleep as PID 1 would wait for the kill).
  command: ['sh', '-c', 'trap "exit 0" TERM; while true; do sleep 1; done'],
});
