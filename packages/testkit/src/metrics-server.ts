import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type StartedNetwork, type StartedTestContainer, Wait } from 'testcontainers';
import { type CertificateAuthority, type CertificatePair, makePair } from './certificates.js';
import { buildMetricsServer } from './control-plane-binaries.js';
import { containerLogs, LoopbackContainer, removeContainer, TESTKIT_LABEL } from './containers.js';
import { localImage } from './local-images.js';
import { type AdminApi, adminRequest, applyObject } from './admin-api.js';

/** What `startMetricsServer` takes: further flags, and how long its APIService may take to become Available. */
export interface MetricsServerOptions {
  /**
   * Further metrics-server flags (`--name=value`), after the testkit's own: a later flag wins. The
   * testkit's `--metric-resolution=10s` is the smallest v0.8.0 accepts.
   */
  readonly flags?: readonly string[];
  /** How long the APIService `v1beta1.metrics.k8s.io` may take to become Available (default 60 s). */
  readonly availableTimeoutMs?: number;
}

/** A metrics-server started by `StartedControlPlane.startMetricsServer`. */
export interface StartedMetricsServer {
  /** The release it reports, e.g. `v0.8.0`. */
  readonly release: string;
  /** Its address on the control plane's network, which its `Endpoints` name (the API server dials it there). */
  readonly address: string;
  /** Its secure port on that address. */
  readonly port: number;
  /** The last lines it printed. */
  logs(lines?: number): Promise<string>;
  /**
   * Removes its container, then its APIService, Service and Endpoints, so that discovery does not
   * go on reporting an unavailable group (its RBAC objects are left: they grant nothing to anyone
   * else). Calling it again does nothing.
   */
  stop(): Promise<void>;
}

/** What of a started control plane metrics-server needs (control-plane.ts passes it). */
export interface MetricsServerContext {
  readonly server: string;
  readonly ca: CertificateAuthority;
  readonly admin: CertificatePair;
  readonly network: StartedNetwork;
  /** The control plane's certificate folder on the host, mounted read-only at `pkiMount`. */
  readonly pkiDir: string;
  readonly pkiMount: string;
  /** A kubeconfig for `https://apiserver:6443` (the API server on the network) with this client pair. */
  inClusterKubeconfig(user: string, pair: CertificatePair): string;
  /** Adds a container to those the control plane's `stop()` removes, or takes it off again. */
  track(container: StartedTestContainer): void;
  untrack(container: StartedTestContainer): void;
}

/** metrics-server's secure port (its upstream manifests use 10250 too). */
export const METRICS_SERVER_PORT = 10250;
const USER = 'system:metrics-server';
const API_SERVICE = 'v1beta1.metrics.k8s.io';
const FIELD_MANAGER = 'kubelet-ts-testkit';

/**
 * Starts metrics-server as a container on the control plane's network and registers it as the
 * aggregated API `metrics.k8s.io` (see `StartedControlPlane.startMetricsServer`).
 */
