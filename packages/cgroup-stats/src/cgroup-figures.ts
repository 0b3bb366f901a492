import type { ContainerStats, InterfaceStats, MemoryStats } from '@kubelet-ts/core';
import type { KernelRun } from './container-runs.js';
import type { CgroupFigures, KernelStats } from './kernel-stats.js';

/**
 * Memory as cAdvisor (and so the kubelet) reads a cgroup: the working set is the usage less the
 * inactive file pages (cgroup v1 `total_inactive_file`, v2 `inactive_file`), never below 0; rss is
 * v1 `total_rss` (or `rss`), v2 `anon`. On cgroup v1 the `total_` figures take the cgroup's
 * children in too (cAdvisor's hierarchical ones); a container has none, but they are what
 * cAdvisor and `docker stats` read. Without `memory.stat` (Podman's API sends none) the working set
 * is the usage, as cAdvisor's without the key, and rss and page faults are left out.
 */
export function memoryOfCgroup(usage: number, stat: Readonly<Record<string, number | undefined>>, limit: number | undefined): MemoryStats {
  const inactiveFile = stat['total_inactive_file'] ?? stat['inactive_file'];
  const rss = stat['total_rss'] ?? stat['rss'] ?? stat['anon'];
  const pageFaults = stat['total_pgfault'] ?? stat['pgfault'];
  const majorPageFaults = stat['total_pgmajfault'] ?? stat['pgmajfault'];
  return {
    usageBytes: usage,
    workingSetBytes: Math.max(0, usage - (inactiveFile ?? 0)),
    ...(limit === undefined ? {} : { limitBytes: limit }),
    ...(rss === undefined ? {} : { rssBytes: rss }),
    ...(pageFaults === undefined ? {} : { pageFaults }),
    ...(majorPageFaults === undefined ? {} : { majorPageFaults }),
  };
}

/** A container's figures read from its cgroup (`KernelStats.container`), dated `timestamp`. */
export function containerStatsOfCgroup(figures: CgroupFigures, timestamp: number): ContainerStats {
  return {
    timestamp,
    cpu: { usageNanoseconds: figures.cpuNanoseconds },
    memory: memoryOfCgroup(figures.usage, figures.stat, figures.limit),
  };
}

/** A pod's interface among its namespace's (`KernelStats.network`): `eth0`, else the first. */
function podInterfaceOf(interfaces: readonly InterfaceStats[]): InterfaceStats | undefined {
  return interfaces.find((i) => i.name === 'eth0') ?? interfaces[0];
}

/**
 * A pod's network from its holder (sandbox) process, for `ContainerRuns.read`: its namespace's
 * pod interface; none for a holder on the host's network (that namespace's traffic is the node's).
 */
export function holderNetworkOf(kernel: KernelStats, run: KernelRun): { readonly network?: InterfaceStats } {
  const network = run.hostNetwork ? undefined : podInterfaceOf(kernel.network(run.pid));
  return network === undefined ? {} : { network };
}
