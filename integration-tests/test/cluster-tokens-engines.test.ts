import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startControlPlane, type StartedControlPlane } from '@kubelet-ts/testkit';
import { parse as parseYaml } from 'yaml';
import { AgentProcess } from './agent-process.js';
import { AGENT_ENGINES, type AgentEngine } from './agent-engines.js';
import { freePort, machineAddress, nodeFlags, until } from './cluster-helpers.js';
import { kubectlAs, kubectlOk as kubectl } from './kubectl.js';

/**
 * Service-account tokens for the pods an API server binds to the node (issue 45): the projected
 * `kube-api-access-*` volume the API server's ServiceAccount admission adds to every pod (a token by
 * TokenRequest, bound to the pod; the `kube-root-ca.crt` ConfigMap; the namespace), the API
 * server's and the namespace's service variables, and a pod that calls the API server with its
 * token, at an address this machine owns (`--pod-api-server`), getting the RBAC answer. The
 * corpus's two token pods run as given through the API. On Docker and on containerd, against the
 * real kube-apiserver and controller-manager, read with kubectl.
 */

const TOKEN_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
/** This machine's kubectl: a static binary, which the caller pod runs from a hostPath. */
const KUBECTL = execFileSync('sh', ['-c', 'command -v kubectl'], { encoding: 'utf8' }).trim();

let cluster: StartedControlPlane;
let dir: string;
const k = (...args: string[]) => kubectl(cluster.kubeconfigPath, ...args);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-e2e-tokens-'));
  // Published on this machine's address too: where the pods, in network namespaces of their own, reach it.
  cluster = await startControlPlane({ apiServerAlsoOn: machineAddress() });
}, 240_000);

afterAll(async () => {
  await cluster?.stop();
  await rm(dir, { recursive: true, force: true });
});

/** A corpus Pod as the API would be given it: on this node, its image the local busybox, sleeping. */
async function corpusPod(file: string, node: string, namespace: string, busybox: string): Promise<Record<string, unknown>> {
  const pod = parseYaml(await readFile(new URL(`./fixtures/corpus/${file}`, import.meta.url), 'utf8')) as {
    metadata: Record<string, unknown>;
    spec: { containers: Array<Record<string, unknown>> } & Record<string, unknown>;
  };
  return {
    ...pod,
    metadata: { ...pod.metadata, namespace },
    spec: {
      ...pod.spec,
      nodeName: node,
      terminationGracePeriodSeconds: 1,
      containers: pod.spec.containers.map((c) => ({ ...c, image: busybox, imagePullPolicy: 'IfNotPresent', command: ['sleep', '3600'] })),
    },
  };
}