export async function startMetricsServer(context: MetricsServerContext, options: MetricsServerOptions = {}): Promise<StartedMetricsServer> {
  const binary = await buildMetricsServer();
  const image = await localImage({
    tag: `kubelet-ts-test/metrics-server:${binary.release}-${binary.stamp}`,
    binaries: [{ source: binary.path, target: '/metrics-server' }],
  });
  const { pkiDir, pkiMount: pki } = context;
  const pair = await makePair(pkiDir, 'metrics-server', context.ca, { commonName: USER });
  await writeFile(join(pkiDir, 'metrics-server.kubeconfig'), context.inClusterKubeconfig(USER, pair));
  const api: AdminApi = (method: string, path: string, body?: unknown) => adminRequest(context, method, path, body);
  // Who metrics-server is allowed to be, as its upstream components.yaml grants it, before it starts:
  // it reads the authentication ConfigMap and nodes as soon as it is up.
  for (const [path, object] of rbacObjects()) await applyObject(api, path, object, FIELD_MANAGER);

  const printed: string[] = [];
  let container: StartedTestContainer;
  try {
    container = await new LoopbackContainer(image, 'metrics-server')
      .withLabels({ [`${TESTKIT_LABEL}.component`]: 'metrics-server' })
      .withNetwork(context.network)
      .withNetworkAliases('metrics-server')
      .withBindMounts([{ source: pkiDir, target: pki, mode: 'ro' }])
      .withTmpFs({ '/tmp': 'rw' })
      .withLogConsumer((stream) =>
        stream.on('data', (chunk: Buffer | string) => {
          printed.push(...chunk.toString().split('\n').filter(Boolean));
          printed.splice(0, Math.max(0, printed.length - 20));
        }),
      )
      .withCommand([
        '/metrics-server',
        `--kubeconfig=${pki}/metrics-server.kubeconfig`,
        `--authentication-kubeconfig=${pki}/metrics-server.kubeconfig`,
        `--authorization-kubeconfig=${pki}/metrics-server.kubeconfig`,
        `--secure-port=${METRICS_SERVER_PORT}`,
        // Its own self-signed serving pair, written where it may write (a tmpfs).
        '--cert-dir=/tmp',
        // What the aggregator's proxied requests carry: the front-proxy client's certificate and
        // the user in headers (the same as the API server publishes in kube-system's
        // extension-apiserver-authentication ConfigMap, given here so nothing depends on reading it).
        `--requestheader-client-ca-file=${pki}/front-proxy-ca.pem`,
        '--requestheader-allowed-names=front-proxy-client',
        '--requestheader-username-headers=X-Remote-User',
        '--requestheader-group-headers=X-Remote-Group',
        '--requestheader-extra-headers-prefix=X-Remote-Extra-',
        // A node's serving certificate is self-signed (the kubelet's is, without
        // --rotate-server-certificates), and a node publishes the address it is reached at as
        // InternalIP and its port in status.daemonEndpoints.
        '--kubelet-insecure-tls',
        '--kubelet-preferred-address-types=InternalIP',
        '--kubelet-use-node-status-port',
        // The smallest resolution v0.8.0 accepts (10 s), so that tests see figures soon; it also
        // requires resolution × 0.9 ≥ the kubelet request timeout (default 10 s), hence 5 s.
        '--metric-resolution=10s',
        '--kubelet-request-timeout=5s',
        ...(options.flags ?? []),
      ])
      .withWaitStrategy(Wait.forLogMessage(/Serving securely on/))
      .withStartupTimeout(60_000)
      .start();
  } catch (error) {
    throw new Error(`metrics-server did not start: ${(error as Error).message}\nmetrics-server:\n${printed.join('\n')}`, {
      cause: error,
    });
  }
  context.track(container);
  let stopped = false;
  const remove = async () => {
    stopped = true;
    context.untrack(container);
    await removeContainer(container);
  };
  try {
    const address = container.getIpAddress(context.network.getName());
    for (const [path, object] of serviceObjects(address)) await applyObject(api, path, object, FIELD_MANAGER);
    await untilAvailable(api, options.availableTimeoutMs ?? 60_000);
    return {
      release: binary.release,
      address,
      port: METRICS_SERVER_PORT,
      logs: (lines = 50) => containerLogs(container, lines),
      async stop() {
        if (stopped) return;
        await remove();
        await unregister(api);
      },
    };
  } catch (error) {
    const logs = await containerLogs(container, 20).catch(() => printed.join('\n'));
    await remove();
    await unregister(api).catch(() => undefined);
    throw new Error(`${(error as Error).message}\nmetrics-server's last lines:\n${logs}`, { cause: error });
  }
}

async function unregister(api: AdminApi): Promise<void> {
  for (const path of [
    `/apis/apiregistration.k8s.io/v1/apiservices/${API_SERVICE}`,
    '/api/v1/namespaces/kube-system/services/metrics-server',
    '/api/v1/namespaces/kube-system/endpoints/metrics-server',
  ]) {
    const answer = await api('DELETE', path);
    if (answer.status !== 200 && answer.status !== 202 && answer.status !== 404)
      throw new Error(`deleting ${path}: ${answer.status} ${answer.body}`);
  }
}

