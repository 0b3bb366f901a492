import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RecordingLogger } from '@kubelet-ts/conformance';
import { silentLogger } from '@kubelet-ts/core';
import { startControlPlane, type StartedControlPlane } from '@kubelet-ts/testkit';
import {
  CertificatesV1Api,
  CoreV1Api,
  KubeConfig,
  RbacAuthorizationV1Api,
  type V1CertificateSigningRequest,
} from '@kubernetes/client-node';
import { ClusterAuth, ServingCertificateRequester } from '../src/index.js';
import { until } from './until.js';

/**
 * What a node's port asks of a real API server with the node's own credentials (issue 44): who a
 * bearer token is (TokenReview) and what a user may do on the node (SubjectAccessReview), each kept
 * as the kubelet keeps it; and a serving certificate the cluster issues (a kubelet-serving CSR).
 */
let cluster: StartedControlPlane;
let admin: KubeConfig;
let node: KubeConfig;
let dir: string;
const nodeName = `credentials-node-${process.pid}`;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-node-credentials-'));
  cluster = await startControlPlane();
  admin = new KubeConfig();
  admin.loadFromString(cluster.kubeconfig);
  node = new KubeConfig();
  node.loadFromFile(await cluster.nodeKubeconfig(nodeName));
}, 180_000);

afterAll(async () => {
  await cluster?.stop();
  await rm(dir, { recursive: true, force: true });
});

/** A service account's token, made by the admin. */
async function tokenOf(name: string): Promise<string> {
  const core = admin.makeApiClient(CoreV1Api);
  await core.createNamespacedServiceAccount({ namespace: 'default', body: { metadata: { name } } }).catch(() => undefined);
  const request = await core.createNamespacedServiceAccountToken({ namespace: 'default', name, body: { spec: { audiences: [] } } });
  return request.status!.token;
}

