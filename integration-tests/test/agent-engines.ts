import { Labels } from '@kubelet-ts/core';
import { assertContainerd, buildTestImages, criCgroupParent, criEndpoint, removeLabelled, TEST_IMAGES } from '@kubelet-ts/testkit';
import { criDirect } from './cri-direct.js';

/** A real engine the agent process runs on, for suites that run the same checks on each. */
export interface AgentEngine {
  readonly name: string;
  /** containerd 1.6 cannot half-close stdin (no v5 on its streaming server): there its end reaches a terminal only, as ^D. */
  readonly stdinEndsOnTtyOnly?: boolean;
  /** The agent's runtime flags, and the test images it runs; fails saying how to start the engine when it is down. */
  prepare(): Promise<{ flags: string[]; busybox: string; etcd: string }>;
  /** Removes what the agent on `node` left on the engine (the agent leaves its pods running when it stops). */
  cleanUp(node: string): Promise<void>;
}

export const AGENT_ENGINES: readonly AgentEngine[] = [
  {
    name: 'Docker',
    async prepare() {
      const images = await buildTestImages();
      return { flags: ['--runtime', 'docker', '--pod-infra-image', images.pause], busybox: images.busybox, etcd: images.etcd };
    },
    async cleanUp(node) {
      await removeLabelled(`${Labels.node}=${node}`);
    },
  },
  {
    name: 'containerd (CRI)',
    stdinEndsOnTtyOnly: true,
    async prepare() {
      await assertContainerd(criEndpoint());
      return {
        flags: ['--runtime', 'cri', '--container-runtime-endpoint', criEndpoint(), '--cgroup-root', criCgroupParent()],
        busybox: TEST_IMAGES.busybox,
        etcd: TEST_IMAGES.etcd,
      };
    },
    async cleanUp(node) {
      const cri = criDirect(criEndpoint());
      try {
        for (const s of await cri.listPodSandbox({ [Labels.node]: node })) {
          await cri.stopPodSandbox(s.id).catch(() => undefined);
          await cri.removePodSandbox(s.id).catch(() => undefined);
        }
      } finally {
        cri.close();
      }
    },
  },
];