/** Polls the APIService until its condition Available is True; fails with the condition's last reason. */
async function untilAvailable(api: AdminApi, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  let last = 'no status yet';
  for (;;) {
    const answer = await api('GET', `/apis/apiregistration.k8s.io/v1/apiservices/${API_SERVICE}`).catch((error: Error) => ({
      status: 0,
      body: error.message,
    }));
    if (answer.status === 200) {
      const conditions = (JSON.parse(answer.body) as { status?: { conditions?: Condition[] } }).status?.conditions ?? [];
      const available = conditions.find((c) => c.type === 'Available');
      if (available?.status === 'True') return;
      if (available !== undefined) last = `${available.reason ?? ''}: ${available.message ?? ''}`;
    } else {
      last = `${answer.status} ${answer.body}`;
    }
    if (Date.now() > deadline) throw new Error(`the APIService ${API_SERVICE} did not become Available within ${ms / 1000} s (${last})`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

interface Condition {
  readonly type: string;
  readonly status: string;
  readonly reason?: string;
  readonly message?: string;
}

const rbac = 'rbac.authorization.k8s.io';
const subject = { kind: 'User', apiGroup: rbac, name: USER };

/** metrics-server's RBAC, as in its upstream manifests (components.yaml), its subject the user of its client certificate. */
function rbacObjects(): Array<[string, unknown]> {
  const clusterRole = (name: string, labels: Record<string, string>, rules: unknown[]): [string, unknown] => [
    `/apis/${rbac}/v1/clusterroles/${name}`,
    { apiVersion: `${rbac}/v1`, kind: 'ClusterRole', metadata: { name, labels }, rules },
  ];
  const clusterRoleBinding = (name: string, role: string): [string, unknown] => [
    `/apis/${rbac}/v1/clusterrolebindings/${name}`,
    {
      apiVersion: `${rbac}/v1`,
      kind: 'ClusterRoleBinding',
      metadata: { name },
      roleRef: { apiGroup: rbac, kind: 'ClusterRole', name: role },
      subjects: [subject],
    },
  ];
  return [
    clusterRole(
      'system:aggregated-metrics-reader',
      {
        'k8s-app': 'metrics-server',
        'rbac.authorization.k8s.io/aggregate-to-admin': 'true',
        'rbac.authorization.k8s.io/aggregate-to-edit': 'true',
        'rbac.authorization.k8s.io/aggregate-to-view': 'true',
      },
      [{ apiGroups: ['metrics.k8s.io'], resources: ['pods', 'nodes'], verbs: ['get', 'list', 'watch'] }],
    ),
    clusterRole('system:metrics-server', { 'k8s-app': 'metrics-server' }, [
      { apiGroups: [''], resources: ['nodes/metrics'], verbs: ['get'] },
      { apiGroups: [''], resources: ['pods', 'nodes'], verbs: ['get', 'list', 'watch'] },
    ]),
    [
      `/apis/${rbac}/v1/namespaces/kube-system/rolebindings/metrics-server-auth-reader`,
      {
        apiVersion: `${rbac}/v1`,
        kind: 'RoleBinding',
        metadata: { name: 'metrics-server-auth-reader', namespace: 'kube-system' },
        roleRef: { apiGroup: rbac, kind: 'Role', name: 'extension-apiserver-authentication-reader' },
        subjects: [subject],
      },
    ],
    clusterRoleBinding('metrics-server:system:auth-delegator', 'system:auth-delegator'),
    clusterRoleBinding('system:metrics-server', 'system:metrics-server'),
  ];
}

/**
 * A Service without selector and the Endpoints naming the container (the API server runs with
 * --enable-aggregator-routing, so it dials the endpoint, never the Service's address; the
 * controller-manager mirrors the Endpoints into the EndpointSlice the aggregator reads), and the
 * APIService.
 */
function serviceObjects(address: string): Array<[string, unknown]> {
  const metadata = { name: 'metrics-server', namespace: 'kube-system', labels: { 'k8s-app': 'metrics-server' } };
  return [
    [
      '/api/v1/namespaces/kube-system/services/metrics-server',
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata,
        spec: { ports: [{ name: 'https', port: 443, protocol: 'TCP', targetPort: METRICS_SERVER_PORT }] },
      },
    ],
    [
      '/api/v1/namespaces/kube-system/endpoints/metrics-server',
      {
        apiVersion: 'v1',
        kind: 'Endpoints',
        metadata,
        subsets: [{ addresses: [{ ip: address }], ports: [{ name: 'https', port: METRICS_SERVER_PORT, protocol: 'TCP' }] }],
      },
    ],
    [
      `/apis/apiregistration.k8s.io/v1/apiservices/${API_SERVICE}`,
      {
        apiVersion: 'apiregistration.k8s.io/v1',
        kind: 'APIService',
        metadata: { name: API_SERVICE, labels: { 'k8s-app': 'metrics-server' } },
        spec: {
          group: 'metrics.k8s.io',
          version: 'v1beta1',
          service: { name: 'metrics-server', namespace: 'kube-system', port: 443 },
          insecureSkipTLSVerify: true,
          groupPriorityMinimum: 100,
          versionPriority: 100,
        },
      },
    ],
  ];
}
