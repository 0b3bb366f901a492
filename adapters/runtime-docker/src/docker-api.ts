import type { Duplex } from 'node:stream';

/**
 * The slice of the Docker Engine API this adapter uses, declared structurally so that core never
 * sees a dockerode type and the adapter can be unit-tested with a plain object. A dockerode
 * `Docker` instance satisfies it as it is.
 */
export interface DockerApi {
  listContainers(options: { all: boolean; filters?: Record<string, string[]> }): Promise<DockerContainerInfo[]>;
  getContainer(id: string): DockerContainerHandle;
  createContainer(options: DockerCreateOptions): Promise<{ id: string }>;
  getImage(name: string): { inspect(): Promise<unknown> };
  /** `POST /images/create`; `authconfig` goes in the `X-Registry-Auth` header (dockerode keeps it out of the URL). */
  pull(image: string, options?: { authconfig: DockerAuthConfig }): Promise<NodeJS.ReadableStream>;
  modem: {
    /** One request to the engine as dockerode makes it; with `isStream`, the answer's body as a stream (`GET /containers/{id}/logs`). */
    dial(
      options: {
        path: string;
        method: string;
        isStream: boolean;
        abortSignal?: AbortSignal;
        /** Asks the engine to upgrade the connection (`Upgrade: tcp`): the answer is the raw socket, both ways (attach). */
        hijack?: boolean;
        /** The request's body as it is (an empty one: the body of an attach is not JSON but its stdin). */
        file?: Buffer;
        statusCodes: Record<number, boolean | string>;
        options: Record<string, string | number | boolean>;
      },
      callback: (error: unknown, result?: unknown) => void,
    ): void;
    followProgress(
      stream: NodeJS.ReadableStream,
      onFinished: (error: Error | null, output: unknown[]) => void,
      onProgress?: (event: PullProgressEvent) => void,
    ): void;
  };
  ping(): Promise<unknown>;
  /** `GET /info`: where the engine keeps its data (Podman's compatible service: its store's graph root). */
  info(): Promise<{ DockerRootDir?: string }>;
  /** `GET /images/json`: the images, each with its size. */
  listImages(): Promise<Array<{ Size?: number; RepoTags?: string[] | null; RepoDigests?: string[] | null }>>;
  /** What the engine is (`GET /version`): Docker, or Podman's compatible service. */
  version(): Promise<DockerVersion>;
  /** `GET /events`: the engine's events as they happen, one JSON object a line (see `dockerEvents`). */
  getEvents?(options: { since?: number; filters?: DockerEventFilters }): Promise<NodeJS.ReadableStream>;
}

/** The filters of `GET /events` this adapter uses. */
export interface DockerEventFilters {
  type?: Array<'container'>;
  label?: string[];
  event?: string[];
}

/** The slice of `GET /version` that tells the engine apart. */
export interface DockerVersion {
  Version?: string;
  /** Podman lists `Podman Engine` here. */
  Components?: Array<{ Name: string; Version?: string }>;
  Platform?: { Name?: string };
}

export interface DockerContainerHandle {
  inspect(): Promise<DockerInspect>;
  exec(options: DockerExecOptions): Promise<DockerExec>;
  /** `POST /containers/{id}/resize`: the size of the container's own terminal (attach). */
  resize(options: { h: number; w: number }): Promise<unknown>;
  start(): Promise<unknown>;
  stop(options: { t: number }): Promise<unknown>;
  remove(options: { force?: boolean; v?: boolean }): Promise<unknown>;
  /**
   * `GET /containers/{id}/stats?stream=false`. An empty body (Podman's answer for a container that
   * is not running) comes back from dockerode as an empty Buffer.
   */
  stats(options: { stream: false; 'one-shot'?: boolean }): Promise<DockerStats | Buffer>;
}

/** The one-shot figures of `GET /containers/{id}/stats?stream=false` (see `containerStatsOf`). */
export interface DockerStats {
  /** When the figures were taken; `0001-01-01T00:00:00Z` for a container that is not running. */
  read?: string;
  cpu_stats?: { cpu_usage?: { total_usage?: number } };
  /** `stats` is the cgroup's `memory.stat` as it is: v1 or v2 keys (Podman sends none). */
  memory_stats?: { usage?: number; limit?: number; stats?: Record<string, number | undefined> };
  /** By interface, in the container's network namespace; absent for one on the host's network (Docker). */
  networks?: Record<string, DockerNetworkStats>;
}

export interface DockerNetworkStats {
  rx_bytes?: number;
  rx_errors?: number;
  tx_bytes?: number;
  tx_errors?: number;
}

/** `POST /containers/{id}/exec`. */
export interface DockerExecOptions {
  Cmd: string[];
  AttachStdin?: boolean;
  AttachStdout: boolean;
  AttachStderr: boolean;
  Tty?: boolean;
  /** The terminal's size to begin with, `[height, width]` (API 1.42; older engines ignore it). */
  ConsoleSize?: [number, number];
}

