import type { ContainerSecurity } from './security.js';
import type { ContainerLogSource } from './container-logs.js';
import type { ContainerStreaming } from './container-streams.js';
import type { ContainerStatsSource } from './resource-stats.js';
import type { EmptyDir, HostPathType, Protocol } from './manifest.js';
import type { SandboxSpec, SandboxSummary } from './sandbox.js';
import type { PullCredential } from './pull-credentials.js';

/** A container's state on the runtime. */
export type ContainerState = 'created' | 'running' | 'exited';

/** What the agent asks a runtime to create: the manifest container, already mapped to runtime terms. */
export interface ContainerSpec {
  /** The container's name on the runtime (see `buildContainerName`). */
  readonly name: string;
  /** The manifest (pod) this container belongs to; runtimes keep its volumes per pod. */
  readonly podId: string;
  readonly image: string;
  /** Replaces the image's CMD (Docker `Cmd`, CRI `args`). */
  readonly command?: readonly string[];
  /** Replaces the image's ENTRYPOINT (Docker `Entrypoint`, CRI `command`). */
  readonly entrypoint?: readonly string[];
  readonly workingDir?: string;
  /** Standard input kept open for attaches (Docker `OpenStdin`, CRI `stdin`), and closed after the first (`StdinOnce`). */
  readonly stdin?: boolean;
  readonly stdinOnce?: boolean;
  /** A terminal for the main process (Docker `Tty`, CRI `tty`): its output is one stream, stdout. */
  readonly tty?: boolean;
  readonly env: Readonly<Record<string, string>>;
  /**
   * This container's own ports, kept with it for the record. Its sandbox publishes them (the pod's
   * `ports`, made when the sandbox runs); the container publishes nothing itself.
   */
  readonly ports: readonly PortBinding[];
  readonly mounts: readonly Mount[];
  readonly memory?: number;
  readonly cpuShares?: number;
  /** CPU limit in thousandths of a CPU: a CFS quota of `cpuLimitMillis × 100` µs per 100,000 µs period. */
  readonly cpuLimitMillis?: number;
  /** The container joins its sandbox's process namespace (v1 `shareProcessNamespace`); a CRI sandbox made so shares it already. */
  readonly sharedProcessNamespace?: boolean;
  /** The container is in the host's process namespace (v1 `hostPID`) / IPC namespace (`hostIPC`); its CRI sandbox is made so too. */
  readonly hostPID?: boolean;
  readonly hostIPC?: boolean;
  /**
   * The pod's IPC sysctls (v1 `securityContext.sysctls` of the IPC namespace), for a runtime whose
   * containers each have an IPC namespace of their own (Docker, Podman). A CRI sandbox carries
   * every sysctl for its pod (`SandboxSpec.sysctls`), and a sandbox holder the network ones.
   */
  readonly ipcSysctls?: Readonly<Record<string, string>>;
  /** Who the container runs as and what it may do (see `ContainerSecurity`); absent: the engine's defaults. */
  readonly security?: ContainerSecurity;
  /** Labels stored with the container and returned by `list` and `inspect` unchanged. */
  readonly labels: Readonly<Record<string, string>>;
}

/** A container port the runtime publishes on the host (the sandbox's, for a pod). */
export interface PortBinding {
  readonly containerPort: number;
  readonly hostPort?: number;
  /** The host address to publish on; absent: every address. */
  readonly hostIp?: string;
  readonly protocol: Protocol;
}

/**
 * A mount of a pod volume; the runtime decides where the volume lives on the host. With `hostPath`
 * (a manifest's `mountType: HOST`, accepted only when the agent allows host mounts) the runtime
 * binds that host directory instead, as it is, and makes no pod volume for it.
 */
