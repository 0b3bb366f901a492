import type {
  ContainerRuntime,
  EventSink,
  Clock,
  HostAccess,
  Logger,
  ManifestSource,
  NodeAllocatable,
  ResolverConfig,
} from '@kubelet-ts/core';
import type { NodeFiguresOptions } from './node-figures.js';
import type { VolumeRoots } from './volume-figures.js';
import type { NetworkCheck } from './prober.js';
import type { RuntimeDeadlines } from './runtime-deadlines.js';
import type { SourceCheckpoints } from './source-checkpoints.js';
import type { SourceStatus } from './source-intake.js';
import type { PassResult } from './sync-loop.js';

/**
 * With the host access that manifests a source built from plain objects may take (`HostAccess`; off
 * by default, as the CLI's flags). Adapters' sources take their own.
 */
export interface KubeletOptions extends HostAccess {
  readonly runtime: ContainerRuntime;
  /** In priority order: when two give the same manifest id, the earlier source's manifest runs. */
  readonly sources: readonly ManifestSource[];
  /** Default: events are written to the logger. */
  readonly events?: EventSink;
  readonly logger?: Logger;
  readonly clock?: Clock;
  /** This host's name; labels every container so agents sharing an engine keep apart. Default: the OS's. */
  readonly hostname?: string;
  /** A pass runs after every change and at least this often. Default 10 s. */
  readonly syncFrequencyMs?: number;
  /**
   * Pods that pull, create and start containers at once, fixed. Default: adaptive — from 4, within
   * [4, 32], grown while completions per second rise and cut when they fall
   * (`AdaptiveSlots`; the gauge `kubelet_ts_start_concurrency` shows it). Stopping is not bounded:
   * a pod with a long grace period never holds up pods that start.
   */
  readonly concurrency?: number;
  /** `health()` turns unhealthy when no pass has completed for this long. Default: 3 × syncFrequencyMs, at least 30 s. */
  readonly healthThresholdMs?: number;
  /** Crash back-off of exited containers. Default the kubelet's: 10 s doubling to 300 s. */
  readonly crashBackOff?: { readonly initialMs: number; readonly maxMs: number };
  /** Liveness, readiness and startup probes: the address published ports are dialled on (default 127.0.0.1), and the checker. */
  readonly probes?: { readonly host?: string; readonly network?: NetworkCheck };
  /**
   * The host's resolver (the kubelet's `--resolv-conf`, read with `parseResolvConf`), which a pod's
   * `dnsConfig` adds to. Default: none, so such a pod gets its own settings alone; a pod without
   * `dnsConfig` gets the engine's copy of the host's resolv.conf either way.
   */
  readonly hostDns?: ResolverConfig;
  /**
   * The directory of `Localhost` seccomp profiles (the kubelet's `<root-dir>/seccomp`): a pod's
   * `localhostProfile` names a JSON file under it. Default: none, and a runtime refuses such a container.
   */
  readonly seccompProfileRoot?: string;
  /** Restart back-off for crashed sources. Default 1 s doubling to 60 s. */
  readonly sourceBackoff?: { readonly initialMs: number; readonly maxMs: number };
  /**
   * How long the agent waits for the engine's answer to a call before it gives up with `Timeout`
   * (a frozen engine must not hold the agent). Default: 2 min a call, 15 min a pull, and a stop's
   * grace period or an exec's timeout plus 1 min.
   */
  readonly runtimeDeadlines?: Partial<RuntimeDeadlines>;
  /**
   * Where each source's last good set is kept, so that it survives a restart (the CLI:
   * `FileSourceCheckpoints` under `--root-dir`). Without it, what the server was told is lost at a
   * restart, and a source unreadable at start holds every removal until it delivers.
   */
  readonly checkpoints?: SourceCheckpoints;
  /**
   * While the runtime's event stream flows (a runtime with `capabilities.events`), how often a
   * full pass lists the whole host; the passes between plan from the pod cache, which events keep
   * current, and list before they act. Default 300 s, the kubelet's evented PLEG relist period;
   * 0 lists on every pass. A runtime without events, or a stream that broke, lists on every pass.
   */
  readonly eventedRelistMs?: number;
  /**
   * Resource figures (`resourceUsage()`: the Summary API, `/metrics/resource`, `top`): how often the
   * node and the running pods are sampled (default 10 s, the kubelet's `--housekeeping-interval`;
   * 0 never), how often while nobody has read them for 2 min (`unreadIntervalMs`, default 300 s; not above
   * `intervalMs`: every interval, read or not), and the file systems of the volumes and of the
   * engine's images.
   */
  readonly housekeeping?: {
    readonly intervalMs?: number;
    readonly unreadIntervalMs?: number;
    readonly volumes?: VolumeRoots;
  } & NodeFiguresOptions;
  /**
   * Where the files of ConfigMap, Secret and downward API volumes are written, `<dir>/<pod>/<volume>`
   * (the CLI: `--volume-files-dir`, on the tmpfs `/dev/shm` by default, so a Secret never reaches a
   * disk). Without it, a pod that mounts one waits, saying so.
   */
  readonly volumeFilesDir?: string;
  /** The recent events kept for `recentEvents()` (`GET /events`): at most `maxEvents` (1,000), for `maxAgeMs` (1 h). */
  readonly eventLog?: { readonly maxEvents?: number; readonly maxAgeMs?: number };
  /**
   * What the node can give its pods (the kubelet's allocatable: `--max-pods`, capacity less
   * `--kube-reserved` and `--system-reserved`). A new pod that does not fit beside those admitted
   * is refused, as the kubelet refuses it (`OutOfpods`, `OutOfcpu`, `OutOfmemory`): it never runs,
   * and its status is `Failed` with that reason. A figure left out is not checked; default none.
   */
  readonly allocatable?: NodeAllocatable;
}

/** What `Kubelet.status()` reports: the hostname, each source's state, and the sync passes so far. */
export interface KubeletStatus {
  readonly hostname: string;
  readonly sources: readonly SourceStatus[];
  readonly passes: number;
  readonly lastPass?: PassResult;
}