export interface DockerExec {
  /** The output, multiplexed, until the process ends (the liveness exec). */
  start(options: Record<string, never>): Promise<NodeJS.ReadableStream>;
  /** The upgraded connection itself: stdin written to it, the output read from it (a streaming exec). */
  start(options: { hijack: true; stdin: boolean; Tty: boolean }): Promise<Duplex>;
  /** The size of the exec's terminal; only once its process runs. */
  resize(options: { h: number; w: number }): Promise<unknown>;
  /** `Pid` is the process's id in the host's namespace (0 before it runs), on Docker and on Podman. */
  inspect(): Promise<{ Running: boolean; ExitCode: number | null; Pid?: number }>;
}

export interface DockerContainerInfo {
  Id: string;
  Names: string[];
  Image: string;
  /** The image's id (`sha256:…`); Podman's compatible API gives it too. */
  ImageID?: string;
  Labels: Record<string, string>;
  State: string;
  Status: string;
  Created: number;
  /** `container:<id>` for a container in a pod's namespace; `host`, `bridge`, `default`, … otherwise. */
  HostConfig?: { NetworkMode?: string };
  /** The networks it is on, with its address in each (empty on the host's network, and when stopped). */
  NetworkSettings?: { Networks?: Record<string, { IPAddress?: string } | null> | null } | null;
}

export interface DockerInspect {
  Id: string;
  Name: string;
  Created: string;
  State: { Status: string; ExitCode: number; StartedAt: string; FinishedAt: string; Running?: boolean; Pid?: number };
  Config: {
    Image: string;
    /** Whether the main process has a terminal, and whether its stdin is open to attach (closed after the first when StdinOnce). */
    Tty?: boolean;
    OpenStdin?: boolean;
    StdinOnce?: boolean;
    Cmd?: string[] | null;
    Entrypoint?: string | string[] | null;
    WorkingDir?: string;
    Env?: string[] | null;
    Labels?: Record<string, string> | null;
  };
  HostConfig: {
    NetworkMode?: string;
    Binds?: string[] | null;
    Memory?: number;
    CpuShares?: number;
    CpuPeriod?: number;
    CpuQuota?: number;
  };
}

export interface DockerCreateOptions {
  name: string;
  Image: string;
  Hostname?: string;
  Cmd?: string[];
  Entrypoint?: string[];
  WorkingDir?: string;
  /** Standard input held open for attaches (`docker run -i`), closed after the first (`StdinOnce`); a terminal (`-t`). */
  OpenStdin?: boolean;
  StdinOnce?: boolean;
  Tty?: boolean;
  Env?: string[];
  /** `uid`, `uid:gid`, or the image's user name with a gid. */
  User?: string;
  Labels: Record<string, string>;
  ExposedPorts?: Record<string, Record<string, never>>;
  HostConfig: {
    /** `container:<id>` joins that container's network namespace; `host` (a host-network sandbox) the host's. */
    NetworkMode?: string;
    /** `container:<id>` (Podman only) joins that container's UTS namespace, and so its hostname. */
    UTSMode?: string;
    PortBindings?: Record<string, Array<{ HostIp: string; HostPort: string }>>;
    /** Kernel parameters of the container's own namespaces (`docker run --sysctl`). */
    Sysctls?: Record<string, string>;
    /** The container's resolver (`--dns`, `--dns-search`, `--dns-option`): its resolv.conf, which containers joining its network share. */
    Dns?: string[];
    DnsSearch?: string[];
    DnsOptions?: string[];
    Binds?: string[];
    Memory?: number;
    CpuShares?: number;
    /** The CFS period and quota of a CPU limit, in µs (Podman's compatible API takes them too). */
    CpuPeriod?: number;
    CpuQuota?: number;
    RestartPolicy?: { Name: string };
    /** The log driver and its options: `json-file` with `max-size` and `max-file` bounds what the engine keeps. */
    LogConfig?: { Type: string; Config: Record<string, string> };
    /** Supplemental gids, as text. */
    GroupAdd?: string[];
    Privileged?: boolean;
    ReadonlyRootfs?: boolean;
    /** Capability names (`NET_ADMIN`), `ALL` in CapDrop for every one. */
    CapAdd?: string[];
    CapDrop?: string[];
    /** `no-new-privileges`, `seccomp=…`, `apparmor=…`, `label=type:…`. */
    SecurityOpt?: string[];
    /** `container:<id>` joins that container's process namespace; `host` the host's. */
    PidMode?: string;
    /** `host`: the host's IPC namespace. */
    IpcMode?: string;
  };
}

export interface PullProgressEvent {
  status?: string;
  id?: string;
  progress?: string;
  error?: string;
}

/** What dockerode attaches to a failed call. */
export interface DockerCallError {
  statusCode?: number;
  code?: string;
  reason?: string;
  json?: { message?: string } | null;
  message: string;
}

/** The registry credentials of one pull (the Engine API's `AuthConfig`). */
export interface DockerAuthConfig {
  readonly username: string;
  readonly password: string;
  /** The registry's host[:port], as `docker login` names it. */
  readonly serveraddress: string;
}
