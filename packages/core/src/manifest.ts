import type { EnvResource } from './container-env.js';
import type { ContainerSecurityContext, PodSecurityContext } from './security.js';

/**
 * The container manifest of 2014 (what later became a pod), after validation and normalisation.
 * Optional fields stay absent rather than being filled with defaults, so that the spec hash of an
 * old manifest does not change when a later version adds a field.
 */
export interface ContainerManifest {
  /**
   * The version a manifest is written in, as input: it changes a meaning (in a manifest that names
   * its version, a port without `hostPort` is published on its `containerPort`, the 2014 rule; see
   * `Port.hostPort`). Validation applies that meaning and leaves the version out of the manifest it
   * returns, so that a validated manifest validates again to itself: kept, it would publish a port
   * that `hostPort: 0` had kept unpublished.
   */
  readonly version?: ManifestVersion;
  /**
   * Unique per host; a DNS subdomain (at most 253 characters, dots allowed). A source names a
   * manifest written without one after where it came from (see `derivedManifestId`).
   */
  readonly id: string;
  /**
   * The late-2014 API's instance id of the pod, kept as written and shown with the pod. It is not
   * part of what runs: a new uuid alone restarts nothing.
   */
  readonly uuid?: string;
  /**
   * When the pod was marked for deletion (v1 `metadata.deletionTimestamp`, RFC 3339), as a cluster
   * marks a pod it deletes with a grace period: the pod is Terminating. Its containers are stopped
   * (preStop hooks first) within `deletionGracePeriodSeconds` when given, else the spec's grace;
   * none is started or restarted again, and its sandbox and volumes go once they have stopped. Not
   * part of what runs: marking a pod restarts nothing.
   */
  readonly deletionTimestamp?: string;
  /** v1 `metadata.deletionGracePeriodSeconds`: the grace its deletion gives, ahead of `terminationGracePeriodSeconds`. */
  readonly deletionGracePeriodSeconds?: number;
  /**
   * A Kubernetes v1 Pod's `metadata.namespace`, kept as written (absent in 2014 manifests). Part of
   * the pod's identity: a v1 Pod's id is its `metadata.name`, followed by `.<namespace>` unless the
   * namespace is absent or `default` (see `v1PodId` in `@kubelet-ts/manifest`).
   */
  readonly namespace?: string;
  /** A v1 Pod's `metadata.labels`, kept on the pod and shown with it; not part of what runs. */
  readonly labels?: Readonly<Record<string, string>>;
  /** A v1 Pod's `metadata.annotations`, kept on the pod and shown with it; not part of what runs. */
  readonly annotations?: Readonly<Record<string, string>>;
  /**
   * The pod uses the host's network namespace (v1 `spec.hostNetwork`): its sandbox makes no
   * network namespace of its own and publishes nothing, as container ports are already the
   * host's. Absent means false.
   */
  readonly hostNetwork?: boolean;
  /**
   * A v1 Pod's `spec.securityContext`, kept as written (after validation): what every container
   * runs as unless its own says otherwise, and the pod's groups and sysctls. See
   * `containerSecurityOf` for what a container gets.
   */
  readonly securityContext?: PodSecurityContext;
  /** A v1 Pod's `spec.hostname`: the pod's hostname instead of its id (a DNS label). Not applied in a hostNetwork pod. */
  readonly hostname?: string;
  /**
   * A v1 Pod's `spec.dnsPolicy` (absent: `ClusterFirst`, which is `Default` on a host without a
   * cluster DNS) and `spec.dnsConfig`: the resolver its containers get (see `podDns`).
   */
  readonly dnsPolicy?: DnsPolicy;
  readonly dnsConfig?: PodDnsConfig;
  /** A v1 Pod's `spec.shareProcessNamespace`: its containers see (and may signal) each other's processes. */
  readonly shareProcessNamespace?: boolean;
  /** A v1 Pod's `spec.hostPID` / `hostIPC`: its containers are in the host's process / IPC namespace (accepted only with `allowPrivileged`). */
  readonly hostPID?: boolean;
  readonly hostIPC?: boolean;
  /** The labels the node must have (v1 `nodeSelector`), checked against `HostAccess.nodeLabels` when the manifest is read; placement only, not part of what runs. */
  readonly nodeSelector?: Readonly<Record<string, string>>;
  /** v1 `affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution`: one of its terms must match the node, checked as `nodeSelector` is. */
  readonly nodeAffinity?: { readonly nodeSelectorTerms: readonly NodeSelectorTerm[] };
  readonly volumes: readonly Volume[];
  /**
   * A v1 Pod's `spec.imagePullSecrets`: the names of Secrets (of type `kubernetes.io/dockerconfigjson`
   * or `kubernetes.io/dockercfg`, in the pod's namespace) whose registry credentials its images are
   * pulled with. Absent: none. Not part of what runs.
   */
  readonly imagePullSecrets?: readonly string[];
  /**
   * A v1 Pod's `spec.serviceAccountName` (absent: `default` for a pod from an API server): whose
   * tokens its `serviceAccountToken` projections are. Not part of what runs.
   */
  readonly serviceAccountName?: string;
  /**
   * A v1 Pod's `spec.enableServiceLinks` (absent: true): its containers get the variables of the
   * services of its namespace, when its source gives them (see `ObjectKind` `ServiceEnvironment`).
   */
  readonly enableServiceLinks?: boolean;
  /**
   * A v1 Pod's `initContainers`: each runs to completion, in order, before the app containers
   * start; one with `restartPolicy: Always` is a sidecar, started in its turn and kept running
   * beside the app containers (see `initStep`). Absent: none.
   */
  readonly initContainers?: readonly Container[];
  readonly containers: readonly Container[];
  /** What to do when a container exits. Default `Always`. */
  readonly restartPolicy?: RestartPolicy;
  /** Seconds between the stop signal and the kill. Default 30, as in the kubelet. */
  readonly terminationGracePeriodSeconds?: number;
}

