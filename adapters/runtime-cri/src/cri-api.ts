/**
 * The slice of CRI v1 this adapter uses, as the messages look in JavaScript (proto-loader with
 * camelCase names, 64-bit integers as decimal strings, enums as their names, absent fields as
 * their defaults). Declared structurally, like the Docker adapter's `DockerApi`, so that the
 * runtime can be unit-tested with a plain object and no gRPC type leaves the package.
 */
export interface CriApi {
  version(request: Record<string, never>, deadline: Deadline): Promise<VersionResponse>;
  runPodSandbox(request: { config: PodSandboxConfig; runtimeHandler?: string }, deadline: Deadline): Promise<{ podSandboxId: string }>;
  stopPodSandbox(request: { podSandboxId: string }, deadline: Deadline): Promise<unknown>;
  removePodSandbox(request: { podSandboxId: string }, deadline: Deadline): Promise<unknown>;
  podSandboxStatus(
    request: { podSandboxId: string; verbose?: boolean },
    deadline: Deadline,
  ): Promise<{ status: PodSandboxStatus | null; info: Record<string, string> }>;
  listPodSandbox(
    request: { filter?: { id?: string; labelSelector?: Record<string, string> } },
    deadline: Deadline,
  ): Promise<{ items: PodSandbox[] }>;
  createContainer(
    request: { podSandboxId: string; config: ContainerConfig; sandboxConfig: PodSandboxConfig },
    deadline: Deadline,
  ): Promise<{ containerId: string }>;
  startContainer(request: { containerId: string }, deadline: Deadline): Promise<unknown>;
  stopContainer(request: { containerId: string; timeout: number }, deadline: Deadline): Promise<unknown>;
  removeContainer(request: { containerId: string }, deadline: Deadline): Promise<unknown>;
  listContainers(
    request: {
      filter?: { id?: string; state?: { state: string }; podSandboxId?: string; labelSelector?: Record<string, string> };
    },
    deadline: Deadline,
  ): Promise<{ containers: CriContainer[] }>;
  containerStatus(
    request: { containerId: string; verbose?: boolean },
    deadline: Deadline,
  ): Promise<{ status: ContainerStatus | null; info: Record<string, string> }>;
  execSync(
    request: { containerId: string; cmd: string[]; timeout: number },
    deadline: Deadline,
  ): Promise<{ stdout: Buffer; stderr: Buffer; exitCode: number }>;
  /** Where to run an exec session: a URL on the runtime's streaming server, good for one connection. */
  exec(request: CriStreamRequest & { containerId: string; cmd: string[] }, deadline: Deadline): Promise<{ url: string }>;
  /** Where to attach to a container's main process (as `exec`). */
  attach(request: CriStreamRequest & { containerId: string }, deadline: Deadline): Promise<{ url: string }>;
  /** Where to forward connections to ports in a sandbox's network namespace (as `exec`). */
  portForward(request: { podSandboxId: string; port: number[] }, deadline: Deadline): Promise<{ url: string }>;
  /** Has the runtime close the container's log file and open it again at its path (after the file was renamed: rotation). */
  reopenContainerLog(request: { containerId: string }, deadline: Deadline): Promise<unknown>;
  /** Figures of one container: `NOT_FOUND` for an unknown one; containerd answers one with no task (created, exited) with `UNKNOWN`. */
  containerStats(request: { containerId: string }, deadline: Deadline): Promise<{ stats: CriContainerStats | null }>;
  /** Figures of the containers the filter selects (all without one); those with no task have no CPU and memory. */
  listContainerStats(
    request: { filter?: { id?: string; podSandboxId?: string; labelSelector?: Record<string, string> } },
    deadline: Deadline,
  ): Promise<{ stats: CriContainerStats[] }>;
  /** Figures of the sandboxes the filter selects (ready ones only, with a filter: see `CriStats`). */
  listPodSandboxStats(
    request: { filter?: { id?: string; labelSelector?: Record<string, string> } },
    deadline: Deadline,
  ): Promise<{ stats: CriPodSandboxStats[] }>;
  imageStatus(request: { image: { image: string } }, deadline: Deadline): Promise<{ image: CriImage | null }>;
  listImages(request: Record<string, never>, deadline: Deadline): Promise<{ images: CriImage[] }>;
  /** `auth`: the registry credentials of this one pull (CRI's `AuthConfig`), as the kubelet sends a pull secret's. */
  pullImage(
    request: { image: { image: string }; auth?: { username: string; password: string } },
    deadline: Deadline,
  ): Promise<{ imageRef: string }>;
  /** Where the runtime keeps its images and what they take (containerd: its snapshotter's root, the snapshots' sizes). */
  imageFsInfo(request: Record<string, never>, deadline: Deadline): Promise<{ imageFilesystems: CriFilesystemUsage[] }>;
  /** Closes the connection; calls after it fail. */
  close(): void;
}

