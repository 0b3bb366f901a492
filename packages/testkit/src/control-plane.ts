import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Network, type StartedNetwork, type StartedTestContainer, Wait } from 'testcontainers';
import { type CertificateAuthority, type CertificatePair, makeCa, makePair } from './certificates.js';
import { buildControlPlane, type ControlPlaneBinaries } from './control-plane-binaries.js';
import { configureTestcontainers, containerLogs, LoopbackContainer, removeContainer, TESTKIT_LABEL } from './containers.js';
import { localImage } from './local-images.js';
import { type AdminApi, type AdminCredentials, adminRequest, applyObject } from './admin-api.js';
import { type MetricsServerOptions, type StartedMetricsServer, startMetricsServer } from './metrics-server.js';
import { freePort } from './etcd-server.js';

const run = promisify(execFile);

/**
 * The Service range the API server allocates ClusterIPs from. Nothing here implements Services, so a
 * packet to a ClusterIP would leave by the default route to an address this machine does not own:
 * the range is taken from loopback (127.0.0.0/8), where every address is this machine's (or a pod's
 * own, inside its network namespace), so that nothing dialling one ever leaves the machine.
 */
export const SERVICE_CLUSTER_IP_RANGE = '127.96.0.0/16';

/** What `ControlPlane.start` runs: the release, the controller-manager's grace period, the components' extra flags and the API server's names. */
export interface ControlPlaneOptions {
  /** The Kubernetes release (default: the pinned one; another is built from the Go module proxy on first use). */
  readonly release?: string;
  /**
   * The controller-manager's `--node-monitor-grace-period` in seconds (default 20): how long a node
   * may go without renewing its Lease before it is marked NotReady (the kubelet's default is 40).
   */
  readonly nodeMonitorGracePeriodSeconds?: number;
  /** Further kube-apiserver flags (`--name=value`), after the testkit's own: a later flag wins. */
  readonly apiServerFlags?: readonly string[];
  /** Further kube-controller-manager flags. */
  readonly controllerManagerFlags?: readonly string[];
  /** Further kube-scheduler flags. */
  readonly schedulerFlags?: readonly string[];
  /** Further names (`DNS:…`, `IP:…`) in the API server's serving certificate. */
  readonly apiServerSans?: readonly string[];
  /**
   * An address of this machine where the API server is published too (at the same port, and named
   * in its certificate), for what cannot reach this host's loopback: the pods of a node, which
   * call the API server with their service-account tokens. See `StartedControlPlane.podReachable`.
   */
  readonly apiServerAlsoOn?: string;
}

/** A started control plane: what a client needs to reach it, and `stop()`. */
export interface StartedControlPlane {
  /** The API server's URL, `https://127.0.0.1:PORT`. */
  readonly server: string;
  /** With `apiServerAlsoOn`: the API server there (a node's `--pod-api-server`). */
  readonly podReachable?: { readonly host: string; readonly port: number };
  /** The admin's kubeconfig (`system:masters`), as YAML text with the certificates embedded. */
  readonly kubeconfig: string;
  /** The same kubeconfig written to a file, for `kubectl --kubeconfig` and `KUBECONFIG`. */
  readonly kubeconfigPath: string;
  /** The cluster's CA (it signs the API server's serving certificate and every client's). */
  readonly ca: CertificateAuthority;
  /** The release the components report, e.g. `v1.37.2`. */
  readonly release: string;
  /** The Service range (`--service-cluster-ip-range`), on loopback: see SERVICE_CLUSTER_IP_RANGE. */
  readonly serviceClusterIpRange: string;
  /**
   * The path of a kubeconfig whose client certificate is `system:node:<nodeName>` in `system:nodes`,
   * what a node of a kubeadm cluster holds: the Node authorizer and NodeRestriction let it act for
   * that node only.
   */
  nodeKubeconfig(nodeName: string): Promise<string>;
  /**
   * The path of a kubeconfig whose client certificate names `user` in `groups` (none: only
   * `system:authenticated`): a person of the cluster, with no rights until RBAC gives some.
   */
  userKubeconfig(user: string, groups?: readonly string[]): Promise<string>;
  /**
   * The path of a kubeconfig holding only the cluster's bootstrap token (`<id>.<secret>`, as
   * `kubeadm token create` makes one, in `system:bootstrappers:kubeadm:default-node-token`): a node
   * joins with it by asking for its client certificate (a `kube-apiserver-client-kubelet` CSR),
   * which the controller-manager approves and signs, as on a kubeadm cluster.
   */
  bootstrapKubeconfig(): Promise<string>;
  /**
   * Starts metrics-server (v0.8.0, built from the Go module proxy on first use, like the control
   * plane) on this control plane's network, grants it the RBAC of its upstream manifests, registers
   * it as the aggregated API `v1beta1.metrics.k8s.io` (a Service without selector, an Endpoints
   * naming the container, the APIService) and resolves once that APIService is Available: then
   * `kubectl top` and `/apis/metrics.k8s.io/v1beta1/…` answer from what the nodes' kubelets serve
   * (`/metrics/resource`). Rejects, with metrics-server's last lines, if it does not start or
   * become Available. One at a time; `stop()` of the control plane removes it too.
   */
  startMetricsServer(options?: MetricsServerOptions): Promise<StartedMetricsServer>;
  /** The last lines a component printed: `etcd`, `kube-apiserver`, `kube-controller-manager`, `kube-scheduler`. */
  logs(component: ControlPlaneComponent): Promise<string>;
  /** Removes every container, the network and the temp folder it made. */
  stop(): Promise<void>;
}

