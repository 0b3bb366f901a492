import type { KernelStatsOptions } from '@kubelet-ts/cgroup-stats';
import type { Clock, Logger } from '@kubelet-ts/core';
import type { CriApi } from './cri-api.js';
import type { LogRotationPolicy } from './cri-log-rotation.js';

/** How to reach the CRI runtime, and where pod volumes and container logs go. */
export interface CriRuntimeOptions {
  /** A ready client (tests, another transport); by default one is made for `endpoint`. */
  readonly cri?: CriApi;
  /** The kubelet's `--container-runtime-endpoint`: `unix:///path/to.sock` or a socket path. Default `unix:///run/containerd/containerd.sock`. */
  readonly endpoint?: string;
  /** Pod volumes live in `<volumesRoot>/<manifest id>/<volume name>`. Default `/var/lib/kubelet-ts/volumes`. */
  readonly volumesRoot?: string;
  /**
   * Container logs, written by the runtime in the kubelet's layout (the kubelet's `podLogsDir`):
   * `<logsRoot>/<namespace>_<pod>_<uid>/<container>/<restart count>.log`. Default `/var/log/pods`.
   */
  readonly logsRoot?: string;
  /** Where a link to each container's log file is kept, `<pod>_<namespace>_<container>-<id>.log`, for log shippers. Default `/var/log/containers`; `false`: none. */
  readonly containerLogLinksDir?: string | false;
  /** How the log files are rotated (the kubelet's `--container-log-max-size`, `-max-files`); default 10 MiB × 5 files, looked at every 10 s; `false`: never. */
  readonly containerLogs?: LogRotationPolicy | false;
  /** The host address published ports bind to. Default `0.0.0.0`, as a hostPort does in the kubelet. */
  readonly hostIp?: string;
  /** The sandboxes' cgroup parent (a cgroupfs path, or a slice with the systemd driver). Default: the runtime's choice. */
  readonly cgroupParent?: string;
  /** CRI's runtime handler (a RuntimeClass, e.g. `runc`). Default: the runtime's default handler. */
  readonly runtimeHandler?: string;
  /** Deadline of each call, stop's grace period on top. Default 2 min, the kubelet's `--runtime-request-timeout`. */
  readonly requestTimeoutMs?: number;
  /** Deadline of one image pull. Default 15 min. */
  readonly pullTimeoutMs?: number;
  /**
   * Where procfs and the cgroup hierarchies are, for the figures read from the kernel (a sandbox's
   * network; see `CriStats`) when the endpoint is a unix socket on this host; `false`: CRI's stats
   * calls only. Default: `/proc` and `/sys/fs/cgroup`.
   */
  readonly kernel?: KernelStatsOptions | false;
  readonly logger?: Logger;
  /** Time for creation stamps and pull durations. Default `systemClock`. (gRPC deadlines are the channel's, on the wall clock.) */
  readonly clock?: Clock;
}

/** containerd's CRI socket, where `CriRuntime` connects unless told otherwise (the kubelet's default). */
export const DEFAULT_CRI_ENDPOINT = 'unix:///run/containerd/containerd.sock';
/** Where pods' volume directories are made unless told otherwise (as the Docker runtime's). */
export const DEFAULT_VOLUMES_ROOT = '/var/lib/kubelet-ts/volumes';
/** Where containers' log files are written unless told otherwise (the kubelet's `/var/log/pods`). */
export const DEFAULT_LOGS_ROOT = '/var/log/pods';
/** Where each container's log file is linked by name unless told otherwise (the kubelet's `/var/log/containers`). */
export const DEFAULT_LOG_LINKS_DIR = '/var/log/containers';
/** The kubelet's defaults: 10 MiB per file, 5 files, looked at every 10 s. */
export const DEFAULT_LOG_ROTATION: LogRotationPolicy = { maxSizeBytes: 10 * 1024 * 1024, maxFiles: 5, intervalMs: 10_000 };

/** A unix socket (`unix:///path`, or a path): a runtime on this host, whose processes the agent's /proc shows. */
export function isUnixEndpoint(endpoint: string): boolean {
  return endpoint.startsWith('unix:') || endpoint.startsWith('/');
}