/** A node selector term: every expression must hold (on the node's labels, and on its name for `matchFields`). */
export interface NodeSelectorTerm {
  readonly matchExpressions?: readonly NodeSelectorRequirement[];
  readonly matchFields?: readonly NodeSelectorRequirement[];
}

/** One requirement of a node selector term (v1 `matchExpressions`, `matchFields`): a node label, an operator and its values. */
export interface NodeSelectorRequirement {
  readonly key: string;
  readonly operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist' | 'Gt' | 'Lt';
  readonly values?: readonly string[];
}

/** The two 2014 versions, which share one container shape. */
export type ManifestVersion = 'v1beta1' | 'v1beta2';

/** When the agent runs a pod's exited container again: always, only after a failure, or never. */
export type RestartPolicy = 'Always' | 'OnFailure' | 'Never';
/** When the agent pulls a container's image: every time, when the runtime does not have it, or never. */
export type PullPolicy = 'Always' | 'IfNotPresent' | 'Never';

/**
 * Seconds a container is given to stop before it is killed, when its manifest sets no
 * `terminationGracePeriodSeconds` (the kubelet's default). API for embedders that show or compare
 * grace periods; the planner and the spec builder apply it.
 */
export const DEFAULT_GRACE_PERIOD_SECONDS = 30;

/** v1 `dnsPolicy`: what a pod's resolver starts from (see `podDns`). */
export type DnsPolicy = 'ClusterFirst' | 'ClusterFirstWithHostNet' | 'Default' | 'None';

/** v1 `dnsConfig`: resolver settings added to the pod's (or, under `None`, all of them). */
export interface PodDnsConfig {
  readonly nameservers?: readonly string[];
  readonly searches?: readonly string[];
  /** `ndots` with a value, `edns0` without. */
  readonly options?: readonly { readonly name: string; readonly value?: string }[];
}

