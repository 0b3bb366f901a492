import { join } from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { DEFAULT_CRI_ENDPOINT, DEFAULT_LOG_LINKS_DIR, DEFAULT_LOGS_ROOT } from '@kubelet-ts/runtime-cri';
import { DEFAULT_POD_INFRA_IMAGE, DEFAULT_VOLUMES_ROOT } from '@kubelet-ts/runtime-docker';
import { hostEnforcesAppArmor } from '@kubelet-ts/runner';
import { DEFAULT_HOST_LOG_DIRECTORY } from '@kubelet-ts/source-server';
import { parseDuration } from './duration.js';
import {
  allowedSysctlsFlag,
  nodeLabelsFlag,
  reservedFlag,
  resolvConfOption,
  seccompProfileRootOption,
  taintsFlag,
  hostPortFlag,
  type Reserved,
  type TaintFlag,
} from './host-flags.js';
import { DEFAULT_ROOT_DIR, addLegacyFlags, goBool, logLevelOf, volumesRootOf, type LegacyFlags } from './legacy-flags.js';

export { normaliseFlagSpelling } from './legacy-flags.js';

export interface CliOptions extends LegacyFlags {
  readonly config?: string;
  readonly hostnameOverride?: string;
  /** `--kubeconfig`: the agent is a node of that cluster. */
  readonly kubeconfig?: string;
  /** `--node-ip`: the Node's InternalIP (default: the host's first non-loopback IPv4 address). */
  readonly nodeIp?: string;
  /** `--node-status-update-frequency`: how often the Node's status is computed and, when changed, written. */
  readonly nodeStatusUpdateFrequency: number;
  /** `--node-lease-duration-seconds`. */
  readonly nodeLeaseDurationSeconds: number;
  /** `--node-status-report-frequency`: the Node's status is written at least this often. */
  readonly nodeStatusReportFrequency: number;
  /** `--register-with-taints`. */
  readonly registerWithTaints?: readonly TaintFlag[];
  /** `--pod-api-server`: where the pods reach the API server (`KUBERNETES_SERVICE_HOST`/`_PORT`). */
  readonly podApiServer?: { readonly host: string; readonly port: number };
  /** `--cert-dir`: where the serving certificate is made (default `<root-dir>/pki`). */
  readonly certDir: string;
  /** `--bootstrap-kubeconfig`: without a usable `--kubeconfig`, a client certificate is asked for with these credentials. */
  readonly bootstrapKubeconfig?: string;
  /** `--rotate-certificates`: the client certificate is renewed before it expires. */
  readonly rotateCertificates: boolean;
  /** `--rotate-server-certificates`: the serving certificate is requested of the cluster (a kubelet-serving CSR). */
  readonly rotateServerCertificates: boolean;
  /** `--authentication-token-webhook`: bearer tokens are reviewed by the cluster (default: on with --kubeconfig). */
  readonly authenticationTokenWebhook?: boolean;
  readonly authenticationTokenWebhookCacheTtl: number;
  /** `--authorization-mode` (default: Webhook with --kubeconfig, else AlwaysAllow). */
  readonly authorizationMode?: 'AlwaysAllow' | 'Webhook';
  readonly authorizationWebhookCacheAuthorizedTtl: number;
  readonly authorizationWebhookCacheUnauthorizedTtl: number;
  /** `--anonymous-auth`. */
  readonly anonymousAuth: boolean;
  /** `--feature-gates`: the gates given, by name. */
  readonly featureGates: Readonly<Record<string, boolean>>;
  readonly runtime: 'memory' | 'docker' | 'cri' | 'auto';
  readonly containerRuntimeEndpoint: string;
  readonly dockerHost?: string;
  readonly volumesRoot: string;
  /** `--node-labels`: the labels this node has besides its hostname, OS and architecture. */
  readonly nodeLabels?: Readonly<Record<string, string>>;
  /** `--max-pods`: at most this many pods are admitted (the kubelet's 110). */
  readonly maxPods: number;
  /** `--kube-reserved`, `--system-reserved`: kept from the pods' allocatable. */
  readonly kubeReserved?: Reserved;
  readonly systemReserved?: Reserved;
  /** Where the files of ConfigMap, Secret and downward API volumes go (see `KubeletOptions.volumeFilesDir`). */
  readonly volumeFilesDir: string;
  readonly podInfraImage: string;
  readonly hostIp: string;
  readonly syncFrequency: number;
  readonly housekeepingInterval: number;
  readonly housekeepingUnreadInterval: number;
  /** `--volume-stats-agg-period`: how often each pod's volumes are walked for the Summary (0: never). */
  readonly volumeStatsAggPeriod: number;
  readonly cgroupRoot?: string;
  readonly eventLogSize: number;
  readonly eventTtl: number;
  /** Pods that pull, create and start at once, fixed; absent: adaptive. */
  readonly concurrency?: number;
  readonly fileCheckFrequency: number;
  readonly manifestUrl?: string;
  readonly manifestUrlHeader: readonly string[];
  readonly httpCheckFrequency: number;
  readonly manifestUrlTimeout: number;
  readonly etcdServers?: readonly string[];
  readonly etcdCafile?: string;
  readonly etcdCertfile?: string;
  readonly etcdKeyfile?: string;
  readonly etcdUsername?: string;
  readonly etcdPassword?: string;
  readonly manifestUrlCaFile?: string;
  readonly manifestUrlCertFile?: string;
  readonly manifestUrlKeyFile?: string;
  readonly tlsCertFile?: string;
  readonly tlsPrivateKeyFile?: string;
  readonly clientCaFile?: string;
  readonly insecureAllowUnauthenticated: boolean;
  readonly address: string;
  readonly port: number;
  readonly authToken?: string;
  readonly allowedHost: readonly string[];
  readonly logLevel: string;
  readonly logFormat?: 'json' | 'pretty';
  readonly runonce: boolean;
  readonly runonceTimeout: number;
  readonly allowHostMounts: boolean;
  readonly allowHostNetwork: boolean;
  /** `--allowed-unsafe-sysctls`: sysctls (or `prefix*`) a pod may set beyond the safe set. */
  readonly allowedUnsafeSysctls?: readonly string[];
  /** Not a flag: whether this host enforces AppArmor (see `hostEnforcesAppArmor`). */
  readonly appArmor: boolean;
  readonly containerLogMaxSize: number;
  readonly containerLogMaxFiles: number;
  readonly podLogsDir: string;
  /** '' for none. */
  readonly containerLogLinksDir: string;
  readonly hostLogDir: string;
  /** `--resolv-conf`: the host's resolver file, which a pod's dnsConfig adds to; '' for none. */
  readonly resolvConf: string;
  /** `--seccomp-profile-root`: where Localhost seccomp profiles are; default `<root-dir>/seccomp`. */
  readonly seccompProfileRoot: string;
}

