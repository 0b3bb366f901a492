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

  it('answers 30 requests, one after another, on at most two connections; 8 at once on at most 8 more', async () => {
    const kc = config();
    const pool = poolConnections(kc);
    try {
      const core = kc.makeApiClient(CoreV1Api);
      for (let i = 0; i < 30; i++) expect((await core.listNamespace()).items.length).toBeGreaterThan(0);
      // A freed connection is handed on a turn later (see SettledHttpsAgent): the next request, made
      // at once, may open a second one; never more.
      expect(pool.opened).toBeGreaterThanOrEqual(1);
      expect(pool.opened).toBeLessThanOrEqual(2);
      const before = pool.opened;
      await Promise.all(Array.from({ length: 8 }, () => core.readNamespace({ name: 'default' })));
      expect(pool.opened - before).toBeLessThanOrEqual(8);
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
      const withLeases = pool.opened;
      expect(withLeases).toBeGreaterThanOrEqual(2);
      expect(withLeases).toBeLessThanOrEqual(3);
      // The first request's connection, free since: taken again.
      await core.readNamespace({ name: 'default' });
      expect(pool.opened).toBe(withLeases);
    } finally {
      pool.release();
    }
  });

  it('reads long (chunked) answers on reused connections without a false "Premature close" (node-fetch 2 with keep-alive)', async () => {
    const kc = config();
    const core = kc.makeApiClient(CoreV1Api);
    const ns = 'pooled-chunked';
    await core.createNamespace({ body: { metadata: { name: ns } } });
    // Answers of about 200 KB: the API server sends them chunked.
    for (let i = 0; i < 20; i++)
      await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: `big-${i}` }, data: { blob: 'x'.repeat(10_000) } } });
    const pool = poolConnections(kc);
    try {
      // More at once than the pool has connections: each one freed is handed to a waiting request at once.
      const lists = await Promise.allSettled(Array.from({ length: 300 }, () => core.listNamespacedConfigMap({ namespace: ns })));
      const failed = lists.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason));
      expect(failed).toEqual([]);
      const bigOnes = (items: Array<{ metadata?: { name?: string } }>) => items.filter((c) => c.metadata?.name?.startsWith('big-')).length;
      for (const r of lists)
        expect(bigOnes((r as PromiseFulfilledResult<{ items: Array<{ metadata?: { name?: string } }> }>).value.items)).toBe(20);
      // The requests' lane opens 128 at most: the rest waited for a freed one.
      expect(pool.opened).toBeLessThanOrEqual(128);
      // And one after another, the next request made as soon as the last answer is read.
      for (let i = 0; i < 50; i++) expect(bigOnes((await core.listNamespacedConfigMap({ namespace: ns })).items)).toBe(20);
    } finally {
      pool.release();
    }
  }, 120_000);

  it('is shared by every holder of the KubeConfig until the last lets go; then client-node makes its own again', async () => {
    const kc = config();
    const first = poolConnections(kc);
    const second = poolConnections(kc);
    const core = kc.makeApiClient(CoreV1Api);
    await core.readNamespace({ name: 'default' });
    first.release();
    first.release(); // twice: still one holder left
    await core.readNamespace({ name: 'default' });
    const opened = second.opened;
    expect(opened).toBeGreaterThanOrEqual(1);
    expect(opened).toBeLessThanOrEqual(2);
    second.release();
    // Given back as it was: requests still work, on client-node's own agents, not counted.
    await core.readNamespace({ name: 'default' });
    expect(second.opened).toBe(opened);
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