/** A container of the control plane, whose logs `logs()` reads. */
export type ControlPlaneComponent = 'etcd' | 'kube-apiserver' | 'kube-controller-manager' | 'kube-scheduler';

const BIN = '/usr/local/bin';
/** Where the certificates and kubeconfigs are in each component's container (the temp folder, read-only). */
const PKI = '/etc/kubernetes/pki';

/**
 * Starts a real Kubernetes control plane through testcontainers: etcd, kube-apiserver,
 * kube-controller-manager and kube-scheduler built from source at one release
 * (`buildControlPlane`), each a container of one image made from the static binaries, on a network
 * of its own, the API server's port published on 127.0.0.1. Certificates are made for this control
 * plane alone. RBAC and the Node authorizer, the NodeRestriction admission plugin, bootstrap tokens,
 * the CSR signer and the service-account controllers are on, as on a kubeadm cluster.
 *
 * ```ts
 * const cluster = await startControlPlane();
 * try {
 *   const config = new KubeConfig();
 *   config.loadFromString(cluster.kubeconfig);
 *   // … run the code under test against it, e.g. a node with cluster.nodeKubeconfig('n1')
 * } finally {
 *   await cluster.stop();
 * }
 * ```
 */
export async function startControlPlane(options: ControlPlaneOptions = {}): Promise<StartedControlPlane> {
  const binaries = await buildControlPlane(options.release === undefined ? {} : { release: options.release });
  const image = await controlPlaneImage(binaries);
  const dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-control-plane-'));
  const containers: StartedTestContainer[] = [];
  // Started later, on demand (metrics-server): removed by stop() unless removed before.
  const extras = new Set<StartedTestContainer>();
  let network: StartedNetwork | undefined;
  const stop = async () => {
    await Promise.all([...extras, ...containers].map((c) => removeContainer(c)));
    extras.clear();
    await network?.stop();
    await rm(dir, { recursive: true, force: true });
  };
  // What each component printed last, kept as it runs: a component that never gets ready is
  // removed by testcontainers, and its last words are the error's substance.
  const printed = new Map<ControlPlaneComponent, string[]>();
  try {
    const alsoOn = options.apiServerAlsoOn;
    const pki = await controlPlaneCertificates(dir, [...(options.apiServerSans ?? []), ...(alsoOn === undefined ? [] : [`IP:${alsoOn}`])]);
    const apiServerPort = alsoOn === undefined ? undefined : await freePort();
    configureTestcontainers();
    network = await new Network().start();
    const component = (name: ControlPlaneComponent) =>
      new LoopbackContainer(image, 'control-plane')
        .withLogConsumer((stream) => {
          const lines: string[] = [];
          printed.set(name, lines);
          stream.on('data', (chunk: Buffer | string) => {
            lines.push(...chunk.toString().split('\n').filter(Boolean));
            lines.splice(0, Math.max(0, lines.length - 20));
          });
        })
        .withNetwork(network!)
        .withNetworkAliases(name === 'kube-apiserver' ? 'apiserver' : name)
        .withLabels({ [`${TESTKIT_LABEL}.component`]: name })
        .withBindMounts([{ source: dir, target: PKI, mode: 'ro' }])
        .withTmpFs({ '/tmp': 'rw' })
        .withStartupTimeout(60_000);

    const etcd = await component('etcd')
      .withCommand([
        `${BIN}/etcd`,
        '--name=control-plane',
        '--data-dir=/var/lib/etcd',
        '--listen-client-urls=http://0.0.0.0:2379',
        '--advertise-client-urls=http://etcd:2379',
        '--listen-peer-urls=http://127.0.0.1:2380',
        '--initial-advertise-peer-urls=http://127.0.0.1:2380',
        '--initial-cluster=control-plane=http://127.0.0.1:2380',
        '--heartbeat-interval=25',
        '--election-timeout=250',
      ])
      .withWaitStrategy(Wait.forLogMessage(/serving client traffic/))
      .start();
    containers.push(etcd);

    const exposed = component('kube-apiserver');
    if (apiServerPort !== undefined && alsoOn !== undefined)
      exposed.withExposedPorts({ container: 6443, host: apiServerPort }).withPortsAlsoOn(alsoOn);
    else exposed.withExposedPorts(6443);
    const apiserver = await exposed
      .withCommand([
        `${BIN}/kube-apiserver`,
        '--etcd-servers=http://etcd:2379',
        '--secure-port=6443',
        '--bind-address=0.0.0.0',
        `--tls-cert-file=${PKI}/apiserver.pem`,
        `--tls-private-key-file=${PKI}/apiserver-key.pem`,
        `--client-ca-file=${PKI}/ca.pem`,
        '--authorization-mode=Node,RBAC',
        '--enable-admission-plugins=NodeRestriction',
        '--enable-bootstrap-token-auth=true',
        '--allow-privileged=true',
        `--service-account-key-file=${PKI}/sa.pem`,
        `--service-account-signing-key-file=${PKI}/sa-key.pem`,
        '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
        `--kubelet-client-certificate=${PKI}/apiserver-kubelet-client.pem`,
        `--kubelet-client-key=${PKI}/apiserver-kubelet-client-key.pem`,
        // The node's InternalIP first: what the node publishes is an address this machine owns.
        '--kubelet-preferred-address-types=InternalIP,Hostname',
        `--service-cluster-ip-range=${SERVICE_CLUSTER_IP_RANGE}`,
        // The aggregation layer (kubeadm's flags): the API server proxies an aggregated API's
        // requests (metrics.k8s.io) as the front-proxy client, the user in these headers, and
        // accepts the same from a front proxy. Harmless when nothing is aggregated.
        `--requestheader-client-ca-file=${PKI}/front-proxy-ca.pem`,
        '--requestheader-allowed-names=front-proxy-client',
        '--requestheader-username-headers=X-Remote-User',
        '--requestheader-group-headers=X-Remote-Group',
        '--requestheader-extra-headers-prefix=X-Remote-Extra-',
        `--proxy-client-cert-file=${PKI}/front-proxy-client.pem`,
        `--proxy-client-key-file=${PKI}/front-proxy-client-key.pem`,
        // An aggregated API is dialled at its Endpoints' address, never at its Service's
        // ClusterIP, which goes nowhere here (SERVICE_CLUSTER_IP_RANGE).
        '--enable-aggregator-routing=true',
        ...(options.apiServerFlags ?? []),
      ])
      // 200 once every post-start hook has run; anonymous may read /readyz.
      .withWaitStrategy(Wait.forHttp('/readyz', 6443).usingTls().allowInsecure())
      .start();
    containers.push(apiserver);
    const server = `https://127.0.0.1:${apiserver.getMappedPort(6443)}`;

    const grace = options.nodeMonitorGracePeriodSeconds ?? 20;
    const [controllerManager, scheduler] = await Promise.all([
      component('kube-controller-manager')
        .withExposedPorts(10257)
        .withCommand([
          `${BIN}/kube-controller-manager`,
          `--kubeconfig=${PKI}/controller-manager.kubeconfig`,
          `--authentication-kubeconfig=${PKI}/controller-manager.kubeconfig`,
          `--authorization-kubeconfig=${PKI}/controller-manager.kubeconfig`,
          '--leader-elect=false',
          '--use-service-account-credentials=true',
          `--service-account-private-key-file=${PKI}/sa-key.pem`,
          `--root-ca-file=${PKI}/ca.pem`,
          `--cluster-signing-cert-file=${PKI}/ca.pem`,
          `--cluster-signing-key-file=${PKI}/ca-key.pem`,
          // kubeadm's set: every default controller, and the bootstrap token's signer and cleaner.
          '--controllers=*,bootstrapsigner,tokencleaner',
          `--node-monitor-grace-period=${grace}s`,
          ...(options.controllerManagerFlags ?? []),
        ])
        .withWaitStrategy(Wait.forHttp('/healthz', 10257).usingTls().allowInsecure())
        .start(),
      component('kube-scheduler')
        .withExposedPorts(10259)
        .withCommand([
          `${BIN}/kube-scheduler`,
          `--kubeconfig=${PKI}/scheduler.kubeconfig`,
          `--authentication-kubeconfig=${PKI}/scheduler.kubeconfig`,
          `--authorization-kubeconfig=${PKI}/scheduler.kubeconfig`,
          '--leader-elect=false',
          ...(options.schedulerFlags ?? []),
        ])
        .withWaitStrategy(Wait.forHttp('/healthz', 10259).usingTls().allowInsecure())
        .start(),
    ]);
    containers.push(controllerManager, scheduler);

    // Ready for pods: the ServiceAccount admission plugin refuses a pod until its namespace's
    // `default` service account exists, which the controller-manager makes a moment after it starts.
    await untilFound(server, pki, '/api/v1/namespaces/default/serviceaccounts/default', 60_000);
    const kubeconfig = kubeconfigYaml(server, pki.ca, 'admin', pki.admin);
    const bootstrapToken = await kubeadmBootstrap({ server, ca: pki.ca, admin: pki.admin });
    const kubeconfigPath = join(dir, 'admin.kubeconfig');
    await writeFile(kubeconfigPath, kubeconfig, { mode: 0o600 });
    const byName: Record<ControlPlaneComponent, StartedTestContainer> = {
      etcd,
      'kube-apiserver': apiserver,
      'kube-controller-manager': controllerManager,
      'kube-scheduler': scheduler,
    };
    let metricsServer: Promise<StartedMetricsServer> | undefined;
    const started = network!;
    return {
      server,
      ...(alsoOn === undefined ? {} : { podReachable: { host: alsoOn, port: apiserver.getMappedPort(6443) } }),
      kubeconfig,
      kubeconfigPath,
      ca: pki.ca,
      release: binaries.release,
      serviceClusterIpRange: SERVICE_CLUSTER_IP_RANGE,
      async nodeKubeconfig(nodeName: string) {
        const file = join(dir, `node-${nodeName}.kubeconfig`);
        const pair = await makePair(dir, `node-${nodeName}`, pki.ca, {
          commonName: `system:node:${nodeName}`,
          organizations: ['system:nodes'],
        });
        await writeFile(file, kubeconfigYaml(server, pki.ca, `system:node:${nodeName}`, pair), { mode: 0o600 });
        return file;
      },
      startMetricsServer(metricsOptions) {
        if (metricsServer !== undefined)
          return Promise.reject(new Error('a metrics-server of this control plane is already started: stop() it first'));
        const pending = startMetricsServer(
          {
            server,
            ca: pki.ca,
            admin: pki.admin,
            network: started,
            pkiDir: dir,
            pkiMount: PKI,
            inClusterKubeconfig: (user, pair) => kubeconfigYaml('https://apiserver:6443', pki.ca, user, pair),
            track: (container) => extras.add(container),
            untrack: (container) => extras.delete(container),
          },
          metricsOptions,
        ).then((handle) => ({
          ...handle,
          async stop() {
            await handle.stop();
            metricsServer = undefined;
          },
        }));
        metricsServer = pending;
        pending.catch(() => (metricsServer = undefined));
        return pending;
      },
      async bootstrapKubeconfig() {
        const file = join(dir, 'bootstrap.kubeconfig');
        await writeFile(file, kubeconfigYaml(server, pki.ca, 'kubelet-bootstrap', { token: bootstrapToken }), { mode: 0o600 });
        return file;
      },
      async userKubeconfig(user: string, groups: readonly string[] = []) {
        const safe = user.replace(/[^A-Za-z0-9_.-]/g, '-');
        const file = join(dir, `user-${safe}.kubeconfig`);
        const pair = await makePair(dir, `user-${safe}`, pki.ca, { commonName: user, organizations: groups });
        await writeFile(file, kubeconfigYaml(server, pki.ca, user, pair), { mode: 0o600 });
        return file;
      },
      logs: (name) => containerLogs(byName[name], 200),
      stop,
    };
  } catch (error) {
    await stop();
    const logs = [...printed].map(([name, lines]) => `${name}:\n${lines.join('\n')}`).join('\n');
    throw new Error(`the control plane did not start: ${(error as Error).message}\n${logs}`, { cause: error });
  }
}