function duration(value: string): number {
  try {
    return parseDuration(value);
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}

/** An option that takes a duration (`10s`, `5m`, `1h`), its default shown in the help as written. */
function durationOption(flags: string, description: string, defaultMs: number): Option {
  const shown =
    defaultMs % 3_600_000 === 0
      ? `${defaultMs / 3_600_000}h`
      : defaultMs % 60_000 === 0
        ? `${defaultMs / 60_000}m`
        : `${defaultMs / 1000}s`;
  return new Option(flags, description).argParser(duration).default(defaultMs, shown);
}

function collect(value: string, previous: readonly string[]): string[] {
  return [...previous, value];
}

function list(value: string): string[] {
  const items = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (items.length === 0) throw new InvalidArgumentError('expected at least one URL');
  return items;
}

/** An empty token would let every request in (it matches a request that sends none): refuse it. */
function authToken(value: string): string {
  if (value.trim() === '') {
    throw new InvalidArgumentError(
      'an empty token turns authentication off; give a non-empty --auth-token (or KUBELET_TS_AUTH_TOKEN), or set neither to run without one',
    );
  }
  return value;
}

function concurrency(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isInteger(n) || n < 1 || n > 1024) {
    throw new InvalidArgumentError(
      `--concurrency: expected a whole number of pods from 1 to 1024, got ${JSON.stringify(value)}; leave it out for the adaptive default`,
    );
  }
  return n;
}