/** A liveness, readiness or startup check; exactly one of `exec`, `httpGet`, `tcpSocket`, `grpc`. */
export interface Probe {
  readonly exec?: { readonly command: readonly string[] };
  /**
   * Through the host port published for `port` (a number or a port name); in a `hostNetwork` pod,
   * or with `host` set, that address and the port itself. Absent `scheme`/`host`/`httpHeaders`
   * are HTTP, the published address, none.
   */
  readonly httpGet?: {
    readonly path: string;
    readonly port: number | string;
    readonly host?: string;
    /** `HTTPS` does not verify the certificate, as the kubelet does not. */
    readonly scheme?: 'HTTP' | 'HTTPS';
    readonly httpHeaders?: readonly { readonly name: string; readonly value: string }[];
  };
  readonly tcpSocket?: { readonly port: number | string; readonly host?: string };
  /**
   * The gRPC health check (`grpc.health.v1.Health/Check`, plaintext) of `service` (absent: the
   * server as a whole) on `port` of the pod's IP, as the kubelet asks it; it passes when the answer
   * is `SERVING`. A port number only, as Kubernetes validates it.
   */
  readonly grpc?: { readonly port: number; readonly service?: string };
  readonly initialDelaySeconds: number;
  readonly periodSeconds: number;
  readonly timeoutSeconds: number;
  readonly failureThreshold: number;
  /** Successes in a row that count as passing after a failure. Absent means 1 (the only value liveness and startup take). */
  readonly successThreshold?: number;
}

/** The v1 `hostPath.type` checks, made on the host before the container is created. Absent or `''`: none. */
export type HostPathType = '' | 'DirectoryOrCreate' | 'Directory' | 'FileOrCreate' | 'File' | 'Socket' | 'CharDevice' | 'BlockDevice';

/**
 * A pod volume. Without `hostPath` or `claim` it is the pod's own directory, made empty when the
 * pod first runs and removed with the pod (the 2014 volume, v1's `emptyDir`). With `hostPath`
 * (accepted only with `allowHostMounts`) it is that directory or file of the host, bound as it is;
 * with `claim`, a named volume that outlives the pod.
 */
export interface Volume {
  readonly name: string;
  readonly hostPath?: { readonly path: string; readonly type?: HostPathType };
  /**
   * A named volume of the host (a v1 `persistentVolumeClaim`, as `podman kube play` makes one per
   * claim): made empty the first time a pod mounts it, kept when the pod goes and found again by
   * the next pod that names it; removed only on request (`kubelet-ts volumes rm`). `readOnly`
   * mounts it read-only everywhere.
   */
  readonly claim?: { readonly name: string; readonly readOnly?: boolean };
  /**
   * Files the agent writes from ConfigMaps, Secrets and the pod's own fields (v1 `configMap`,
   * `secret`, `downwardAPI` and `projected` volumes, each the projection of its sources), kept up
   * to date while the pod runs and mounted read-only. See `volumeFilesOf`.
   */
  readonly files?: VolumeFiles;
  /** How the pod's own directory is made (v1 `emptyDir`), when it says more than a directory on the host's disk. */
  readonly emptyDir?: EmptyDir;
}

/**
 * A pod's own volume: in memory (a tmpfs of at most `sizeLimit` bytes) or on the disk (`sizeLimit`
 * then reported when outgrown, not enforced: see `ContainerChecks.emptyDirOf`), and the mode of its directory.
 */
export interface EmptyDir {
  readonly medium?: 'Memory';
  /** Bytes; only in memory (the size of the tmpfs). */
  readonly sizeLimit?: number;
  /** The directory's mode (default 0777, which a non-root user can write), e.g. 01777 with the sticky bit. */
  readonly mode?: number;
}

/** What a volume of files holds: its sources in order (a later file of the same path wins), and their default mode. */
export interface VolumeFiles {
  readonly sources: readonly FileSource[];
  /** The mode of each file that does not set its own (v1 `defaultMode`). Absent: 0644, or 0400 when a source is a Secret. */
  readonly defaultMode?: number;
}

/**
 * One source of a volume of files: exactly one of a ConfigMap, a Secret, the pod's fields, or a
 * token of its service account (which only a source backed by an API server can give).
 */
export interface FileSource {
  readonly configMap?: ObjectFiles;
  readonly secret?: ObjectFiles;
  readonly downwardAPI?: { readonly items: readonly DownwardFile[] };
  readonly serviceAccountToken?: ServiceAccountTokenFile;
}

/**
 * v1 `projected.sources[].serviceAccountToken`: a token of the pod's service account, bound to the
 * pod, issued by the API server for `audience` (absent: the API server's own) and valid for
 * `expirationSeconds`, written at `path`; the agent asks for a new one at 80 % of its life.
 */
