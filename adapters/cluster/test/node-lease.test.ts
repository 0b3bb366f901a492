import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { silentLogger } from '@kubelet-ts/core';
import { startControlPlane, type StartedControlPlane } from '@kubelet-ts/testkit';
import { CoordinationV1Api, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { hostFacts } from '../src/host-facts.js';
import { NODE_LEASE_NAMESPACE, NodeLease } from '../src/node-lease.js';
import { NodeRegistration } from '../src/node-registration.js';

/**
 * The Node and its Lease against a real API server, as the node's own credentials reach it
 * (`system:node:<name>`, through the Node authorizer and NodeRestriction): an unhealthy agent
 * renews no Lease and says `Ready: False` with why, and renews again once healthy.
 */
describe('the node’s Lease and Ready condition follow the agent’s health', () => {
  const name = `lease-node-${process.pid}`;
  let cluster: StartedControlPlane;
  let admin: KubeConfig;
  let registration: NodeRegistration | undefined;
  let lease: NodeLease | undefined;
  let healthy = true;

  beforeAll(async () => {
    cluster = await startControlPlane();
    admin = new KubeConfig();
    admin.loadFromString(cluster.kubeconfig);
  }, 180_000);

  afterAll(async () => {
    await lease?.close();
    await registration?.close();
    await cluster?.stop();
  });

  it('renews while healthy, not while unhealthy (Ready False with the agent’s message), and again once healthy', async () => {
    const node = new KubeConfig();
    node.loadFromFile(await cluster.nodeKubeconfig(name));
    registration = new NodeRegistration({
      api: node.makeApiClient(CoreV1Api),
      facts: {
        name,
        labels: {},
        taints: [],
        address: '192.0.2.9',
        port: 10250,
        allocatable: { pods: 110 },
        host: await hostFacts('/'),
        kubeletVersion: 'v1.37.0+kubelet-ts.0.1.0',
        containerRuntimeVersion: 'memory://0.1.0',
      },
      health: () => (healthy ? { ready: true } : { ready: false, message: 'no sync pass has completed for 40000 ms' }),
      logger: silentLogger,
    });
    const registered = await registration.register();
    lease = new NodeLease({
      api: node.makeApiClient(CoordinationV1Api),
      nodeName: name,
      nodeUid: registered!.metadata!.uid!,
      durationSeconds: 4,
      healthy: () => healthy,
      logger: silentLogger,
    });
    lease.start();
    const leases = admin.makeApiClient(CoordinationV1Api);
    const renewTime = async () => String((await leases.readNamespacedLease({ name, namespace: NODE_LEASE_NAMESPACE })).spec?.renewTime);
    const waitFor = async (check: () => boolean | Promise<boolean>, ms: number) => {
      const deadline = Date.now() + ms;
      while (!(await check())) {
        if (Date.now() > deadline) throw new Error('not within the time');
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    await waitFor(() => lease!.renewals >= 2, 10_000);

    healthy = false;
    await registration.update();
    const ready = (await admin.makeApiClient(CoreV1Api).readNode({ name })).status?.conditions?.find((c) => c.type === 'Ready');
    expect(ready).toMatchObject({ status: 'False', reason: 'KubeletNotReady', message: 'no sync pass has completed for 40000 ms' });
    // One renewal may have been on its way; then none for three of its periods (one a second).
    await new Promise((r) => setTimeout(r, 1_200));
    const held = lease.renewals;
    const heldTime = await renewTime();
    await new Promise((r) => setTimeout(r, 3_000));
    expect(lease.renewals).toBe(held);
    expect(await renewTime()).toBe(heldTime);

    healthy = true;
    await waitFor(async () => lease!.renewals > held && (await renewTime()) !== heldTime, 10_000);
    await registration.update();
    const again = (await admin.makeApiClient(CoreV1Api).readNode({ name })).status?.conditions?.find((c) => c.type === 'Ready');
    expect(again).toMatchObject({ status: 'True', reason: 'KubeletReady' });
  }, 60_000);
});