function leaseSeconds(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isInteger(n) || n < 4 || n > 3600)
    throw new InvalidArgumentError(`--node-lease-duration-seconds: expected whole seconds from 4 to 3600, got ${JSON.stringify(value)}`);
  return n;
}

/** The gates `--feature-gates` knows, and their defaults. */
export const FEATURE_GATES: Readonly<Record<string, boolean>> = {
  /** The Node declares it (`status.declaredFeatures`): the API server passes WebSocket streams through unchanged. */
  ExtendWebSocketsToKubelet: true,
};

function featureGates(value: string, previous: Readonly<Record<string, boolean>>): Record<string, boolean> {
  const gates = { ...previous };
  for (const pair of value.split(',').filter((p) => p.trim() !== '')) {
    const [name = '', setting = ''] = pair.split('=').map((p) => p.trim());
    if (!(name in FEATURE_GATES))
      throw new InvalidArgumentError(
        `--feature-gates: unknown gate ${JSON.stringify(name)}; known: ${Object.keys(FEATURE_GATES).join(', ')}`,
      );
    gates[name] = goBool(setting);
  }
  return gates;
}

function maxPods(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isInteger(n) || n < 1 || n > 100_000)
    throw new InvalidArgumentError(`--max-pods: expected a whole number of pods from 1 to 100000, got ${JSON.stringify(value)}`);
  return n;
}

function eventLogSize(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isInteger(n) || n < 1 || n > 100_000) {
    throw new InvalidArgumentError(`--event-log-size: expected a whole number of events from 1 to 100000, got ${JSON.stringify(value)}`);
  }
  return n;
}

const BYTE_UNITS: Readonly<Record<string, number>> = { '': 1, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, K: 1000, M: 1000 ** 2, G: 1000 ** 3 };

/** A size as the kubelet's `--container-log-max-size` takes it: `10Mi`, `512Ki`, `1G`, or bytes. */
function logSize(value: string): number {
  const match = /^(\d+)(Ki|Mi|Gi|K|M|G)?$/.exec(value.trim());
  const bytes = match === null ? Number.NaN : Number(match[1]) * BYTE_UNITS[match[2] ?? '']!;
  if (!Number.isSafeInteger(bytes) || bytes < 1024)
    throw new InvalidArgumentError(
      `--container-log-max-size: expected a size of at least 1Ki (10Mi, 512Ki, or bytes), got ${JSON.stringify(value)}`,
    );
  return bytes;
}

function logFiles(value: string): number {
  const n = Number(value);
  // The kubelet's rule: the file being written and at least one rotated.
  if (!/^\d+$/.test(value.trim()) || n < 2 || n > 100)
    throw new InvalidArgumentError(
      `--container-log-max-files: expected a whole number of files from 2 to 100, got ${JSON.stringify(value)}`,
    );
  return n;
}

function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError(`invalid port ${JSON.stringify(value)}: use 0-65535`);
  return n;
}