/** Polls `path` on the API server as the admin until it answers 200. */
async function untilFound(server: string, pki: ControlPlanePki, path: string, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    const status = await new Promise<number>((resolve) => {
      const req = httpsRequest(`${server}${path}`, { ca: pki.ca.cert, cert: pki.admin.cert, key: pki.admin.key, timeout: 2_000 }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('timeout', () => req.destroy());
      req.on('error', () => resolve(0));
      req.end();
    });
    if (status === 200) return;
    if (Date.now() > deadline) throw new Error(`${path} not found within ${ms / 1000} s (last status ${status})`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** One image of the five static binaries, tagged by release and by what built them. */
async function controlPlaneImage(binaries: ControlPlaneBinaries): Promise<string> {
  const names = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler'];
  return localImage({
    tag: `kubelet-ts-test/control-plane:${binaries.release}-${binaries.stamp}`,
    binaries: names.map((name) => ({ source: join(binaries.dir, name), target: `${BIN}/${name}` })),
  });
}

interface ControlPlanePki {
  readonly ca: CertificateAuthority;
  readonly admin: CertificatePair;
}

/**
 * The certificates of one control plane, in `dir` under the names the components' flags give: a
 * CA, the API server's serving pair (127.0.0.1 for the host, `apiserver` for the other components,
 * the `kubernetes` Service's names), client pairs for the admin, the controller-manager, the
 * scheduler and the API server's kubelet client, the front-proxy CA and its client pair (the
 * aggregation layer's), the service-account key, and the two components' kubeconfigs.
 */
async function controlPlaneCertificates(dir: string, sans: readonly string[]): Promise<ControlPlanePki> {
  const [ca, frontProxyCa] = await Promise.all([makeCa(dir, 'ca'), makeCa(dir, 'front-proxy-ca')]);
  const inCluster = 'https://apiserver:6443';
  const [, admin, controllerManager, scheduler] = await Promise.all([
    makePair(dir, 'apiserver', ca, {
      server: true,
      commonName: 'kube-apiserver',
      sans: [
        'IP:127.0.0.1',
        'DNS:localhost',
        'DNS:apiserver',
        'DNS:kubernetes',
        'DNS:kubernetes.default',
        'DNS:kubernetes.default.svc',
        'DNS:kubernetes.default.svc.cluster.local',
        `IP:${firstServiceIp(SERVICE_CLUSTER_IP_RANGE)}`,
        ...sans,
      ],
    }),
    makePair(dir, 'admin', ca, { commonName: 'kubernetes-admin', organizations: ['system:masters'] }),
    makePair(dir, 'controller-manager', ca, { commonName: 'system:kube-controller-manager' }),
    makePair(dir, 'scheduler', ca, { commonName: 'system:kube-scheduler' }),
    makePair(dir, 'apiserver-kubelet-client', ca, { commonName: 'kube-apiserver-kubelet-client', organizations: ['system:masters'] }),
    // The aggregator's client, of a CA of its own (as kubeadm's): an aggregated API trusts the
    // user headers only from a certificate of this CA named front-proxy-client.
    makePair(dir, 'front-proxy-client', frontProxyCa, { commonName: 'front-proxy-client' }),
    run('openssl', ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', join(dir, 'sa-key.pem')]).then(() =>
      run('openssl', ['pkey', '-in', join(dir, 'sa-key.pem'), '-pubout', '-out', join(dir, 'sa.pem')]),
    ),
  ]);
  // Embedded certificates: the components read these in their containers, where `dir` is PKI.
  await writeFile(
    join(dir, 'controller-manager.kubeconfig'),
    kubeconfigYaml(inCluster, ca, 'system:kube-controller-manager', controllerManager),
  );
  await writeFile(join(dir, 'scheduler.kubeconfig'), kubeconfigYaml(inCluster, ca, 'system:kube-scheduler', scheduler));
  return { ca, admin };
}

/** The first address of a range: what the API server gives the `kubernetes` Service. */
function firstServiceIp(range: string): string {
  const [address] = range.split('/');
  const octets = address!.split('.').map(Number);
  octets[3] = octets[3]! + 1;
  return octets.join('.');
}

/**
 * A kubeconfig with one cluster, user and context, the certificates embedded. Names are quoted: a
 * user or context named `n` or `y` would otherwise be read as a boolean.
 */
export function kubeconfigYaml(
  server: string,
  ca: CertificateAuthority,
  user: string,
  credentials: CertificatePair | { token: string },
): string {
  const b64 = (pem: string) => Buffer.from(pem).toString('base64');
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: "kubelet-ts"',
    '  cluster:',
    `    server: "${server}"`,
    `    certificate-authority-data: ${b64(ca.cert)}`,
    'users:',
    `- name: ${JSON.stringify(user)}`,
    '  user:',
    ...('token' in credentials
      ? [`    token: ${JSON.stringify(credentials.token)}`]
      : [`    client-certificate-data: ${b64(credentials.cert)}`, `    client-key-data: ${b64(credentials.key)}`]),
    'contexts:',
    '- name: "kubelet-ts"',
    '  context:',
    '    cluster: "kubelet-ts"',
    `    user: ${JSON.stringify(user)}`,
    'current-context: "kubelet-ts"',
    '',
  ].join('\n');
}

/** The group kubeadm's default bootstrap token puts a joining node in. */
const BOOTSTRAPPERS = 'system:bootstrappers:kubeadm:default-node-token';

/**
 * What `kubeadm init` sets up for nodes to join: a bootstrap token (a Secret in `kube-system`), the
 * right of its holders to ask for a node's client certificate (`system:node-bootstrapper`), and the
 * controller-manager's approval of those requests (`nodeclient`) and of a node renewing its own
 * (`selfnodeclient`). Resolves with the token, `<id>.<secret>`.
 */
async function kubeadmBootstrap(credentials: AdminCredentials): Promise<string> {
  const api: AdminApi = (method, path, body) => adminRequest(credentials, method, path, body);
  const pick = (n: number) => Array.from(randomBytes(n), (b) => 'abcdefghijklmnopqrstuvwxyz0123456789'[b % 36]).join('');
  const id = pick(6);
  const secret = pick(16);
  const binding = (name: string, role: string, group: string) =>
    [
      `/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${name}`,
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: group }],
      },
    ] as const;
  const objects = [
    [
      `/api/v1/namespaces/kube-system/secrets/bootstrap-token-${id}`,
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: `bootstrap-token-${id}`, namespace: 'kube-system' },
        type: 'bootstrap.kubernetes.io/token',
        stringData: {
          'token-id': id,
          'token-secret': secret,
          'usage-bootstrap-authentication': 'true',
          'usage-bootstrap-signing': 'true',
          'auth-extra-groups': BOOTSTRAPPERS,
        },
      },
    ],
    binding('kubeadm:kubelet-bootstrap', 'system:node-bootstrapper', BOOTSTRAPPERS),
    binding('kubeadm:node-autoapprove-bootstrap', 'system:certificates.k8s.io:certificatesigningrequests:nodeclient', BOOTSTRAPPERS),
    binding(
      'kubeadm:node-autoapprove-certificate-rotation',
      'system:certificates.k8s.io:certificatesigningrequests:selfnodeclient',
      'system:nodes',
    ),
  ] as const;
  for (const [path, object] of objects) await applyObject(api, path, object, 'kubelet-ts-testkit');
  return `${id}.${secret}`;
}
