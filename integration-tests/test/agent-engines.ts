import { Labels } from '@kubelet-ts/core';
import {
  assertContainerd,
  buildTestImages,
  criCgroupParent,
  criEndpoint,
  independentDocker,
  removeLabelled,
  TEST_IMAGES,
} from '@kubelet-ts/testkit';
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
  /** What the agent on `node` has on the engine now, containers and sandboxes, with their labels, as the engine lists them. */
  labelled(
    node: string,
  ): Promise<Array<{ readonly kind: 'container' | 'sandbox'; readonly id: string; readonly labels: Record<string, string> }>>;
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
    async labelled(node) {
      const listed = await independentDocker().listContainers({ all: true, filters: { label: [`${Labels.node}=${node}`] } });
      // On Docker a sandbox is a container too: the one labelled with the pod it holds.
      return listed.map((c) => ({ kind: Labels.sandbox in c.Labels ? 'sandbox' : 'container', id: c.Id, labels: c.Labels }));
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
    async labelled(node) {
      const cri = criDirect(criEndpoint());
      try {
        const sandboxes = await cri.listPodSandbox({ [Labels.node]: node });
        const containers = await cri.listContainers({ labelSelector: { [Labels.node]: node } });
        return [
          ...sandboxes.map((s) => ({ kind: 'sandbox' as const, id: s.id, labels: s.labels })),
          ...containers.map((c) => ({ kind: 'container' as const, id: c.id, labels: c.labels })),
        ];
      } finally {
        cri.close();
      }
    },
  },
];
