import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startControlPlane, type StartedControlPlane } from '@kubelet-ts/testkit';
import { CoordinationV1Api, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { poolConnections } from '../src/pooled-connections.js';

/** The API clients of a node reuse their connections to a real API server (client-node alone opens one a request). */
describe('pooled connections to the API server', () => {
  let cluster: StartedControlPlane;

  beforeAll(async () => {
    cluster = await startControlPlane();
  }, 180_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  const config = () => {
    const kc = new KubeConfig();
    kc.loadFromString(cluster.kubeconfig);
    return kc;
  };

  it('answers 30 requests, one after another, on one connection; 8 at once on at most 8', async () => {
    const kc = config();
    const pool = poolConnections(kc);
    try {
      const core = kc.makeApiClient(CoreV1Api);
      for (let i = 0; i < 30; i++) expect((await core.listNamespace()).items.length).toBeGreaterThan(0);
      expect(pool.opened).toBe(1);
      await Promise.all(Array.from({ length: 8 }, () => core.readNamespace({ name: 'default' })));
      expect(pool.opened).toBeGreaterThanOrEqual(1);
      expect(pool.opened).toBeLessThanOrEqual(8);
    } finally {
      pool.release();
    }
  });

  it('gives Lease requests connections of their own (a heartbeat never waits behind a backlog of others)', async () => {
    const kc = config();
    const pool = poolConnections(kc);
    try {
      const core = kc.makeApiClient(CoreV1Api);
      const leases = kc.makeApiClient(CoordinationV1Api);
      await core.readNamespace({ name: 'default' });
      expect(pool.opened).toBe(1);
      for (let i = 0; i < 5; i++) await leases.listNamespacedLease({ namespace: 'kube-node-lease' });
      expect(pool.opened).toBe(2);
      await core.readNamespace({ name: 'default' });
      expect(pool.opened).toBe(2);
    } finally {
      pool.release();
    }
  });

  it('is shared by every holder of the KubeConfig until the last lets go; then client-node makes its own again', async () => {
    const kc = config();
    const first = poolConnections(kc);
    const second = poolConnections(kc);
    const core = kc.makeApiClient(CoreV1Api);
    await core.readNamespace({ name: 'default' });
    first.release();
    first.release(); // twice: still one holder left
    await core.readNamespace({ name: 'default' });
    expect(second.opened).toBe(1);
    second.release();
    // Given back as it was: requests still work, on client-node's own agents, not counted.
    await core.readNamespace({ name: 'default' });
    expect(second.opened).toBe(1);
    expect(Object.hasOwn(kc, 'applySecurityAuthentication')).toBe(false);
  });

  it('gives a request the credentials of its moment: a changed client certificate gets a connection of its own', async () => {
    const kc = config();
    const pool = poolConnections(kc);
    try {
      const core = kc.makeApiClient(CoreV1Api);
      await core.readNamespace({ name: 'default' });
      // The same user with other credentials (a token, no client certificate): not sent on the certificate's connection.
      const user = kc.getCurrentUser()!;
      kc.users = kc.users.map((u) => (u.name === user.name ? { name: u.name, token: 'not-a-token' } : u));
      await expect(core.readNamespace({ name: 'default' })).rejects.toMatchObject({ code: 401 });
      expect(pool.opened).toBe(2);
    } finally {
      pool.release();
    }
  });
});
