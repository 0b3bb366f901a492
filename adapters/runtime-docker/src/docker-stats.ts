import type { ContainerStats, InterfaceStats, SandboxStats } from '@kubelet-ts/core';
import type { DockerNetworkStats, DockerStats, DockerVersion } from './docker-api.js';
import { engineKindOf } from './engine-kind.js';
import { memoryOfCgroup } from '@kubelet-ts/cgroup-stats';

/** How an engine's figures differ from Docker's where the mapping must make up for it. */
export interface StatsQuirks {
  /**
   * Podman before 4.4 reports what its pod's interface sent as received and the other way round
   * (containers/podman#16618, fixed in 4.4 by #16628): checked here on 4.3.1 against the
   * namespace's own `eth0` counters.
   */
  readonly swappedNetwork: boolean;
}

export function statsQuirksOf(version: DockerVersion): StatsQuirks {
  if (engineKindOf(version) !== 'podman') return { swappedNetwork: false };
  const podman = version.Components?.find((c) => /podman/i.test(c.Name))?.Version ?? version.Version ?? '';
  const [, major, minor] = /^(\d+)\.(\d+)/.exec(podman) ?? [];
  // An unknown version is taken as a current one.
  if (major === undefined || minor === undefined) return { swappedNetwork: false };
  return { swappedNetwork: Number(major) < 4 || (Number(major) === 4 && Number(minor) < 4) };
}

/**
 * A container's figures from the engine's one-shot stats, as cAdvisor (and so the kubelet) reads
 * its cgroup (`memoryOfCgroup`): the engine's `memory_stats.stats` is the cgroup's `memory.stat`.
 * Podman sends no `memory.stat`: its working set is then its usage. `now` stands for the time of a
 * container that is not running, which the engine dates to year 1.
 */
export function containerStatsOf(figures: DockerStats, now: number): ContainerStats {
  const memory = figures.memory_stats ?? {};
  return {
    timestamp: timestampOf(figures, now),
    cpu: { usageNanoseconds: figures.cpu_stats?.cpu_usage?.total_usage ?? 0 },
    // Without a limit of its own, the engine reports the host's memory as the limit.
    memory: memoryOfCgroup(memory.usage ?? 0, memory.stats ?? {}, memory.limit),
  };
}

/**
 * A sandbox's figures from its holder's one-shot stats: the traffic of the pod's interface (`eth0`,
 * else the first the engine names; Podman 4 names its pod's interface `network`). Docker names
 * no network for a holder on the host's network: the pod's network is then absent (the host's is
 * the node's). Podman reports zeros for one instead: the caller, who knows, says `hostNetwork`.
 */
export function sandboxStatsOf(
  figures: DockerStats,
  now: number,
  options: { readonly quirks: StatsQuirks; readonly hostNetwork?: boolean },
): SandboxStats {
  const timestamp = timestampOf(figures, now);
  const networks = Object.entries(figures.networks ?? {});
  const [name, traffic] = networks.find(([n]) => n === 'eth0') ?? networks[0] ?? [];
  if (name === undefined || traffic === undefined || options.hostNetwork === true) return { timestamp };
  return { timestamp, network: interfaceOf(name, traffic, options.quirks) };
}

function interfaceOf(name: string, traffic: DockerNetworkStats, quirks: StatsQuirks): InterfaceStats {
  const rx = { bytes: traffic.rx_bytes ?? 0, errors: traffic.rx_errors ?? 0 };
  const tx = { bytes: traffic.tx_bytes ?? 0, errors: traffic.tx_errors ?? 0 };
  const [received, sent] = quirks.swappedNetwork ? [tx, rx] : [rx, tx];
  return { name, rxBytes: received.bytes, rxErrors: received.errors, txBytes: sent.bytes, txErrors: sent.errors };
}

/** The engine's time of the figures; a container that is not running has `0001-01-01T00:00:00Z` (or none). */
function timestampOf(figures: DockerStats, now: number): number {
  const read = Date.parse(figures.read ?? '');
  return Number.isNaN(read) || read <= 0 ? now : read;
}