export interface Mount {
  readonly volume: string;
  readonly containerPath: string;
  readonly readOnly: boolean;
  /** An absolute, normal host path other than `/` (validation makes sure), bound at `containerPath`. */
  readonly hostPath?: string;
  /**
   * With a v1 `hostPath` volume: the `type` the host path must have, checked (and for the `…OrCreate`
   * types, made) by the agent before the container is created (the runner's `prepareHostPath`);
   * runtimes only bind. Absent (and for 2014 HOST mounts): no check.
   */
  readonly hostPathType?: HostPathType;
  /**
   * A named volume of the host (a v1 `persistentVolumeClaim`): the runtime binds the claim's
   * directory (`claimVolumeDir` in `@kubelet-ts/host-volumes`), which no pod removal touches.
   */
  readonly claim?: string;
  /**
   * A volume of files (ConfigMap, Secret, downward API): the agent writes them in a directory of its
   * own and gives that directory as `hostPath` before the create, so runtimes only bind it.
   */
  readonly files?: boolean;
  /** The pod volume in memory, or with another mode (v1 `emptyDir`; see `EmptyDir`): made so by `podVolumeDir`. */
  readonly emptyDir?: EmptyDir;
  /** A path inside the volume to bind instead of the whole of it (v1 `subPath`): relative, without `..` (validation makes sure). */
  readonly subPath?: string;
}

/** A container as `list` sees it. Times are milliseconds since the epoch. */
export interface ContainerSummary {
  readonly id: string;
  readonly name: string;
  readonly image: string;
  /**
   * The image the engine ran, as it names it (Docker's `ImageID`, `sha256:…`; CRI's `image_ref`, a
   * digest reference): a v1 container status's `imageID`. Absent when the engine does not say.
   */
  readonly imageRef?: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly state: ContainerState;
  readonly createdAt: number;
  readonly startedAt?: number;
  readonly finishedAt?: number;
  readonly exitCode?: number;
}

/** `inspect` adds the spec the container was made from and the runtime's own record of it. */
export interface ContainerDetails extends ContainerSummary {
  readonly spec: ContainerSpec;
  /** The runtime's native inspect data, for display (`GET /containerInfo`); never interpreted. */
  readonly raw: unknown;
}

/** What `ContainerRuntime.list` lists: only the agent's containers by default, or one pod's. */
export interface ListOptions {
  /** Include containers without the agent's labels. Default false: foreign containers are invisible. */
  readonly includeForeign?: boolean;
  /**
   * Only the containers of this pod (those whose `io.kubelet-ts.manifest-id` label is `podId`), or
   * its sandboxes (`io.kubelet-ts.pod-infra`): what the agent asks when an event names one pod, so
   * that it need not list the whole host. Ignores `includeForeign`.
   */
  readonly podId?: string;
}

/**
 * The images a runtime runs containers from, a service of their own beside the containers (CRI's
 * ImageService beside its RuntimeService): the agent makes sure a container's image is there, by
 * its pull policy, before it creates the container.
 *
 * The contract:
 * - `hasImage` says whether the runtime has the image now; it never pulls.
 * - `pull` of an image it cannot get rejects with `NotFound`, a registry that refuses the
 *   credentials given (or wants some and got none) included, with the registry's words; an
 *   unreachable registry or engine rejects with `Unavailable`. Concurrent pulls of one image with
 *   the same credentials (or none) share one transfer, and every caller gets its one outcome: the
 *   agent pulls for each pod that needs an image and relies on this rather than keeping a
 *   single-flight of its own. Pulls with other credentials never share one: a pod's wrong
 *   password must not fail, nor its right one succeed for, another pod's pull.
 * - `credentials` (from the pod's pull secrets, see `pullCredentialsFor`) go to the engine for
 *   this one pull, and to nothing else: never into a log, an error or an event (errors name
 *   `credential.source` at most). Without them the engine pulls as it would alone.
 * - Any call may reject with `Unavailable` when the runtime cannot be reached.
 */
export interface ImageService {
  pull(image: string, credentials?: PullCredential): Promise<void>;
  hasImage(image: string): Promise<boolean>;
  /** The images the runtime holds, with their names and sizes: a Node's `status.images`. */
  list(): Promise<ImageRecord[]>;
}

