import { mkdtemp, rm } from 'node:fs/promises';
import { afterAll } from '@jest/globals';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runtimeContract } from '@kubelet-ts/conformance';
import { buildTestImages, busyboxPodNetwork, TEST_IMAGES } from '@kubelet-ts/testkit';
import { DockerRuntime } from '../src/index.js';

/** The volume roots the runtimes were made with, removed once the suite is done. */
const roots: string[] = [];
afterAll(async () => {
  await Promise.all(roots.map((root) => rm(root, { recursive: true, force: true })));
});
const volumesRoot = async (): Promise<string> => {
  const root = await mkdtemp(join(tmpdir(), 'kubelet-ts-volumes-'));
  roots.push(root);
  return root;
};

runtimeContract(
  'docker',
  async () => {
    const images = await buildTestImages();
    return new DockerRuntime({
      podInfraImage: images.pause,
      hostIp: '127.0.0.1',
      volumesRoot: await volumesRoot(),
    });
  },
  // busybox's sleep ignores SIGTERM as PID 1, so stop exercises the kill at the timeout too.
  { image: TEST_IMAGES.busybox, command: ['sleep', '3600'], podNetwork: busyboxPodNetwork, events: {}, logs: {}, streaming: {}, stats: {} },
);
