import { afterAll } from '@jest/globals';
import { runtimeContract } from '@kubelet-ts/conformance';
import { buildTestImages, busyboxPodNetwork, RegistryServer, removePulledImage, TEST_IMAGES, TempDirs } from '@kubelet-ts/testkit';
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
  {
    image: TEST_IMAGES.busybox,
    command: ['sleep', '3600'],
    podNetwork: busyboxPodNetwork,
    events: {},
    logs: {},
    streaming: {},
    stats: {},
    pullSecrets: { privateImage: () => privateImage('docker') },
  },
);

/** The busybox test image in a registry of its own that wants a password; closing removes what the pull added, and the registry. */
async function privateImage(engine: 'docker') {
  const registry = await RegistryServer.start();
  const image = await registry.push(TEST_IMAGES.busybox, 'contract/busybox:1');
  return {
    image,
    username: registry.username,
    password: registry.password,
    close: async () => {
      await removePulledImage(engine, image);
      await registry.stop();
    },
  };
}