/** When a call gives up: milliseconds since the epoch, on the wall clock (gRPC's deadline). */
export type Deadline = number;

/** A 64-bit integer on the wire, as proto-loader gives it (decimal text) or as we send it. */
export type Int64 = string | number;

export type ProtocolName = 'TCP' | 'UDP' | 'SCTP';
export type NamespaceModeName = 'POD' | 'CONTAINER' | 'NODE' | 'TARGET';
export type PodSandboxStateName = 'SANDBOX_READY' | 'SANDBOX_NOTREADY';
export type ContainerStateName = 'CONTAINER_CREATED' | 'CONTAINER_RUNNING' | 'CONTAINER_EXITED' | 'CONTAINER_UNKNOWN';

/** Which standard streams an `exec` or `attach` session carries (CRI: `tty` and `stderr` not both). */
export interface CriStreamRequest {
  tty: boolean;
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
}

export interface VersionResponse {
  version: string;
  runtimeName: string;
  runtimeVersion: string;
  runtimeApiVersion: string;
}

export interface PortMapping {
  protocol: ProtocolName;
  containerPort: number;
  hostPort: number;
  hostIp: string;
}

export interface CriMount {
  containerPath: string;
  hostPath: string;
  readonly: boolean;
}

export interface NamespaceOption {
  network: NamespaceModeName;
  pid: NamespaceModeName;
  ipc: NamespaceModeName;
}

export interface SecurityProfile {
  profileType: 'RuntimeDefault' | 'Unconfined' | 'Localhost';
  localhostRef?: string;
}

export interface PodSandboxMetadata {
  name: string;
  uid: string;
  namespace: string;
  attempt: number;
}

export interface PodSandboxConfig {
  metadata: PodSandboxMetadata;
  hostname?: string;
  logDirectory?: string;
  /** The sandbox's resolver (its /etc/resolv.conf); absent, the runtime copies the host's. */
  dnsConfig?: { servers: string[]; searches: string[]; options: string[] };
  portMappings?: PortMapping[];
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  linux?: {
    cgroupParent?: string;
    securityContext?: { namespaceOptions?: NamespaceOption; privileged?: boolean; seccomp?: SecurityProfile };
    /** Kernel parameters of the pod's namespaces. */
    sysctls?: Record<string, string>;
  };
}