/** An image a runtime holds: the names it answers to (tags, then digests) and its size in bytes. */
export interface ImageRecord {
  readonly names: readonly string[];
  readonly sizeBytes: number;
}

/**
 * The five calls of the 2014 agent, the one more a real engine needs (remove), the pod sandbox
 * (CRI's RunPodSandbox, then containers in it) and, beside them, the runtime's images (`images`),
 * in domain types only. Every implementation runs `runtimeContract` from `@kubelet-ts/conformance`.
 *
 * The contract of pods:
 * - `runSandbox` makes the pod's namespace, publishes `spec.ports` on it once, and resolves when it
 *   is `ready`. A name already taken rejects with `Conflict`; a host port another holds rejects (and
 *   leaves no sandbox behind).
 * - `listSandboxes` returns every sandbox carrying the `io.kubelet-ts.pod-infra` label, in any
 *   state, and nothing else unless `includeForeign` is set; with `podId`, only that pod's. A sandbox whose namespace is gone (its
 *   holder exited, the engine restarted) is `notready`, and a `notready` sandbox is never made
 *   ready again by the runtime: the agent replaces it.
 * - `create(spec, sandboxId)` puts the container in the sandbox's namespace: containers of one
 *   sandbox reach each other on 127.0.0.1. Every container is made in a sandbox (as in CRI: there
 *   is no container outside one); an unknown sandbox rejects with `NotFound`.
 * - `stopSandbox` ends the namespace (its containers are then stopped too); stopping a stopped one
 *   succeeds; an unknown id rejects with `NotFound`.
 * - `removeSandbox` removes every container in the sandbox (forced) and the sandbox; with
 *   `volumes: true` also the pod's volumes (the pod is gone). Removing an id already gone succeeds.
 *
 * The contract of containers:
 * - `list` returns every container carrying the `io.kubelet-ts.manifest-id` label, in any state,
 *   and nothing else unless `includeForeign` is set; with `podId`, only that pod's. One call per
 *   relist; the agent reads what it saw from its pod cache between relists.
 * - `inspect`, `start`, `stop` of an unknown id reject with `NotFound`.
 * - `create` of a name already taken rejects with `Conflict`; an image the runtime does not have
 *   rejects with `NotFound` (pull it first, through `images`). It never starts the container.
 * - `start` of a running container succeeds and changes nothing. A start that fails leaves the
 *   container `exited` (or `created`) and rejects.
 * - `stop` asks the container to end, waits up to `timeoutSeconds`, then kills it. Stopping a
 *   container that is not running succeeds.
 * - `remove` of a running container rejects with `Conflict` unless `force`; removing an id that is
 *   already gone succeeds.
 * - `exec` runs a command in a running container (see its own doc).
 * - Any call may reject with `Unavailable` when the runtime cannot be reached.
 */
export interface ContainerRuntime {
  /** Short name used in logs and errors (`docker`, `memory`, `cri`). */
  readonly name: string;
  /**
   * The optional powers this runtime has, declared: the agent and the conformance suite read this,
   * never the presence of a method, and `wrapRuntime` keeps every one of them.
   */
  readonly capabilities: RuntimeCapabilities;
  /** The images it runs containers from (see `ImageService`): every runtime has them. */
  readonly images: ImageService;
  runSandbox(spec: SandboxSpec): Promise<SandboxSummary>;
  listSandboxes(options?: ListOptions): Promise<SandboxSummary[]>;
  stopSandbox(id: string): Promise<void>;
  removeSandbox(id: string, options?: { readonly volumes?: boolean }): Promise<void>;
  list(options?: ListOptions): Promise<ContainerSummary[]>;
  inspect(id: string): Promise<ContainerDetails>;
  /**
   * Creates (never starts) the container in the sandbox `sandboxId`, whose namespace and published
   * ports it shares. `NotFound` when there is no such sandbox (see the contract above).
   */
  create(spec: ContainerSpec, sandboxId: string): Promise<ContainerSummary>;
  start(id: string): Promise<void>;
  stop(id: string, timeoutSeconds: number): Promise<void>;
  remove(id: string, options?: { readonly force?: boolean }): Promise<void>;
  /**
   * Runs `command` inside a running container (liveness probes) and resolves with its exit code
   * and combined output. `Conflict` when the container is not running; `Timeout` when the command
   * has not finished within `timeoutMs` (it may go on running inside the container).
   */
  exec(id: string, command: readonly string[], timeoutMs: number): Promise<ExecResult>;
}