export interface ServiceAccountTokenFile {
  readonly audience?: string;
  /** At least 600 (the API server's minimum); 3600 when not written. */
  readonly expirationSeconds: number;
  readonly path: string;
}

/** The keys of a ConfigMap or Secret as files: each key a file named after it, or only `items`, where they say. */
export interface ObjectFiles {
  readonly name: string;
  readonly items?: readonly { readonly key: string; readonly path: string; readonly mode?: number }[];
  /** A missing object (or item key) is then no file rather than a pod that waits. */
  readonly optional?: boolean;
}

/** A file holding one pod field (`metadata.labels` whole, as `key="value"` lines) or one container resource. */
export interface DownwardFile {
  readonly path: string;
  readonly fieldRef?: { readonly fieldPath: string };
  readonly resourceFieldRef?: { readonly containerName: string; readonly resource: EnvResource; readonly divisor?: number };
  readonly mode?: number;
}

/** A ConfigMap's or Secret's key, read into a variable (v1 `configMapKeyRef`, `secretKeyRef`). */
export interface ObjectKeyRef {
  readonly name: string;
  readonly key: string;
  /** A missing object or key then leaves the variable out rather than holding the container back. */
  readonly optional?: boolean;
}

/** Every key of a ConfigMap or Secret as a variable (v1 `envFrom`), each name after `prefix`. */
export interface EnvFromSource {
  readonly prefix?: string;
  readonly configMapRef?: { readonly name: string; readonly optional?: boolean };
  readonly secretRef?: { readonly name: string; readonly optional?: boolean };
}

/** The protocol of a container's port. */
export type Protocol = 'TCP' | 'UDP';

/** A port a container listens on, and where the host publishes it, if it does. */
export interface Port {
  readonly name?: string;
  readonly containerPort: number;
  /**
   * Absent means the port is not published on the host. In a manifest that names its version, a
   * port written without `hostPort` is published on its `containerPort` (as in 2014), so it is
   * present here; `hostPort: 0` written out is the way to keep such a port unpublished.
   */
  readonly hostPort?: number;
  /** The host address the port is published on (v1 `hostIP`). Absent: every address. */
  readonly hostIP?: string;
  readonly protocol: Protocol;
}

/** A variable of a container's environment: a written value, or one read from the pod, the node or an object. */
export interface EnvVar {
  readonly name: string;
  /** As written; `$(NAME)` of a variable before it is expanded (see `expandVariables`). `''` with `valueFrom`. */
  readonly value: string;
  /** Read from the pod, the node or the container's resources instead (v1 `valueFrom`; see `resolveContainerEnv`). */
  readonly valueFrom?: EnvVarSource;
}

/** Where a variable's value comes from: exactly one of a pod field (the downward API), a container's resource, a ConfigMap's or a Secret's key. */
export interface EnvVarSource {
  readonly configMapKeyRef?: ObjectKeyRef;
  readonly secretKeyRef?: ObjectKeyRef;
  /** One of `POD_FIELD_PATHS`, or `metadata.labels['<key>']` / `metadata.annotations['<key>']`. */
  readonly fieldRef?: { readonly fieldPath: string };
  readonly resourceFieldRef?: {
    /** Absent: the container itself. */
    readonly containerName?: string;
    readonly resource: EnvResource;
    /** In millicores for CPU (default 1000: cores), in bytes for memory (default 1). */
    readonly divisor?: number;
  };
}

/** Where one of the pod's volumes appears in a container, and whether it is read-only. */
export interface VolumeMount {
  readonly name: string;
  /** Where it appears in the container (written `path` in the first 2014 manifests). */
  readonly mountPath: string;
  readonly readOnly: boolean;
  /**
   * `HOST`: the host's directory at `mountPath` itself is bound there (the 2014 `mountType: HOST`),
   * which validation accepts only with `allowHostMounts`. Absent (`LOCAL`, the default): the pod
   * volume `name`.
   */
  readonly mountType?: 'HOST';
  /** A path inside the volume, bound instead of the whole of it (v1 `subPath`; made as a directory when missing). */
  readonly subPath?: string;
}

