import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  buildTestImages,
  criEndpoint,
  startControlPlane,
  startRealKubelet,
  TEST_IMAGES,
  type StartedControlPlane,
  type StartedRealKubelet,
} from '@kubelet-ts/testkit';
import { AgentProcess } from './agent-process.js';
import { AGENT_ENGINES } from './agent-engines.js';
import { freePort, machineAddress, nodeFlags, until } from './cluster-helpers.js';
import { criDirect } from './cri-direct.js';
import { kubectlOk as kubectl } from './kubectl.js';

/**
 * The real kubelet beside kubelet-ts (issue 46's smoke test; the bench's kubelet-side-by-side
 * measures them): the kubelet of the control plane's release, built by the same script, on the
 * private containerd, and kubelet-ts on Docker, both nodes of one control plane, each running the
 * same pod, read with the same kubectl. (Never both on one containerd at once: the kubelet takes
 * every sandbox of its runtime for a pod of its own, and kills those it was not given.)
 */

const NS = 'side-by-side';

describe('the real kubelet and kubelet-ts, nodes of one control plane', () => {
  let cluster: StartedControlPlane;
  let kubelet: StartedRealKubelet | undefined;
  let agent: AgentProcess | undefined;
  let dir: string;
  const real = `real-kubelet-${process.pid}`;
  const ours = `kubelet-ts-${process.pid}`;
  const k = (...args: string[]) => kubectl(cluster.kubeconfigPath, ...args);

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-e2e-real-kubelet-'));
    cluster = await startControlPlane();
    const docker = await AGENT_ENGINES[0]!.prepare();
    await buildTestImages();
    [kubelet, agent] = await Promise.all([
      startRealKubelet({ cluster, nodeName: real, nodeIp: machineAddress() }),
      (async () => {
        const a = new AgentProcess([
          ...docker.flags,
          ...nodeFlags(await cluster.nodeKubeconfig(ours), ours, await freePort()),
          '--client-ca-file',
          cluster.ca.certFile,
        ]);
        await a.serverUrl();
        return a;
      })(),
    ]);
    await k('create', 'namespace', NS);
    for (const [node, image] of [
      [real, TEST_IMAGES.busybox],
      [ours, docker.busybox],
    ] as const) {
      const file = join(dir, `${node}.json`);
      await writeFile(
        file,
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: `hello-${node === real ? 'kubelet' : 'kubelet-ts'}`, namespace: NS },
          spec: {
            nodeName: node,
            automountServiceAccountToken: false,
            terminationGracePeriodSeconds: 1,
            containers: [
              { name: 'main', image, imagePullPolicy: 'Never', command: ['sh', '-c', 'echo hello from $(hostname); exec sleep 3600'] },
            ],
          },
        }),
      );
      await k('apply', '-f', file);
    }
  }, 300_000);

  afterAll(async () => {
    // A kubelet that exits leaves its pods running: deleted through the API first, while it runs.
    await k('delete', 'namespace', NS, '--wait=true', '--timeout=60s').catch(() => undefined);
    await kubelet?.stop();
    await agent?.stop();
    await AGENT_ENGINES[0]!.cleanUp(ours);
    // Whatever the kubelet left on containerd (a failed test): its sandboxes carry the pod's namespace.
    const cri = criDirect(criEndpoint());
    try {
      for (const s of await cri.listPodSandbox({ 'io.kubernetes.pod.namespace': NS })) {
        await cri.stopPodSandbox(s.id).catch(() => undefined);
        await cri.removePodSandbox(s.id).catch(() => undefined);
      }
    } finally {
      cri.close();
    }
    await k('delete', 'node', real, ours, '--ignore-not-found').catch(() => undefined);
    await cluster?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('both register Ready, the kubelet at the control plane’s release', async () => {
    for (const node of [real, ours])
      await until(`${node} Ready`, async () =>
        (await k('get', 'node', node, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')) === 'True' ? true : undefined,
      );
    expect(await k('get', 'node', real, '-o', 'jsonpath={.status.nodeInfo.kubeletVersion}')).toBe(kubelet!.release);
    expect(await k('get', 'node', real, '-o', 'jsonpath={.status.nodeInfo.containerRuntimeVersion}')).toMatch(/^containerd:\/\//);
    expect(await k('get', 'node', ours, '-o', 'jsonpath={.status.nodeInfo.kubeletVersion}')).toMatch(/\+kubelet-ts\./);
  }, 90_000);

  it('both run the same pod, and kubectl logs and exec reach each through the API server', async () => {
    for (const pod of ['hello-kubelet', 'hello-kubelet-ts']) {
      await until(
        `${pod} Ready`,
        async () =>
          (await k('-n', NS, 'get', 'pod', pod, '-o', 'jsonpath={.status.containerStatuses[0].ready}')) === 'true' ? true : undefined,
        90_000,
      );
      expect(await k('-n', NS, 'logs', pod)).toBe(`hello from ${pod}\n`);
      expect(await k('-n', NS, 'exec', pod, '--', 'cat', '/proc/1/cmdline')).toContain('sleep');
    }
    // The same conditions, in the same order, from both.
    const conditions = async (pod: string) =>
      (await k('-n', NS, 'get', 'pod', pod, '-o', 'jsonpath={range .status.conditions[*]}{.type}={.status} {end}'))
        .trim()
        .split(' ')
        .sort();
    expect(await conditions('hello-kubelet-ts')).toEqual(await conditions('hello-kubelet'));
  }, 120_000);
});
