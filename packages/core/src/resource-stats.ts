/**
 * Figures of what containers, pods and the node use: what a runtime reports (`capabilities.stats`)
 * and what the agent serves from its last samples (`AgentView.resourceUsage`: the kubelet's Summary
 * API and `/metrics/resource`). Units are the kubelet's: bytes, nanoseconds, nanocores.
 */

/** Memory a container (or the node) uses, as cAdvisor reports it from the cgroup. */
export interface MemoryStats {
  /** All memory charged, page cache included. */
  readonly usageBytes: number;
  /** The container's limit, when it has one. */
  readonly limitBytes?: number;
  /**
   * What cannot be reclaimed under pressure: usage minus inactive file pages, never below 0 (the
   * figure `kubectl top`, the HPA and eviction read).
   */
  readonly workingSetBytes: number;
  /** Anonymous memory and swap cache (cgroup v1 `rss`, v2 `anon`), where the runtime reports it. */
  readonly rssBytes?: number;
  readonly pageFaults?: number;
  readonly majorPageFaults?: number;
}

/** What a container uses now (`GET /containerStats`, `/stats/<manifest>/<container>`). */
export interface ContainerStats {
  /** When the figures were taken (ms since the epoch). */
  readonly timestamp: number;
  /** CPU time used since the container started, in nanoseconds (all CPUs). */
  readonly cpu: { readonly usageNanoseconds: number };
  readonly memory: MemoryStats;
  /** Bytes the container wrote to its own writable layer, where the engine reports it. */
  readonly writableLayerBytes?: number;
}

/** Traffic through one network interface since it came up. */
export interface InterfaceStats {
  readonly name: string;
  readonly rxBytes: number;
  readonly rxErrors: number;
  readonly txBytes: number;
  readonly txErrors: number;
}

/** What a pod's sandbox reports: its network namespace's traffic (`eth0`, the pod's interface). */
export interface SandboxStats {
  readonly timestamp: number;
  /** Absent when the runtime cannot tell, and for a pod on the host's network (that is the node's). */
  readonly network?: InterfaceStats;
}

/** What the agent asks for at each housekeeping pass: its running containers and ready sandboxes. */
export interface StatsRequest {
  readonly containers: readonly string[];
  readonly sandboxes: readonly string[];
}

/** Figures by id; an id the runtime no longer knows is left out. */
export interface StatsSample {
  readonly containers: ReadonlyMap<string, ContainerStats>;
  readonly sandboxes: ReadonlyMap<string, SandboxStats>;
}

/**
 * An optional power of a runtime (`capabilities.stats`): figures of what containers and pods use.
 * Without it, the stats routes answer 501 and `/metrics/resource` has the node's figures only.
 */
export interface ContainerStatsSource {
  /** `NotFound` for an unknown container; figures of a stopped one may be zero. */
  stats(id: string): Promise<ContainerStats>;
  /**
   * Figures of many containers and sandboxes in as few engine calls as the engine allows (one
   * list on CRI; one one-shot read per container on Docker, which has no list). An id that is gone
   * is left out, not an error; `Unavailable` when the engine cannot be reached.
   */
  sample(request: StatsRequest): Promise<StatsSample>;
  /**
   * Where the engine keeps its images, and what they take there (the kubelet's `ImageFsInfo`), for
   * the Summary's `node.runtime.imageFs`; absent where the runtime cannot tell (a remote engine,
   * whose store is not on this host's file systems). `Unavailable` when the engine cannot be reached.
   */
  imageFs?(): Promise<ImageFsUsage>;
}

/** The file system of a runtime's image store (CRI's `FilesystemUsage` of `ImageFsInfo`). */
export interface ImageFsUsage {
  /** A directory of the store on this host (`statfs` of it gives the file system's size and space). */
  readonly mountpoint: string;
  /** What the images take (the sum of their sizes, as the kubelet counts them); absent: the file system's use stands for it. */
  readonly usedBytes?: number;
  readonly inodesUsed?: number;
}