export interface PodSandboxStatus {
  id: string;
  metadata: PodSandboxMetadata | null;
  state: PodSandboxStateName;
  createdAt: Int64;
  network: { ip: string } | null;
  /** The namespaces it was run with (`NODE` network: the host's). */
  linux?: { namespaces: { options: NamespaceOption | null } | null } | null;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

export interface PodSandbox {
  id: string;
  metadata: PodSandboxMetadata | null;
  state: PodSandboxStateName;
  createdAt: Int64;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

export interface LinuxContainerResources {
  cpuPeriod?: Int64;
  cpuQuota?: Int64;
  cpuShares?: Int64;
  memoryLimitInBytes?: Int64;
}

/** What CreateContainer applies to the container's process (CRI's `LinuxContainerSecurityContext`). */
export interface LinuxContainerSecurityContext {
  capabilities?: { addCapabilities?: string[]; dropCapabilities?: string[] };
  privileged?: boolean;
  namespaceOptions?: NamespaceOption;
  selinuxOptions?: { user?: string; role?: string; type?: string; level?: string };
  runAsUser?: { value: Int64 };
  runAsUsername?: string;
  readonlyRootfs?: boolean;
  supplementalGroups?: Int64[];
  apparmorProfile?: string;
  noNewPrivs?: boolean;
  runAsGroup?: { value: Int64 };
  seccomp?: SecurityProfile;
  apparmor?: SecurityProfile;
}

export interface ContainerConfig {
  metadata: { name: string; attempt: number };
  image: { image: string };
  command?: string[];
  args?: string[];
  workingDir?: string;
  envs?: Array<{ key: string; value: string }>;
  mounts?: CriMount[];
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  logPath?: string;
  /** Standard input held open for attaches, closed after the first (`stdinOnce`); a terminal for the main process. */
  stdin?: boolean;
  stdinOnce?: boolean;
  tty?: boolean;
  linux?: {
    resources?: LinuxContainerResources;
    securityContext?: LinuxContainerSecurityContext;
  };
}

export interface CriContainer {
  id: string;
  podSandboxId: string;
  metadata: { name: string; attempt: number } | null;
  image: { image: string } | null;
  imageRef: string;
  state: ContainerStateName;
  createdAt: Int64;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

export interface ContainerStatus {
  id: string;
  metadata: { name: string; attempt: number } | null;
  state: ContainerStateName;
  createdAt: Int64;
  startedAt: Int64;
  finishedAt: Int64;
  exitCode: number;
  image: { image: string } | null;
  imageRef: string;
  reason: string;
  message: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  mounts: CriMount[];
  logPath: string;
  resources: { linux: LinuxContainerResources | null } | null;
}

export interface CriImage {
  id: string;
  repoTags: string[];
  repoDigests: string[];
  size: Int64;
  /** The image's user: a uid, or (absent uid) a name. */
  uid?: { value: Int64 } | null;
  username?: string;
}

/** A file system's use as CRI reports it (`FilesystemUsage`). */
export interface CriFilesystemUsage {
  timestamp: Int64;
  fsId: { mountpoint: string } | null;
  usedBytes: UInt64Value;
  inodesUsed: UInt64Value;
}

/** A figure the runtime may leave out (CRI's `UInt64Value`: absent is "unknown", not 0). */
export type UInt64Value = { value: Int64 } | null;

export interface CriCpuUsage {
  /** When the figures were taken (ns). */
  timestamp: Int64;
  usageCoreNanoSeconds: UInt64Value;
}

export interface CriMemoryUsage {
  timestamp: Int64;
  workingSetBytes: UInt64Value;
  /** The limit minus the working set; 0 when the container has no limit. */
  availableBytes: UInt64Value;
  usageBytes: UInt64Value;
  rssBytes: UInt64Value;
  pageFaults: UInt64Value;
  majorPageFaults: UInt64Value;
}

export interface CriContainerStats {
  attributes: { id: string } | null;
  cpu: CriCpuUsage | null;
  memory: CriMemoryUsage | null;
  writableLayer: { timestamp: Int64; usedBytes: UInt64Value } | null;
}

export interface CriNetworkInterfaceUsage {
  name: string;
  rxBytes: UInt64Value;
  rxErrors: UInt64Value;
  txBytes: UInt64Value;
  txErrors: UInt64Value;
}

export interface CriPodSandboxStats {
  attributes: { id: string } | null;
  linux: {
    cpu: CriCpuUsage | null;
    memory: CriMemoryUsage | null;
    /** Absent for a sandbox on the host's network. */
    network: { timestamp: Int64; defaultInterface: CriNetworkInterfaceUsage | null } | null;
  } | null;
}

/** What a failed call carries: grpc-js's `ServiceError` shape. */
export interface CriCallError {
  code?: number;
  details?: string;
  message: string;
}

/** gRPC status codes this adapter tells apart (`@grpc/grpc-js` `status`). */
export const GrpcCode = {
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  FAILED_PRECONDITION: 9,
  UNIMPLEMENTED: 12,
  UNAVAILABLE: 14,
} as const;
