import { afterAll } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runnerScenarios } from '@kubelet-ts/conformance';
import { createKubelet } from '@kubelet-ts/runner';
import { CriRuntime } from '@kubelet-ts/runtime-cri';
import { assertContainerd, criCgroupParent, criEndpoint, TEST_IMAGES } from '@kubelet-ts/testkit';

let runtime: CriRuntime | undefined;
const folders: string[] = [];

// After the scenarios' own afterAll, which removes what they made, sandboxes too.
afterAll(async () => {
  runtime?.close();
  for (const dir of folders) await rm(dir, { recursive: true, force: true });
});

runnerScenarios('cri', {
  makeRuntime: async () => {
    await assertContainerd();
    const volumesRoot = await mkdtemp(join(tmpdir(), 'kubelet-ts-cri-volumes-'));
    const logsRoot = await mkdtemp(join(tmpdir(), 'kubelet-ts-cri-logs-'));
    folders.push(volumesRoot, logsRoot);
    runtime = new CriRuntime({
      endpoint: criEndpoint(),
      cgroupParent: criCgroupParent(),
      hostIp: '127.0.0.1',
      volumesRoot,
      logsRoot,
      containerLogLinksDir: join(logsRoot, 'links'),
    });
    return runtime;
  },
  makeAgent: (parts) => createKubelet(parts),
  image: TEST_IMAGES.busybox,
  // A shell that ends on SIGTERM (busybox sleep as PID 1 would wait for the kill).
  command: ['sh', '-c', 'trap "exit 0" TERM; while true; do sleep 1; done'],
});