/** What a command run in a container (`exec`, a probe) ended with: its exit code and its output. */
export interface ExecResult {
  readonly exitCode: number;
  /** stdout and stderr, at most 64 KiB. */
  readonly output: string;
}

/** A change of one of the agent's containers, as the runtime reports it the moment it happens. */
export interface ContainerEvent {
  readonly type: 'started' | 'exited' | 'removed';
  /** The runtime's container id. */
  readonly containerId: string;
  /** The pod (manifest id) the container belongs to, when the runtime's event carries its labels. */
  readonly podId?: string;
  /** With `exited`, when the runtime says. */
  readonly exitCode?: number;
  /** When it happened (ms since the epoch), as the runtime says; else when the adapter heard of it. */
  readonly time: number;
}

/**
 * An optional power of a runtime (`capabilities.events`): a stream of changes of the agent's
 * containers (those carrying the `io.kubelet-ts.manifest-id` label), so the agent reacts in
 * milliseconds rather than at its next relist. A runtime without it is relisted only.
 *
 * The contract: `events(signal)` connects and yields events in the order the runtime gives them,
 * from the moment the iterator's first `next()` is called (a runtime that cannot ask "since then",
 * such as containerd's event service, from when its subscription arrives, milliseconds later),
 * until `signal` aborts (the iterator then returns at once, a pending `next()` included, and lets go
 * of its connection) or the connection ends (it throws a `KubeletError`, `Unavailable` when the
 * runtime cannot be reached or closed the stream). Events are never replayed: after an end the
 * caller reconnects and relists once, since events may have been missed in between. `exited` is
 * the container's own process, never an exec'd one. An `exited` or `removed` event is yielded
 * only once `list()` says so too (not running; gone), so a caller that relists on an event sees
 * what it said (`settledEvents` does this for an engine that announces before it lists). Events for
 * containers of other pods, or foreign ones, may arrive; the caller filters (the adapters here
 * deliver only labelled ones).
 */
export interface ContainerEventSource {
  events(signal: AbortSignal): AsyncIterable<ContainerEvent>;
}

/**
 * What a runtime can do beyond the calls every runtime has (virtual-kubelet's optional provider
 * interfaces, CRI's separate services). Each key present is a power the runtime has, given as the
 * object that does it (usually the runtime itself: `{ events: this }`); a key absent is a power it
 * lacks, and the agent does without (relists only; the stats and log routes answer 501). A runtime
 * declares exactly what it can do: the conformance suite runs the checks of each declared power
 * and skips, by name, those of the others.
 */
export interface RuntimeCapabilities {
  readonly events?: ContainerEventSource;
  readonly stats?: ContainerStatsSource;
  readonly logs?: ContainerLogSource;
  readonly streaming?: ContainerStreaming;
}

/** The name of an optional power (`'events'`, `'stats'`, `'logs'`, `'streaming'`). */
export type Capability = keyof RuntimeCapabilities;

// A `Record` of every key, so that a power added to `RuntimeCapabilities` without being listed here
// fails to compile rather than being missed by the checks that walk this list.
const EVERY_CAPABILITY: Readonly<Record<Capability, true>> = { events: true, stats: true, logs: true, streaming: true };

/** Every optional power (for checks that must cover each one). */
export const CAPABILITIES = Object.keys(EVERY_CAPABILITY) as readonly Capability[];