describe('ClusterAuth: token and access reviews with the node’s credentials', () => {
  it('names the user of a service account’s token, and no one for a token the cluster does not know', async () => {
    const auth = new ClusterAuth({ kubeConfig: node, nodeName, logger: silentLogger });
    const user = await auth.authenticateToken!(await tokenOf('reviewed'));
    expect(user).toMatchObject({
      name: 'system:serviceaccount:default:reviewed',
      groups: expect.arrayContaining(['system:serviceaccounts', 'system:serviceaccounts:default', 'system:authenticated']),
    });
    expect(await auth.authenticateToken!('not.a.token')).toBeUndefined();
  });

  it('asks whether a user may get nodes/<subresource> of this node, as RBAC answers', async () => {
    const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createClusterRole({
      body: { metadata: { name: `${nodeName}-stats` }, rules: [{ apiGroups: [''], resources: ['nodes/stats'], verbs: ['get'] }] },
    });
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name: `${nodeName}-stats` },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `${nodeName}-stats` },
        subjects: [{ kind: 'User', name: 'stats-reader', apiGroup: 'rbac.authorization.k8s.io' }],
      },
    });
    const auth = new ClusterAuth({ kubeConfig: node, nodeName, logger: silentLogger });
    const reader = { name: 'stats-reader', groups: ['system:authenticated'] };
    const attributes = (subresource: string) => ({ verb: 'get', resource: 'nodes' as const, subresource, name: nodeName, path: '/x' });
    expect((await auth.authorize!(reader, attributes('stats'))).allowed).toBe(true);
    expect((await auth.authorize!(reader, attributes('proxy'))).allowed).toBe(false);
    expect((await auth.authorize!({ name: 'anyone', groups: ['system:masters'] }, attributes('proxy'))).allowed).toBe(true);
  });

  it('keeps a token’s answer 2 min either way, an allowed access 5 min, a refused one 30 s; a failure to ask is not kept', async () => {
    let now = 1_000_000;
    const auth = new ClusterAuth({ kubeConfig: node, nodeName, logger: silentLogger, now: () => now });
    const token = await tokenOf('cached');
    await auth.authenticateToken!(token);
    await auth.authenticateToken!(token);
    await auth.authenticateToken!('unknown');
    await auth.authenticateToken!('unknown');
    expect(auth.reviews.tokens).toBe(2);
    now += 119_000;
    await auth.authenticateToken!(token);
    expect(auth.reviews.tokens).toBe(2);
    now += 2_000;
    await auth.authenticateToken!(token);
    await auth.authenticateToken!('unknown');
    expect(auth.reviews.tokens).toBe(4);

    const allowedUser = { name: 'admin-ish', groups: ['system:masters'] };
    const refusedUser = { name: 'nobody', groups: [] };
    const proxy = { verb: 'get', resource: 'nodes' as const, subresource: 'proxy', name: nodeName, path: '/pods' };
    await auth.authorize!(allowedUser, proxy);
    await auth.authorize!(refusedUser, proxy);
    await auth.authorize!(allowedUser, proxy);
    await auth.authorize!(refusedUser, proxy);
    expect(auth.reviews.access).toBe(2);
    now += 31_000;
    await auth.authorize!(allowedUser, proxy);
    await auth.authorize!(refusedUser, proxy);
    expect(auth.reviews.access).toBe(3);
    now += 270_000;
    await auth.authorize!(allowedUser, proxy);
    expect(auth.reviews.access).toBe(4);

    // An API server that cannot be reached: the caller is told (a 401 or 500 at the server), and nothing is kept.
    const gone = new KubeConfig();
    gone.loadFromOptions({
      clusters: [{ name: 'c', server: 'https://127.0.0.1:1', skipTLSVerify: true }],
      users: [{ name: 'u', token: 't' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    const unreachable = new ClusterAuth({ kubeConfig: gone, nodeName, logger: silentLogger });
    await expect(unreachable.authenticateToken!('any')).rejects.toThrow();
    await expect(unreachable.authorize!(allowedUser, proxy)).rejects.toThrow();
    await expect(unreachable.authenticateToken!('any')).rejects.toThrow();
    expect(unreachable.reviews).toEqual({ tokens: 2, access: 1 });
  }, 60_000);
});

describe('ServingCertificateRequester: a kubelet-serving certificate the cluster issues (--rotate-server-certificates)', () => {
  it('serves a self-signed pair until an approver approves; then the cluster’s, for the node’s names; a denied request is said and asked again', async () => {
    const certDir = join(dir, 'pki');
    const logger = new RecordingLogger();
    const requester = new ServingCertificateRequester({
      kubeConfig: node,
      nodeName,
      addresses: ['192.0.2.44'],
      certDir,
      logger,
      pollMs: 200,
    });
    const certificates = admin.makeApiClient(CertificatesV1Api);
    const pending = async () =>
      (await certificates.listCertificateSigningRequest()).items.filter(
        (c) => c.spec.username === `system:node:${nodeName}` && c.status?.conditions === undefined,
      );
    /** What an approver (kubectl certificate approve/deny) writes. */
    const decide = (csr: V1CertificateSigningRequest, type: 'Approved' | 'Denied', message: string) =>
      certificates.replaceCertificateSigningRequestApproval({
        name: csr.metadata!.name!,
        body: { ...csr, status: { conditions: [{ type, status: 'True', reason: 'Test', message, lastUpdateTime: new Date() }] } },
      });
    try {
      const files = await requester.start();
      const first = new X509Certificate(await readFile(files.certFile));
      expect(first.issuer).toBe(first.subject);
      // The first request: denied, which is said; the requester asks again.
      const denied = await until('a request', async () => (await pending())[0]);
      expect(denied.spec).toMatchObject({ signerName: 'kubernetes.io/kubelet-serving', usages: ['digital signature', 'server auth'] });
      await decide(denied, 'Denied', 'not this one');
      const again = await until('a second request', async () => (await pending()).find((c) => c.metadata!.name !== denied.metadata!.name));
      expect(logger.at('warn').some((e) => /was denied: Test not this one/.test(e.message))).toBe(true);
      await decide(again, 'Approved', 'approved');
      const issued = await until('the issued certificate', async () => {
        const cert = new X509Certificate(await readFile(files.certFile));
        return cert.issuer !== cert.subject ? cert : undefined;
      });
      expect(issued.subject).toBe(`O=system:nodes\nCN=system:node:${nodeName}`);
      expect(issued.subjectAltName).toBe(`DNS:${nodeName}, IP Address:192.0.2.44`);
      expect(issued.checkIssued(new X509Certificate(cluster.ca.cert))).toBe(true);
      const key = (await import('node:crypto')).createPrivateKey(await readFile(files.keyFile));
      expect(issued.checkPrivateKey(key)).toBe(true);
      // A restart keeps the issued pair, and asks nothing.
      requester.close();
      const again2 = new ServingCertificateRequester({
        kubeConfig: node,
        nodeName,
        addresses: ['192.0.2.44'],
        certDir,
        logger,
        pollMs: 200,
      });
      await again2.start();
      again2.close();
      expect(new X509Certificate(await readFile(files.certFile)).serialNumber).toBe(issued.serialNumber);
      expect(await pending()).toEqual([]);
    } finally {
      requester.close();
    }
  }, 90_000);
});