/** One container of a manifest: its image, command, environment, ports, mounts, probes, limits and security. */
export interface Container {
  readonly name: string;
  readonly image: string;
  /**
   * The 2014 `command`: replaces the image's CMD and keeps its ENTRYPOINT (the 2014 kubelet set
   * Docker's `Cmd` from it). A v1 Pod's `args` is this same field.
   */
  readonly command?: readonly string[];
  /** A v1 Pod's `command`: replaces the image's ENTRYPOINT (and with it the CMD, unless `command` is set). */
  readonly entrypoint?: readonly string[];
  readonly workingDir?: string;
  /**
   * v1 `stdin`: the container's standard input stays open (a pipe the engine holds) for an attach
   * to write to; `stdinOnce`: it closes when the first attach that wrote to it ends. Absent: /dev/null.
   */
  readonly stdin?: boolean;
  readonly stdinOnce?: boolean;
  /** v1 `tty`: the container's main process runs on a terminal (its output then one stream, stdout). */
  readonly tty?: boolean;
  readonly ports: readonly Port[];
  /** The variables of ConfigMaps and Secrets, before `env` (whose variables win over them). Absent: none. */
  readonly envFrom?: readonly EnvFromSource[];
  readonly env: readonly EnvVar[];
  /** Memory limit in bytes. */
  readonly memory?: number;
  /**
   * A v1 `requests.memory` in bytes: checked (at most the limit) and not applied, since one host
   * schedules nothing; what a `resourceFieldRef` of `requests.memory` reads. Not part of the spec hash.
   */
  readonly memoryRequest?: number;
  /** Relative CPU shares. */
  readonly cpu?: number;
  /** A CPU limit in thousandths of a CPU (v1 `resources.limits.cpu`: `500m` is 500), enforced as a CFS quota. */
  readonly cpuLimitMillis?: number;
  readonly volumeMounts: readonly VolumeMount[];
  /** Absent: `Always` for `:latest` or an untagged image, else `IfNotPresent` (the kubelet's rule). */
  readonly imagePullPolicy?: PullPolicy;
  readonly livenessProbe?: Probe;
  /** Reported (the pod's `Ready` condition), never acted on. */
  readonly readinessProbe?: Probe;
  /** Until it passes, liveness and readiness are not probed; failing `failureThreshold` times kills the container, as liveness does. */
  readonly startupProbe?: Probe;
  /** A v1 container's `securityContext`, kept as written (after validation); see `containerSecurityOf`. */
  readonly securityContext?: ContainerSecurityContext;
  /** `Always` on an init container makes it a sidecar (v1 `initContainers[].restartPolicy`); nothing else takes it. */
  readonly restartPolicy?: 'Always';
  /** What runs right after the container starts, and before it is stopped (v1 `lifecycle`). Absent: nothing. */
  readonly lifecycle?: Lifecycle;
}

/**
 * A container's hooks, as the kubelet runs them: `postStart` right after the start (the container
 * is killed when it fails, and its restart policy decides), `preStop` before the stop signal, within
 * the grace period (what it leaves of it, at least 2 s, is the stop's).
 */
export interface Lifecycle {
  readonly postStart?: LifecycleHandler;
  readonly preStop?: LifecycleHandler;
}

/** One hook: exactly one of a command in the container, an HTTP GET to the pod (its IP, or `host`), a pause. */
export interface LifecycleHandler {
  readonly exec?: { readonly command: readonly string[] };
  readonly httpGet?: NonNullable<Probe['httpGet']>;
  readonly sleep?: { readonly seconds: number };
}

/** The kubelet's default: `:latest` or no tag → `Always`, anything else → `IfNotPresent`. */
export function effectivePullPolicy(container: Pick<Container, 'image' | 'imagePullPolicy'>): PullPolicy {
  if (container.imagePullPolicy !== undefined) return container.imagePullPolicy;
  if (container.image.includes('@')) return 'IfNotPresent'; // pinned by digest
  const lastPart = container.image.slice(container.image.lastIndexOf('/') + 1);
  const tag = lastPart.includes(':') ? lastPart.slice(lastPart.indexOf(':') + 1) : 'latest';
  return tag === 'latest' ? 'Always' : 'IfNotPresent';
}

/** A manifest together with the source that asked for it. */
export interface DesiredPod {
  readonly manifest: ContainerManifest;
  readonly source: string;
}
