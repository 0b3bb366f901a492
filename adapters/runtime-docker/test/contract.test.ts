import { afterAll } from '@jest/globals';
import { runtimeContract } from '@kubelet-ts/conformance';
import { buildTestImages, busyboxPodNetwork, TEST_IMAGES, TempDirs } from '@kubelet-ts/testkit';
import { DockerRuntime } from '../src/index.js';

/** The volume roots the runtimes were made with, removed once the suite is done. */
const volumeRoots = new TempDirs('kubelet-ts-volumes-');
afterAll(() => volumeRoots.removeAll());

runtimeContract(
  'docker',
  async () => {
    const images = await buildTestImages();
    return new DockerRuntime({
      podInfraImage: images.pause,
      hostIp: '127.0.0.1',
      volumesRoot: await volumeRoots.make(),
    });
  },
  // busybox's sleep ignores SIGTERM as PID 1, so stop exercises the kill at the timeout too.
  { image: TEST_IMAGES.busybox, command: ['sleep', '3600'], podNetwork: busyboxPodNetwork, events: {}, logs: {}, streaming: {}, stats: {} },
);
