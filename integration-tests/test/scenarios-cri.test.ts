import { afterAll } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runnerScenarios } from '@kubelet-ts/conformance';
import { Labels, buildContainerName, sandboxHash, type ContainerSpec, type ContainerSummary } from '@kubelet-ts/core';
import { createKubelet } from '@kubelet-ts/runner';
import { CriRuntime } from '@kubelet-ts/runtime-cri';
import { assertContainerd, criCgroupParent, criEndpoint, TEST_IMAGES } from '@kubelet-ts/testkit';

/**
 * The scenarios' "foreign container" is made with `create(spec)` and no sandbox, which CRI has no
 * room for: anyone else on containerd runs a sandbox first. So, and only for that call (the agent
 * always names its sandbox), the container gets a sandbox of its own, as its owner would make it:
 * unlabelled for the foreign one, another node's pod for the other node's. The agent must leave
 * both sandboxes alone as well. (To go when `runnerScenarios` makes its foreign containers in
 * sandboxes on every runtime.)
 */
class CriRuntimeWithForeignSandboxes extends CriRuntime {
  readonly foreignSandboxes: string[] = [];

  override async create(spec: ContainerSpec, sandboxId?: string): Promise<ContainerSummary> {
    if (sandboxId !== undefined) return super.create(spec, sandboxId);
    const node = spec.labels[Labels.node];
    const sandbox = await this.runSandbox({
      name: node === undefined ? `${spec.name}-sandbox` : buildContainerName(spec.podId, 'POD'),
      podId: spec.podId,
      hostname: spec.podId,
      ports: [],
      labels: node === undefined ? { ...spec.labels } : { [Labels.sandbox]: spec.podId, [Labels.sandboxHash]: sandboxHash([]), [Labels.node]: node, [Labels.source]: 'elsewhere' },
    });
    this.foreignSandboxes.push(sandbox.id);
    return super.create(spec, sandbox.id);
  }
}

let runtime: CriRuntimeWithForeignSandboxes | undefined;
const folders: string[] = [];

// After the scenarios' own afterAll, which removes the containers.
afterAll(async () => {
  for (const id of runtime?.foreignSandboxes ?? []) await runtime?.removeSandbox(id);
  runtime?.close();
  for (const dir of folders) await rm(dir, { recursive: true, force: true });
});

runnerScenarios('cri', {
  makeRuntime: async () => {
    await assertContainerd();
    const volumesRoot = await mkdtemp(join(tmpdir(), 'kubelet-ts-cri-volumes-'));
    const logsRoot = await mkdtemp(join(tmpdir(), 'kubelet-ts-cri-logs-'));
    folders.push(volumesRoot, logsRoot);
    runtime = new CriRuntimeWithForeignSandboxes({ endpoint: criEndpoint(), cgroupParent: criCgroupParent(), hostIp: '127.0.0.1', volumesRoot, logsRoot });
    return runtime;
  },
  makeAgent: (parts) => createKubelet(parts),
  image: TEST_IMAGES.busybox,
  // A shell that ends on SIGTERM (busybox sleep as PID 1 would wait for the kill).
  command: ['sh', '-c', 'trap "exit 0" TERM; while true; do sleep 1; done'],
});
