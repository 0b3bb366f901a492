import { mkdtemp, rm } from 'node:fs/promises';
import { afterAll } from '@jest/globals';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runnerScenarios } from '@kubelet-ts/conformance';
import { createKubelet } from '@kubelet-ts/runner';
import { DockerRuntime } from '@kubelet-ts/runtime-docker';
import { buildTestImages, TEST_IMAGES } from '@kubelet-ts/testkit';

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

runnerScenarios('docker', {
  makeRuntime: async () => {
    const images = await buildTestImages();
    return new DockerRuntime({
      podInfraImage: images.pause,
      hostIp: '127.0.0.1',
      volumesRoot: await volumesRoot(),
    });
  },
  makeAgent: (parts) => createKubelet(parts),
  image: TEST_IMAGES.busybox,
  // A shell that ends on SIGTERM (busybox sleep as PID 1 would wait for the kill).
  command: ['sh', '-c', 'trap "exit 0" TERM; while true; do sleep 1; done'],
});