describe.each(AGENT_ENGINES)('service-account tokens from the API, on $name', (engine: AgentEngine) => {
  const short = engine.name.split(' ')[0]!.toLowerCase();
  const node = `tokens-${short}-${process.pid}`;
  const ns = `tokens-${short}`;
  let agent: AgentProcess | undefined;
  const kn = (...args: string[]) => k('-n', ns, ...args);
  const apply = async (name: string, object: unknown) => {
    const file = join(dir, `${ns}-${name}.json`);
    await writeFile(file, JSON.stringify(object));
    await k('apply', '-f', file);
  };
  /** What the TokenReview API says of `token` (for `audiences`, or the API server's own). */
  const review = async (token: string, audiences?: string[]) => {
    const file = join(dir, `${ns}-review.json`);
    await writeFile(
      file,
      JSON.stringify({
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenReview',
        spec: { token, ...(audiences === undefined ? {} : { audiences }) },
      }),
    );
    return JSON.parse(await k('create', '-o', 'json', '-f', file)) as {
      status: { authenticated?: boolean; user?: { username: string; extra?: Record<string, string[]> }; audiences?: string[] };
    };
  };
  const ready = (name: string) =>
    until(
      `${name} running`,
      async () => ((await kn('get', 'pod', name, '-o', 'jsonpath={.status.containerStatuses[0].ready}')) === 'true' ? true : undefined),
      90_000,
    );
  const inPod = (pod: string, script: string) => kubectlAs(cluster.kubeconfigPath, '-n', ns, 'exec', pod, '--', 'sh', '-c', script);

  beforeAll(async () => {
    const prepared = await engine.prepare();
    const reachable = cluster.podReachable!;
    agent = new AgentProcess([
      ...prepared.flags,
      ...nodeFlags(await cluster.nodeKubeconfig(node), node, await freePort()),
      '--client-ca-file',
      cluster.ca.certFile,
      '--pod-api-server',
      `${reachable.host}:${reachable.port}`,
      // The caller runs this machine's kubectl (a static binary) from a hostPath.
      '--allow-host-mounts',
    ]);
    await agent.serverUrl();
    await until('the node Ready', async () =>
      (await k('get', 'node', node, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')) === 'True' ? true : undefined,
    );
    await k('create', 'namespace', ns);
    await until('the namespace’s default service account', async () =>
      (await kubectlAs(cluster.kubeconfigPath, '-n', ns, 'get', 'serviceaccount', 'default')).code === 0 ? true : undefined,
    );
    await kn('create', 'service', 'clusterip', 'web-front', '--tcp=8080:80');
    const pod = (name: string, extra: Record<string, unknown> = {}) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: ns },
      spec: {
        nodeName: node,
        terminationGracePeriodSeconds: 1,
        containers: [{ name: 'main', image: prepared.busybox, imagePullPolicy: 'IfNotPresent', command: ['sleep', '3600'] }],
        ...extra,
      },
    });
    // The API server adds the kube-api-access volume to both (automountServiceAccountToken is not false).
    await apply(
      'caller',
      pod('caller', {
        volumes: [{ name: 'kubectl', hostPath: { path: KUBECTL, type: 'File' } }],
        containers: [
          {
            name: 'main',
            image: prepared.busybox,
            imagePullPolicy: 'IfNotPresent',
            command: ['sleep', '3600'],
            volumeMounts: [{ name: 'kubectl', mountPath: '/kubectl', readOnly: true }],
          },
        ],
      }),
    );
    await apply('unlinked', pod('unlinked', { enableServiceLinks: false }));
    await apply(
      'sa-token-test',
      await corpusPod('074-website-projected-service-account-token-sa-token-test.yaml', node, ns, prepared.busybox),
    );
    await apply('nginx', await corpusPod('045-website-pod-projected-svc-token-nginx.yaml', node, ns, prepared.busybox));
  }, 180_000);

  afterAll(async () => {
    await agent?.stop();
    await k('delete', 'rolebinding', '-n', 'default', `tokens-${short}`, '--ignore-not-found').catch(() => undefined);
    await k('delete', 'namespace', ns, '--ignore-not-found', '--wait=false').catch(() => undefined);
    await k('delete', 'node', node, '--ignore-not-found').catch(() => undefined);
    await engine.cleanUp(node);
  });

  it('mounts the projected kube-api-access volume: a token bound to the pod, the cluster CA, the namespace', async () => {
    await ready('caller');
    const volumes = await kn('get', 'pod', 'caller', '-o', 'jsonpath={.spec.volumes[*].name}');
    expect(volumes).toMatch(/(^| )kube-api-access-[a-z0-9]+( |$)/);
    expect((await inPod('caller', `cat ${TOKEN_DIR}/namespace`)).stdout).toBe(ns);
    // kube-root-ca.crt, which the controller-manager publishes in every namespace: the cluster's CA.
    expect((await inPod('caller', `cat ${TOKEN_DIR}/ca.crt`)).stdout.trim()).toBe(cluster.ca.cert.trim());
    // The API server's defaultMode (420), on a tmpfs.
    expect((await inPod('caller', `stat -L -c %a ${TOKEN_DIR}/token`)).stdout).toBe('644\n');
    expect((await inPod('caller', `awk '$2 == "${TOKEN_DIR}" { print $3 }' /proc/mounts`)).stdout).toBe('tmpfs\n');
    const token = (await inPod('caller', `cat ${TOKEN_DIR}/token`)).stdout;
    const reviewed = await review(token);
    expect(reviewed.status.authenticated).toBe(true);
    expect(reviewed.status.user?.username).toBe(`system:serviceaccount:${ns}:default`);
    // Bound to this pod (the API server's claims name it), so it dies with it.
    const uid = await kn('get', 'pod', 'caller', '-o', 'jsonpath={.metadata.uid}');
    expect(reviewed.status.user?.extra?.['authentication.kubernetes.io/pod-name']).toEqual(['caller']);
    expect(reviewed.status.user?.extra?.['authentication.kubernetes.io/pod-uid']).toEqual([uid]);
    expect(reviewed.status.user?.extra?.['authentication.kubernetes.io/node-name']).toEqual([node]);
    // No token reaches the agent's log.
    expect(agent!.lines.some((l) => JSON.stringify(l).includes(token.slice(-40)))).toBe(false);
  }, 120_000);

  it('gives the API server’s variables (where the pods reach it) and the namespace’s services; not the services with enableServiceLinks false', async () => {
    await ready('caller');
    await ready('unlinked');
    const reachable = cluster.podReachable!;
    const clusterIp = await kn('get', 'service', 'web-front', '-o', 'jsonpath={.spec.clusterIP}');
    const env = (pod: string) =>
      inPod(pod, 'env').then((r) =>
        Object.fromEntries(
          r.stdout
            .trim()
            .split('\n')
            .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
        ),
      );
    const linked = await env('caller');
    expect(linked).toMatchObject({
      KUBERNETES_SERVICE_HOST: reachable.host,
      KUBERNETES_SERVICE_PORT: String(reachable.port),
      KUBERNETES_SERVICE_PORT_HTTPS: String(reachable.port),
      KUBERNETES_PORT: `tcp://${reachable.host}:${reachable.port}`,
      WEB_FRONT_SERVICE_HOST: clusterIp,
      WEB_FRONT_SERVICE_PORT: '8080',
      WEB_FRONT_SERVICE_PORT_8080_80: '8080',
      WEB_FRONT_PORT: `tcp://${clusterIp}:8080`,
      WEB_FRONT_PORT_8080_TCP_ADDR: clusterIp,
    });
    const unlinked = await env('unlinked');
    expect(unlinked['KUBERNETES_SERVICE_HOST']).toBe(reachable.host);
    expect(unlinked['WEB_FRONT_SERVICE_HOST']).toBeUndefined();
  }, 120_000);

  it('a pod calls the API server with its token: 403 for the default account, 200 once it is bound to a role', async () => {
    await ready('caller');
    // kubectl in the pod configures itself as client-go's InClusterConfig does: the API server at
    // KUBERNETES_SERVICE_HOST:KUBERNETES_SERVICE_PORT, verified with ca.crt, called with the token.
    const call = 'HOME=/tmp /kubectl get --raw /api/v1/namespaces/default/pods 2>&1';
    const refused = await inPod('caller', call);
    expect(refused.code).not.toBe(0);
    expect(refused.stdout).toContain(
      `Error from server (Forbidden): pods is forbidden: User "system:serviceaccount:${ns}:default" cannot list resource "pods" in API group "" in the namespace "default"`,
    );
    await k('create', 'rolebinding', '-n', 'default', `tokens-${short}`, '--clusterrole=view', `--serviceaccount=${ns}:default`);
    const allowed = await until('the call allowed', async () => {
      const r = await inPod('caller', call);
      return r.code === 0 ? r.stdout : undefined;
    });
    expect(JSON.parse(allowed)).toMatchObject({ kind: 'PodList', apiVersion: 'v1' });
  }, 120_000);

  it('runs the corpus’s token pods as the API gives them: tokens for their audiences, at their paths', async () => {
    await ready('sa-token-test');
    await ready('nginx');
    const apiToken = (await inPod('sa-token-test', 'cat /service-account/token')).stdout;
    const vaultToken = (await inPod('nginx', 'cat /var/run/secrets/tokens/vault-token')).stdout;
    expect((await review(apiToken, ['api'])).status).toMatchObject({ authenticated: true, audiences: ['api'] });
    expect((await review(vaultToken, ['vault'])).status).toMatchObject({ authenticated: true, audiences: ['vault'] });
    // A token is for its audience only.
    expect((await review(apiToken, ['vault'])).status.authenticated ?? false).toBe(false);
  }, 120_000);

  it('a pod’s token stops working once the pod is gone (bound to it)', async () => {
    await ready('sa-token-test');
    const token = (await inPod('sa-token-test', 'cat /service-account/token')).stdout;
    expect((await review(token, ['api'])).status.authenticated).toBe(true);
    await kn('delete', 'pod', 'sa-token-test', '--wait=true', '--timeout=60s');
    // The API server keeps a token's good review for 10 s: then it is refused.
    await until(
      'the token refused',
      async () => ((await review(token, ['api'])).status.authenticated ?? false) === false || undefined,
      30_000,
    );
  }, 90_000);
});