export function buildProgram(): Command {
  const program = new Command('kubelet-ts')
    .description(
      'Keeps the containers on this host equal to what its manifest sources ask for.\n\n' +
        '`kubelet-ts plan [options]` takes the same options, prints what a pass would do now and exits:\n' +
        '0 when the host is in sync, 2 when the plan has steps, 1 on error.\n' +
        "`kubelet-ts logs POD [CONTAINER]` prints what a pod's container printed, from a running agent (see `kubelet-ts logs --help`).\n\n" +
        'Client commands read a running agent (each has --help; flags or a kubeconfig say where it is):\n' +
        '  get pods|containers|events|sources   list them (as kubectl get, crictl ps)\n' +
        '  describe pod NAME                    a pod in detail (as kubectl describe)\n' +
        '  logs, exec, attach, port-forward, top\n' +
        'They exit 0 when done, 1 on a usage error or anything else, 2 when the agent cannot be reached, ' +
        '3 when it refuses the credentials, 4 when TLS fails.\n' +
        '`kubelet-ts volumes ls|rm CLAIM` lists or removes the named volumes of persistentVolumeClaims on this host.',
    )
    .addOption(
      new Option('--config <path>', 'a manifest file, or a directory of manifests (every regular file but dotfiles and editor leftovers)'),
    )
    .addOption(new Option('--hostname-override <name>', "this host's name (labels what the agent creates)"))
    .addOption(
      new Option(
        '--kubeconfig <path>',
        "the agent is a node of the cluster this kubeconfig names (its credentials, a node's): it registers its Node, holds its Lease, runs the pods bound to it beside its other sources, and writes their status back",
      ),
    )
    .addOption(
      new Option(
        '--node-ip <ip>',
        "with --kubeconfig: the Node's InternalIP, where the API server reaches the agent's port; a machine address, not loopback",
      ).default(undefined, "the host's first non-loopback IPv4 address"),
    )
    .addOption(
      durationOption(
        '--node-status-update-frequency <duration>',
        "with --kubeconfig: how often the Node's status is computed, and written when it changed",
        10_000,
      ),
    )
    .addOption(
      durationOption(
        '--node-status-report-frequency <duration>',
        "with --kubeconfig: the Node's status is written at least this often",
        300_000,
      ),
    )
    .addOption(
      new Option('--register-with-taints <key=value:Effect,...>', 'with --kubeconfig: the taints the Node is registered with').argParser(
        taintsFlag,
      ),
    )
    .addOption(
      new Option(
        '--pod-api-server <host:port>',
        "with --kubeconfig: where the pods reach the API server, given to every container as KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT (an address this machine's pods can dial, in the API server's certificate)",
      )
        .default(
          undefined,
          "the kubeconfig's server, unless it is loopback; then the kubernetes Service's ClusterIP, as the kubelet gives it",
        )
        .argParser(hostPortFlag),
    )
    .addOption(
      new Option(
        '--cert-dir <dir>',
        "with --kubeconfig and no --tls-cert-file: where the serving certificate is kept (self-signed kubelet.crt/kubelet.key, or the cluster's kubelet-server-current.*)",
      ).default(undefined, '<root-dir>/pki'),
    )
    .addOption(
      new Option(
        '--bootstrap-kubeconfig <path>',
        "with --kubeconfig: when that file is missing (or its certificate expires), ask the cluster for the node's client certificate with these credentials (a bootstrap token), write it to --cert-dir and the kubeconfig to --kubeconfig",
      ),
    )
    .addOption(
      new Option(
        '--rotate-certificates [bool]',
        "with --bootstrap-kubeconfig: renew the node's client certificate (a new CSR, with its own credentials) when 80 % of its life is gone",
      )
        .argParser(goBool)
        .preset('true')
        .default(false),
    )
    .addOption(
      new Option(
        '--rotate-server-certificates [bool]',
        'with --kubeconfig: request the serving certificate of the cluster (a kubernetes.io/kubelet-serving CSR, which someone must approve) and renew it before it expires',
      )
        .argParser(goBool)
        .preset('true')
        .default(false),
    )
    .addOption(
      new Option(
        '--authentication-token-webhook [bool]',
        'bearer tokens are reviewed by the cluster (TokenReview); needs --kubeconfig (default: on with --kubeconfig)',
      )
        .argParser(goBool)
        .preset('true'),
    )
    .addOption(durationOption('--authentication-token-webhook-cache-ttl <duration>', "how long a token's review is kept", 120_000))
    .addOption(
      new Option(
        '--authorization-mode <mode>',
        'AlwaysAllow (whoever authenticates may do anything) or Webhook (each request reviewed by the cluster, SubjectAccessReview on nodes/<subresource>; needs --kubeconfig)',
      )
        .choices(['AlwaysAllow', 'Webhook'])
        .default(undefined, 'Webhook with --kubeconfig, else AlwaysAllow'),
    )
    .addOption(durationOption('--authorization-webhook-cache-authorized-ttl <duration>', 'how long an allowed review is kept', 300_000))
    .addOption(durationOption('--authorization-webhook-cache-unauthorized-ttl <duration>', 'how long a refused review is kept', 30_000))
    .addOption(
      new Option(
        '--anonymous-auth [bool]',
        'a request without credentials is system:anonymous (then reviewed as anyone) rather than a 401; off by default',
      )
        .argParser(goBool)
        .preset('true')
        .default(false),
    )
    .addOption(
      new Option('--feature-gates <name=bool,...>', `feature gates: ${Object.keys(FEATURE_GATES).join(', ')}`)
        .argParser(featureGates)
        .default({}),
    )
    .addOption(
      new Option('--node-lease-duration-seconds <n>', "with --kubeconfig: the Lease's duration; it is renewed every quarter of it")
        .argParser(leaseSeconds)
        .default(40),
    )
    .addOption(
      new Option(
        '--runtime <kind>',
        'container runtime: docker, cri, memory, or auto (docker when an engine answers, else the CRI endpoint, else memory, said loudly)',
      )
        .choices(['docker', 'cri', 'memory', 'auto'])
        .default('auto'),
    )
    .addOption(
      new Option('--container-runtime-endpoint <endpoint>', 'the CRI runtime (containerd, CRI-O) for --runtime cri: unix:///path').default(
        DEFAULT_CRI_ENDPOINT,
      ),
    )
    .addOption(
      new Option('--docker-host <url>', 'the Docker engine: unix:///path or tcp://host:port')
        .env('DOCKER_HOST')
        .default(undefined, 'unix:///var/run/docker.sock'),
    )
    .addOption(new Option('--volumes-root <dir>', 'pod volumes live in <dir>/<manifest id>/<volume>').default(DEFAULT_VOLUMES_ROOT))
    .addOption(
      new Option(
        '--node-labels <key=value,...>',
        "this node's labels, besides kubernetes.io/hostname, kubernetes.io/os and kubernetes.io/arch: a pod whose nodeSelector or required node affinity they do not meet is refused",
      ).argParser(nodeLabelsFlag),
    )
    .addOption(
      new Option('--max-pods <n>', 'at most <n> pods are admitted; one more is Failed with OutOfpods, as the kubelet refuses it')
        .argParser(maxPods)
        .default(110),
    )
    .addOption(
      new Option(
        '--kube-reserved <cpu=…,memory=…>',
        "CPU and memory kept for the agent: taken off the node's allocatable, which a pod's requests must fit in (else it is Failed with OutOfcpu or OutOfmemory)",
      ).argParser(reservedFlag),
    )
    .addOption(
      new Option('--system-reserved <cpu=…,memory=…>', 'CPU and memory kept for the system, as --kube-reserved').argParser(reservedFlag),
    )
    .addOption(
      new Option(
        '--volume-files-dir <dir>',
        'the files of ConfigMap, Secret and downward API volumes are written in <dir>/<manifest id>/<volume>; keep it on a tmpfs, so that no Secret reaches a disk',
      ).default(undefined, '/dev/shm/kubelet-ts<--volumes-root>'),
    )
    .addOption(
      new Option('--pod-infra-image <image>', "the image of each pod's network-namespace container").default(DEFAULT_POD_INFRA_IMAGE),
    )
    .addOption(new Option('--host-ip <address>', 'the host address published ports bind to').default('0.0.0.0'))
    .addOption(
      new Option(
        '--container-log-max-size <size>',
        "a container's output file is rotated at this size (Docker, Podman: json-file max-size; CRI: by the agent)",
      )
        .argParser(logSize)
        .default(10 * 1024 * 1024, '10Mi'),
    )
    .addOption(
      new Option(
        '--container-log-max-files <n>',
        "how many files of a container's output are kept, older ones gzipped on CRI (Docker: max-file)",
      )
        .argParser(logFiles)
        .default(5),
    )
    .addOption(
      new Option('--pod-logs-dir <dir>', "CRI: containers' output in <dir>/<namespace>_<pod>_<uid>/<container>/<n>.log").default(
        DEFAULT_LOGS_ROOT,
      ),
    )
    .addOption(
      new Option('--container-log-links-dir <dir>', "CRI: a link to each container's log file, for log shippers ('' for none)").default(
        DEFAULT_LOG_LINKS_DIR,
      ),
    )
    .addOption(durationOption('--sync-frequency <duration>', 'longest time between two sync passes', 10_000))
    .addOption(new Option('--event-log-size <n>', 'recent events kept for /events and get events').argParser(eventLogSize).default(1_000))
    .addOption(durationOption('--event-ttl <duration>', 'how long an event is kept after it last happened', 3_600_000))
    .addOption(
      new Option(
        '--cgroup-root <path>',
        "CRI: the cgroup parent of every pod (cgroupfs path, or a slice with systemd); containerd 1.6 reports a pod's network only under one",
      ),
    )
    .addOption(durationOption('--housekeeping-interval <duration>', 'how often what the node and pods use is sampled (0: never)', 10_000))
    .addOption(
      durationOption(
        '--housekeeping-unread-interval <duration>',
        'how often they are sampled while nobody has read them for 2 minutes (not above --housekeeping-interval: every interval)',
        300_000,
      ),
    )
    .addOption(
      durationOption(
        '--volume-stats-agg-period <duration>',
        "how often each pod's volumes are walked for what they take (0: never)",
        60_000,
      ),
    )
    .addOption(
      new Option(
        '--concurrency <n>',
        'pods that pull, create and start containers at once, fixed (default: adaptive, found while working, 4 to 32)',
      ).argParser(concurrency),
    )
    .addOption(durationOption('--file-check-frequency <duration>', 're-list --config this often, besides watching it', 20_000))
    .addOption(new Option('--manifest-url <url>', 'a URL serving one manifest or a list, polled'))
    .addOption(
      new Option('--manifest-url-header <header>', "an extra request header 'Name: value' (repeatable)").argParser(collect).default([]),
    )
    .addOption(durationOption('--http-check-frequency <duration>', 'poll --manifest-url this often', 20_000))
    .addOption(durationOption('--manifest-url-timeout <duration>', 'give up on one poll of --manifest-url after this', 10_000))
    .addOption(
      new Option(
        '--etcd-servers <urls>',
        'comma-separated etcd endpoints; manifests at /registry/hosts/<hostname>/kubelet, events under /events',
      ).argParser(list),
    )
    .addOption(
      new Option('--manifest-url-ca-file <path>', 'PEM CA that an https:// --manifest-url must chain to (default: the system roots)'),
    )
    .addOption(
      new Option('--manifest-url-cert-file <path>', 'PEM client certificate presented to --manifest-url (with --manifest-url-key-file)'),
    )
    .addOption(new Option('--manifest-url-key-file <path>', 'PEM key of --manifest-url-cert-file'))
    .addOption(new Option('--etcd-cafile <path>', 'PEM CA that etcd must chain to (TLS to etcd)'))
    .addOption(new Option('--etcd-certfile <path>', 'PEM client certificate for etcd (with --etcd-keyfile)'))
    .addOption(new Option('--etcd-keyfile <path>', 'PEM key of --etcd-certfile'))
    .addOption(new Option('--etcd-username <name>', 'etcd user, when etcd has authentication enabled (with --etcd-password)'))
    .addOption(
      new Option(
        '--etcd-password <password>',
        'password of --etcd-username; prefer the environment variable, as arguments are visible in ps',
      ).env('KUBELET_TS_ETCD_PASSWORD'),
    )
    .addOption(
      new Option(
        '--address <ip>',
        "the agent server's address; one that is not loopback needs --auth-token or --client-ca-file (or --insecure-allow-unauthenticated)",
      ).default('127.0.0.1', '127.0.0.1; 0.0.0.0 with --kubeconfig'),
    )
    .addOption(
      new Option(
        '--tls-cert-file <path>',
        'serve HTTPS with this PEM certificate (with --tls-private-key-file); reloaded when the file changes',
      ),
    )
    .addOption(new Option('--tls-private-key-file <path>', 'PEM key of --tls-cert-file'))
    .addOption(
      new Option(
        '--client-ca-file <path>',
        'with --tls-cert-file: a client certificate this CA signed authenticates a request (as does --auth-token, when also set)',
      ),
    )
    .addOption(
      new Option(
        '--insecure-allow-unauthenticated',
        'serve a non-loopback --address without --auth-token or --client-ca-file: anyone who reaches it may post manifests',
      ).default(false),
    )
    .addOption(new Option('--port <port>', "the agent server's port (0: any free port)").argParser(port).default(10250))
    .addOption(
      new Option('--auth-token <token>', 'require Authorization: Bearer <token> on every server route but /healthz (never empty)')
        .env('KUBELET_TS_AUTH_TOKEN')
        .argParser(authToken),
    )
    .addOption(
      new Option(
        '--allowed-host <name>',
        "another name the agent server is reached by (e.g. the node's DNS name); a request whose Host or Origin names anything but an address it listens on or such a name is refused (repeatable)",
      )
        .argParser(collect)
        .default([]),
    )
    .addOption(
      new Option('--host-log-dir <dir>', "the host's log directory, served under /logs/ (behind the server's authentication)").default(
        DEFAULT_HOST_LOG_DIRECTORY,
      ),
    )
    .addOption(resolvConfOption())
    .addOption(seccompProfileRootOption())
    .addOption(new Option('--log-level <level>', 'trace, debug, info, warn or error').default('info'))
    .addOption(new Option('--log-format <format>', 'json or pretty (default: pretty on a terminal, else json)').choices(['json', 'pretty']))
    .addOption(
      new Option(
        '--runonce',
        'start what --config and --manifest-url ask for, wait until every container runs (or fails), print one line per container and exit: 0 when all run, else 1 (no server, no watch)',
      ).default(false),
    )
    .addOption(durationOption('--runonce-timeout <duration>', 'with --runonce: how long to wait for every container', 300_000))
    .addOption(
      new Option('--allow-host-mounts', 'let manifests bind host paths (volumeMounts[].mountType: HOST); off by default').default(false),
    )
    .addOption(
      new Option(
        '--allow-host-network',
        "let pods share the host's network (hostNetwork: true); off by default. Such a pod reaches the agent's server on loopback, so the server then needs --auth-token or --client-ca-file there too",
      ).default(false),
    )
    .addOption(
      new Option(
        '--allowed-unsafe-sysctls <names>',
        "sysctls a pod may set beyond the kubelet's safe set, comma-separated; a name or a prefix ending in * (kernel.msg*,net.core.somaxconn), each of the pod's network or IPC namespace",
      ).argParser(allowedSysctlsFlag),
    );
  return addLegacyFlags(program).showHelpAfterError().exitOverride();
}

/** The parsed options, with the 2014 flags folded into today's (`--v`, `--root-dir`). */
export function optionsOf<T extends CliOptions>(program: Command): T {
  const raw = program.opts<T>();
  const given = (name: string) => program.getOptionValueSource(name) === 'cli';
  return {
    ...raw,
    logLevel: logLevelOf(raw, given('logLevel')),
    volumesRoot: volumesRootOf(raw, given('volumesRoot')),
    // On the tmpfs every Linux host has, one directory per volumes root: two agents of one host keep apart.
    volumeFilesDir: raw.volumeFilesDir ?? join('/dev/shm/kubelet-ts', volumesRootOf(raw, given('volumesRoot'))),
    appArmor: hostEnforcesAppArmor(),
    seccompProfileRoot: raw.seccompProfileRoot ?? join(raw.rootDir ?? DEFAULT_ROOT_DIR, 'seccomp'),
    certDir: raw.certDir ?? join(raw.rootDir ?? DEFAULT_ROOT_DIR, 'pki'),
    // A node of a cluster is reached by the API server on its machine address, as today's kubelet (0.0.0.0).
    address: raw.kubeconfig !== undefined && !given('address') ? '0.0.0.0' : raw.address,
  };
}
