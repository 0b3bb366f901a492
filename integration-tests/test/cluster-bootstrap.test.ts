import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startControlPlane, type StartedControlPlane } from '@kubelet-ts/testkit';
import { AgentProcess } from './agent-process.js';
import { freePort, nodeFlags, until } from './cluster-helpers.js';
import { kubectlAs } from './kubectl.js';

/**
 * Joining a cluster with nothing but a bootstrap token (issue 45's TLS bootstrap): the agent asks
 * for its client certificate (a `kube-apiserver-client-kubelet` CSR), the real controller-manager
 * approves and signs it (the bindings `kubeadm init` makes), and the node registers as itself; the
 * Node authorizer then lets it read no Secret of a pod it does not run. On the in-memory runtime:
 * what is tested is how the node joins, not what it runs.
 */

const kubectl = kubectlAs;

let cluster: StartedControlPlane;
let dir: string;
const node = `bootstrap-node-${process.pid}`;
const admin = (...args: string[]) => kubectl(cluster.kubeconfigPath, ...args);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-e2e-bootstrap-'));
  cluster = await startControlPlane();
}, 240_000);

afterAll(async () => {
  await admin('delete', 'node', node, '--ignore-not-found').catch(() => undefined);
  await cluster?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('a node that joins with only a bootstrap token', () => {
  let agent: AgentProcess | undefined;
  afterAll(async () => {
    await agent?.stop();
  });

  it('asks for its client certificate, is approved and signed, registers Ready as itself, and is limited as a node', async () => {
    const kubeconfig = join(dir, 'kubelet.kubeconfig');
    const certDir = join(dir, 'pki');
    const port = await freePort();
    const flags = [
      '--runtime',
      'memory',
      ...nodeFlags(kubeconfig, node, port),
      '--bootstrap-kubeconfig',
      await cluster.bootstrapKubeconfig(),
      '--cert-dir',
      certDir,
      '--rotate-certificates',
    ];
    agent = new AgentProcess(flags);
    await until('the node Ready', async () => {
      const r = await admin('get', 'node', node, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}');
      return r.stdout === 'True' ? true : undefined;
    });
    // The request, approved by the controller-manager (no one else here approves anything).
    const csrs = JSON.parse((await admin('get', 'csr', '-o', 'json')).stdout) as {
      items: Array<{
        spec: { signerName: string; username: string; groups: string[] };
        status: { conditions?: Array<{ type: string; reason: string }> };
      }>;
    };
    const mine = csrs.items.filter((c) => c.spec.signerName === 'kubernetes.io/kube-apiserver-client-kubelet');
    expect(mine).toHaveLength(1);
    expect(mine[0]!.spec.groups).toContain('system:bootstrappers:kubeadm:default-node-token');
    expect(mine[0]!.status.conditions).toEqual([expect.objectContaining({ type: 'Approved', reason: 'AutoApproved' })]);
    // Its certificate, the cluster's, for the node; the kubeconfig written names it.
    const pem = await readFile(join(certDir, 'kubelet-client-current.pem'), 'utf8');
    const cert = new X509Certificate(pem);
    expect(cert.subject).toBe(`O=system:nodes\nCN=system:node:${node}`);
    expect(cert.checkIssued(new X509Certificate(cluster.ca.cert))).toBe(true);
    expect(await readFile(kubeconfig, 'utf8')).toContain(`client-certificate: "${join(certDir, 'kubelet-client-current.pem')}"`);
    // As that node: its own Node, yes; a Secret no pod of its uses, no (the Node authorizer).
    await admin('create', 'secret', 'generic', `not-for-${node}`, '--from-literal=k=v', '-n', 'default');
    expect((await kubectl(kubeconfig, 'get', 'node', node)).code).toBe(0);
    const secret = await kubectl(kubeconfig, 'get', 'secret', `not-for-${node}`, '-n', 'default');
    expect(secret.code).not.toBe(0);
    expect(secret.stderr).toContain(`User "system:node:${node}" cannot get resource "secrets"`);

    // Started again: the kubeconfig it wrote is used, nothing asked.
    await agent.stop();
    agent = new AgentProcess(flags);
    await agent.serverUrl();
    await until('the node Ready again', async () => {
      const r = await admin('get', 'node', node, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}');
      return r.stdout === 'True' ? true : undefined;
    });
    const after = JSON.parse((await admin('get', 'csr', '-o', 'json')).stdout) as { items: Array<{ spec: { signerName: string } }> };
    expect(after.items.filter((c) => c.spec.signerName === 'kubernetes.io/kube-apiserver-client-kubelet')).toHaveLength(1);
  }, 120_000);

  it('with a token the cluster does not know: no node, and why, said and tried again', async () => {
    const bootstrap = join(dir, 'wrong-bootstrap.kubeconfig');
    await writeFile(
      bootstrap,
      (await readFile(await cluster.bootstrapKubeconfig(), 'utf8')).replace(/token: ".*"/, 'token: "abcdef.0123456789abcdef"'),
    );
    const other = `${node}-refused`;
    const refused = new AgentProcess([
      '--runtime',
      'memory',
      ...nodeFlags(join(dir, 'refused.kubeconfig'), other, await freePort()),
      '--bootstrap-kubeconfig',
      bootstrap,
      '--cert-dir',
      join(dir, 'pki-refused'),
    ]);
    try {
      await refused.until(
        () => refused.lines.filter((l) => String(l.msg).startsWith('cannot get a client certificate')).length >= 2,
        'two refused requests',
        20_000,
      );
      expect(refused.lines.find((l) => String(l.msg).startsWith('cannot get a client certificate'))?.['status']).toBe(401);
      expect((await admin('get', 'node', other)).code).not.toBe(0);
    } finally {
      await refused.stop();
    }
  }, 60_000);
});