/** A file system's size and use (the kubelet's `FsStats`). */
export interface FsStats {
  readonly timestamp: number;
  readonly availableBytes: number;
  readonly capacityBytes: number;
  readonly usedBytes: number;
  readonly inodesFree?: number;
  readonly inodes?: number;
  readonly inodesUsed?: number;
}

/** CPU with its rate: `usageNanoCores` is the use between the last two samples (absent after one). */
export interface CpuUsage {
  readonly usageNanoseconds: number;
  readonly usageNanoCores?: number;
}

/** The node, from the host itself (`/proc`, the file systems), at one housekeeping pass. */
export interface NodeUsage {
  readonly timestamp: number;
  /** When the host booted (ms since the epoch). */
  readonly startTime: number;
  readonly cpu: CpuUsage;
  readonly memory: MemoryStats & { readonly availableBytes: number };
  readonly network: readonly InterfaceStats[];
  /** The file system of the volumes root, and of the engine's image store, when they can be read. */
  readonly fs?: FsStats;
  readonly imageFs?: FsStats;
  /** The process ids in use and the most the kernel gives. */
  readonly rlimit?: { readonly maxpid: number; readonly curproc: number };
}

/** One running container of a pod, at one housekeeping pass. */
export interface ContainerUsage {
  readonly name: string;
  readonly id: string;
  /** When it started (ms since the epoch). */
  readonly startTime: number;
  readonly timestamp: number;
  readonly cpu: CpuUsage;
  readonly memory: MemoryStats;
  readonly writableLayerBytes?: number;
}

/** One desired pod with running containers, at one housekeeping pass. */
export interface PodUsage {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  /** When its sandbox was made, else its first container started (ms since the epoch). */
  readonly startTime: number;
  readonly timestamp: number;
  readonly containers: readonly ContainerUsage[];
  /** The sums of its containers. */
  readonly cpu: CpuUsage;
  readonly memory: MemoryStats;
  readonly network?: InterfaceStats;
  /** Its volumes of the agent's making (not host paths), as last measured; absent before the first measure. */
  readonly volumes?: readonly VolumeUsage[];
}

/**
 * What one of a pod's volumes takes (the kubelet's `VolumeStats`): `usedBytes` and `inodesUsed`
 * of its own directory (a walk that neither follows links nor leaves its file system), the rest of
 * the file system it is on. A claim's volume names its claim.
 */
export interface VolumeUsage extends FsStats {
  readonly name: string;
  readonly claim?: { readonly name: string; readonly namespace: string };
}

/** What the agent's last housekeeping pass saw; a read never calls the engine. */
export interface ResourceUsage {
  /** The agent's node name (the Summary's `node.nodeName`). */
  readonly nodeName: string;
  /** Undefined before the first pass. */
  readonly node: NodeUsage | undefined;
  readonly pods: readonly PodUsage[];
  /** Why the last pass has no pod figures (the runtime has no stats, or its call failed). */
  readonly error?: string;
}

/**
 * The interfaces of a network namespace from the kernel's `/proc/net/dev` (or `/proc/<pid>/net/dev`),
 * in its order, loopback left out: two header lines, then one line per interface,
 * `  eth0: <8 receive figures> <8 transmit figures>` (bytes, packets, errs, …; a name may touch its
 * first figure once that is wide).
 */
export function netDevInterfaces(text: string): InterfaceStats[] {
  const interfaces: InterfaceStats[] = [];
  for (const line of text.split('\n').slice(2)) {
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const name = line.slice(0, colon).trim();
    const figures = line
      .slice(colon + 1)
      .trim()
      .split(/\s+/)
      .map(Number);
    if (name === 'lo' || figures.length < 11) continue;
    interfaces.push({ name, rxBytes: figures[0]!, rxErrors: figures[2]!, txBytes: figures[8]!, txErrors: figures[10]! });
  }
  return interfaces;
}
