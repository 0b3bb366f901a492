import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { AuthenticationV1Api, CoreV1Api, KubeConfig, VersionApi } from '@kubernetes/client-node';
import {
  independentDocker,
  kubeconfigYaml,
  startControlPlane,
  type StartedControlPlane,
  TestCertificates,
  TESTKIT_LABEL,
} from '../src/index.js';

/** kubectl, a client that is not ours, with the kubeconfig given; resolves with its output or rejects with its stderr. */
function kubectl(kubeconfig: string, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('kubectl', ['--kubeconfig', kubeconfig, ...args], { timeout: 30_000 }, (error, stdout, stderr) => {
      if ((error as NodeJS.ErrnoException | null)?.code === 'ENOENT')
        return reject(new Error('kubectl is not on PATH: apt-get install -y kubernetes-client (npm test installs it)'));
      if (error !== null) return reject(new Error(`kubectl ${args.join(' ')}: ${stderr}`));
      resolve(stdout);
    });
  });
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms / 1000} s`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

function client(kubeconfig: string): KubeConfig {
  const config = new KubeConfig();
  config.loadFromString(kubeconfig);
  return config;
}

describe('startControlPlane', () => {
  let cluster: StartedControlPlane;
  let admin: KubeConfig;
  let started: number;

  beforeAll(async () => {
    const at = Date.now();
    cluster = await startControlPlane();
    started = Date.now() - at;
    admin = client(cluster.kubeconfig);
  }, 180_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  it('serves a ready API server of the pinned release on 127.0.0.1, started within a minute', async () => {
    expect(cluster.server).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(started).toBeLessThan(60_000);
    expect(await kubectl(cluster.kubeconfigPath, ['get', '--raw', '/readyz'])).toBe('ok');
    const version = await admin.makeApiClient(VersionApi).getCode();
    expect(version.gitVersion).toBe(cluster.release);
    expect(cluster.release).toMatch(/^v1\.\d+\.\d+$/);
  });

  it('publishes its ports on loopback only', async () => {
    const docker = independentDocker();
    const ours = await docker.listContainers({ filters: { label: [`${TESTKIT_LABEL}=control-plane`] } });
    expect(ours.map((c) => c.Labels[`${TESTKIT_LABEL}.component`]).sort()).toEqual([
      'etcd',
      'kube-apiserver',
      'kube-controller-manager',
      'kube-scheduler',
    ]);
    const published = ours.flatMap((c) => c.Ports.filter((p) => p.PublicPort !== undefined));
    expect(published.length).toBeGreaterThan(0);
    for (const port of published) expect(port.IP).toBe('127.0.0.1');
  });

  it('has no node, and a pod bound to a node that does not exist stays Pending', async () => {
    expect(await kubectl(cluster.kubeconfigPath, ['get', 'nodes', '-o', 'name'])).toBe('');
    const core = admin.makeApiClient(CoreV1Api);
    await core.createNamespacedPod({
      namespace: 'default',
      body: {
        metadata: { name: 'bound-to-ghost' },
        spec: { nodeName: 'ghost', containers: [{ name: 'c', image: 'kubelet-ts-test/busybox:1', command: ['sleep', '60'] }] },
      },
    });
    // Long enough for the controllers to act on it, were anything to act.
    await new Promise((r) => setTimeout(r, 5_000));
    const pod = await core.readNamespacedPod({ namespace: 'default', name: 'bound-to-ghost' });
    expect(pod.status?.phase).toBe('Pending');
    expect(pod.spec?.nodeName).toBe('ghost');
    expect(pod.status?.containerStatuses ?? []).toEqual([]);
  });

  it('runs the controller-manager: the default service account and kube-root-ca.crt appear', async () => {
    const core = admin.makeApiClient(CoreV1Api);
    const account = await until('the default service account', async () =>
      core.readNamespacedServiceAccount({ namespace: 'default', name: 'default' }),
    );
    expect(account.metadata?.name).toBe('default');
    const rootCa = await until('kube-root-ca.crt', async () =>
      core.readNamespacedConfigMap({ namespace: 'default', name: 'kube-root-ca.crt' }),
    );
    expect(rootCa.data?.['ca.crt']?.trim()).toBe(cluster.ca.cert.trim());
  });

  it('runs the scheduler: an unbound pod is left Unschedulable, as there is no node', async () => {
    const core = admin.makeApiClient(CoreV1Api);
    await core.createNamespacedPod({
      namespace: 'default',
      body: { metadata: { name: 'unbound' }, spec: { containers: [{ name: 'c', image: 'kubelet-ts-test/busybox:1' }] } },
    });
    const condition = await until('the scheduler to give up on it', async () => {
      const pod = await core.readNamespacedPod({ namespace: 'default', name: 'unbound' });
      return pod.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.reason === 'Unschedulable');
    });
    expect(condition.status).toBe('False');
  });

  it('gives the kubernetes Service an address on loopback, which never leaves the machine', async () => {
    const service = await admin.makeApiClient(CoreV1Api).readNamespacedService({ namespace: 'default', name: 'kubernetes' });
    expect(cluster.serviceClusterIpRange.startsWith('127.')).toBe(true);
    expect(service.spec?.clusterIP).toMatch(/^127\.96\.0\.1$/);
  });

  it("gives a node's kubeconfig the identity system:node:<name>, which may write its own Node and no other", async () => {
    const path = await cluster.nodeKubeconfig('n1');
    const whoami = JSON.parse(await kubectl(path, ['auth', 'whoami', '-o', 'json'])) as {
      status: { userInfo: { username: string; groups: string[] } };
    };
    expect(whoami.status.userInfo.username).toBe('system:node:n1');
    expect(whoami.status.userInfo.groups).toContain('system:nodes');
    const node = new KubeConfig();
    node.loadFromFile(path);
    const review = await node.makeApiClient(AuthenticationV1Api).createSelfSubjectReview({ body: {} });
    expect(review.status?.userInfo?.username).toBe('system:node:n1');
    const core = node.makeApiClient(CoreV1Api);
    const created = await core.createNode({ body: { metadata: { name: 'n1' } } });
    expect(created.metadata?.name).toBe('n1');
    // NodeRestriction: a node may not create another node's Node.
    await expect(core.createNode({ body: { metadata: { name: 'n2' } } })).rejects.toMatchObject({ code: 403 });
    // The Node authorizer: nor list Secrets.
    await expect(core.listNamespacedSecret({ namespace: 'default' })).rejects.toMatchObject({ code: 403 });
    expect(await kubectl(cluster.kubeconfigPath, ['get', 'nodes', '-o', 'name'])).toBe('node/n1\n');
  });

  it('refuses a client whose certificate another CA signed', async () => {
    const certs = await TestCertificates.create();
    try {
      const foreign = kubeconfigYaml(cluster.server, cluster.ca, 'intruder', certs.otherClient);
      await expect(client(foreign).makeApiClient(CoreV1Api).listNamespace()).rejects.toMatchObject({ code: 401 });
    } finally {
      await certs.destroy();
    }
  });
});

describe('startControlPlane: stop', () => {
  it('removes every container, the network and the temp folder it made', async () => {
    const docker = independentDocker();
    const before = await docker.listNetworks();
    const cluster = await startControlPlane();
    const ids = (await docker.listContainers({ all: true, filters: { label: [`${TESTKIT_LABEL}=control-plane`] } })).map((c) => c.Id);
    expect(ids.length).toBe(4);
    const networks = (await docker.listNetworks()).filter((n) => !before.some((b) => b.Id === n.Id));
    expect(networks.length).toBe(1);
    const kubeconfigPath = cluster.kubeconfigPath;
    const nodeKubeconfig = await cluster.nodeKubeconfig('y'); // a name YAML would read as a boolean
    expect(await kubectl(nodeKubeconfig, ['auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}'])).toBe('system:node:y');
    await cluster.stop();
    const left = await docker.listContainers({ all: true, filters: { label: [`${TESTKIT_LABEL}=control-plane`] } });
    expect(left.filter((c) => ids.includes(c.Id))).toEqual([]);
    expect((await docker.listNetworks()).filter((n) => n.Id === networks[0]!.Id)).toEqual([]);
    expect(existsSync(kubeconfigPath)).toBe(false);
    expect(existsSync(nodeKubeconfig)).toBe(false);
  }, 180_000);
});
