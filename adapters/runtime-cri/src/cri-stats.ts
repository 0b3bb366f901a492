import {
  KubeletError,
  isKubeletError,
  type Clock,
  type ContainerStats,
  type ContainerStatsSource,
  type ImageFsUsage,
  type InterfaceStats,
  type Logger,
  type MemoryStats,
  type SandboxStats,
  type StatsRequest,
  type StatsSample,
} from '@kubelet-ts/core';
import { ContainerRuns, holderNetworkOf, type KernelStats } from '@kubelet-ts/cgroup-stats';
import {
  GrpcCode,
  type CriApi,
  type CriContainerStats,
  type CriMemoryUsage,
  type CriPodSandboxStats,
  type UInt64Value,
} from './cri-api.js';
import type { CriCall } from './cri-streams.js';
import { ADAPTER, grpcCodeOf } from './errors.js';
import { millis } from './mapping.js';

/** A `UInt64Value` as a number; `undefined` when the runtime left the figure out. */
export function figure(value: UInt64Value | undefined): number | undefined {
  return value === null || value === undefined ? undefined : Number(value.value);
}

function memoryOf(memory: CriMemoryUsage | null): MemoryStats {
  const workingSetBytes = figure(memory?.workingSetBytes) ?? 0;
  // usage_bytes came with CRI 1.23; before it, the working set is the best lower bound there is.
  const usageBytes = figure(memory?.usageBytes) ?? workingSetBytes;
  // CRI has no limit: containerd reports what is left under one (limit − working set), 0 without one.
  const available = figure(memory?.availableBytes) ?? 0;
  const rssBytes = figure(memory?.rssBytes);
  const pageFaults = figure(memory?.pageFaults);
  const majorPageFaults = figure(memory?.majorPageFaults);
  return {
    usageBytes,
    workingSetBytes,
    ...(available > 0 ? { limitBytes: workingSetBytes + available } : {}),
    ...(rssBytes === undefined ? {} : { rssBytes }),
    ...(pageFaults === undefined ? {} : { pageFaults }),
    ...(majorPageFaults === undefined ? {} : { majorPageFaults }),
  };
}

/**
 * CRI's figures of a container → the core's. Times are CRI nanoseconds, taken from the CPU read
 * (else the memory read, else `now`). A container with no task (created, exited) comes with no CPU
 * and memory in containerd's answer: its figures are zero, as the contract allows.
 */
export function containerStatsOf(stats: CriContainerStats, now: number): ContainerStats {
  const { cpu, memory, writableLayer } = stats;
  const writableLayerBytes = figure(writableLayer?.usedBytes);
  return {
    timestamp: millis(cpu?.timestamp) ?? millis(memory?.timestamp) ?? now,
    cpu: { usageNanoseconds: figure(cpu?.usageCoreNanoSeconds) ?? 0 },
    memory: memoryOf(memory),
    ...(writableLayerBytes === undefined ? {} : { writableLayerBytes }),
  };
}

/**
 * CRI's figures of a pod sandbox → the core's: its default interface (`eth0`), none for a sandbox
 * on the host's network. containerd 1.6 leaves the network's time at 0: the sandbox's CPU read,
 * taken in the same call, stands for it.
 */
export function sandboxStatsOf(stats: CriPodSandboxStats, now: number): SandboxStats {
  const linux = stats.linux;
  const timestamp = millis(linux?.network?.timestamp) ?? millis(linux?.cpu?.timestamp) ?? millis(linux?.memory?.timestamp) ?? now;
  const usage = linux?.network?.defaultInterface;
  if (usage === null || usage === undefined) return { timestamp };
  const network: InterfaceStats = {
    name: usage.name,
    rxBytes: figure(usage.rxBytes) ?? 0,
    rxErrors: figure(usage.rxErrors) ?? 0,
    txBytes: figure(usage.txBytes) ?? 0,
    txErrors: figure(usage.txErrors) ?? 0,
  };
  return { timestamp, network };
}

/** A list's filter for the requested ids: by id when there is one (the runtime reads just it), else none. */
function idFilter(ids: readonly string[]): { id?: string } {
  return ids.length === 1 ? { id: ids[0]! } : {};
}

/** The main process of a sandbox in its verbose status (containerd: `info.pid`); 0 when it tells none. */
export function sandboxPidOf(info: Readonly<Record<string, string>>): number {
  try {
    const pid = (JSON.parse(info['info'] ?? '{}') as { pid?: unknown }).pid;
    return typeof pid === 'number' && Number.isInteger(pid) && pid > 0 ? pid : 0;
  } catch {
    return 0;
  }
}

/**
 * The `stats` power over CRI (containerd ≥ 1.6, CRI-O ≥ 1.23). A sample is one `ListContainerStats`
 * and one `ListPodSandboxStats`, side by side, each kept to the requested ids here: CRI's label
 * selector matches values, and the agent's containers share no label value. A sandbox no longer
 * ready is left out with the gone ones (containerd cannot read its figures). A sandbox the runtime
 * cannot read is reported with no network (containerd reads a pod's figures in its cgroup parent,
 * and fails a sandbox run without one). A runtime without pod stats (`UNIMPLEMENTED`: older than
 * CRI 1.23, which brought `PodSandboxStats` and its list together) gives no sandbox figures, and
 * still its containers'.
 *
 * With `kernel` (a runtime on this host), a sandbox's network is read as cAdvisor reads it for the
 * kubelet, from its process's `/proc/<pid>/net/dev` (the process learnt once by a verbose
 * `PodSandboxStatus`), not by `ListPodSandboxStats`: containerd 1.6 answers that list by counting
 * each pod's processes through its shim and reading its containers' figures again, which for 200
 * pods took it about 9 s of a core and the agent 100 ms to decode — every 10 s. A sandbox the
 * kernel cannot tell (another pid namespace, a runtime that gives no pid) is still listed.
 *
 * `onHost` says the runtime runs on this host (its endpoint is a unix socket): its image store is
 * then one of this host's file systems (`imageFs`, from CRI's `ImageFsInfo`), and with `kernel` its
 * processes are this host's.
 */
export class CriStats implements ContainerStatsSource {
  private readonly sandboxRuns: ContainerRuns | undefined;
  readonly imageFs?: () => Promise<ImageFsUsage>;

  constructor(
    private readonly cri: CriApi,
    private readonly call: CriCall,
    private readonly clock: Clock,
    private readonly logger: Logger,
    onHost?: { readonly kernel: KernelStats | undefined },
  ) {
    if (onHost !== undefined) this.imageFs = () => this.readImageFs();
    const kernel = onHost?.kernel;
    this.sandboxRuns =
      kernel === undefined
        ? undefined
        : new ContainerRuns(kernel, async (id) => {
            const { status, info } = await this.call(`sandbox ${id}`, (deadline) =>
              this.cri.podSandboxStatus({ podSandboxId: id, verbose: true }, deadline),
            );
            if (status === null) throw new KubeletError('NotFound', `sandbox ${id}: the runtime does not know it`, { adapter: ADAPTER });
            return {
              pid: status.state === 'SANDBOX_READY' ? sandboxPidOf(info) : 0,
              hostNetwork: status.linux?.namespaces?.options?.network === 'NODE',
            };
          });
  }

  async stats(id: string): Promise<ContainerStats> {
    const what = `stats of ${id}`;
    try {
      const { stats } = await this.call(what, (deadline) => this.cri.containerStats({ containerId: id }, deadline));
      if (stats === null) throw new KubeletError('NotFound', `${what}: the runtime has no figures of it`, { adapter: ADAPTER });
      return containerStatsOf(stats, this.clock.now());
    } catch (error) {
      // containerd answers a container with no task (created, exited) with UNKNOWN, in words
      // ("unexpected metrics response"); its list names that container, without figures.
      if (!isKubeletError(error, 'Internal')) throw error;
      const { stats } = await this.call(what, (deadline) => this.cri.listContainerStats({ filter: { id } }, deadline));
      const listed = stats.find((s) => s.attributes?.id === id);
      if (listed === undefined) throw error;
      return containerStatsOf(listed, this.clock.now());
    }
  }

  /** The first image file system CRI names (containerd has one: its snapshotter's root). */
  private async readImageFs(): Promise<ImageFsUsage> {
    const { imageFilesystems } = await this.call('image fs info', (deadline) => this.cri.imageFsInfo({}, deadline));
    const fs = imageFilesystems.find((f) => (f.fsId?.mountpoint ?? '') !== '');
    if (fs === undefined)
      throw new KubeletError('Unsupported', 'the runtime names no image file system (ImageFsInfo)', { adapter: ADAPTER });
    const usedBytes = figure(fs.usedBytes);
    const inodesUsed = figure(fs.inodesUsed);
    return {
      mountpoint: fs.fsId!.mountpoint,
      ...(usedBytes === undefined ? {} : { usedBytes }),
      ...(inodesUsed === undefined ? {} : { inodesUsed }),
    };
  }

  async sample(request: StatsRequest): Promise<StatsSample> {
    const [containers, sandboxes] = await Promise.all([this.containers(request.containers), this.sandboxes(request.sandboxes)]);
    return { containers, sandboxes };
  }

  private async containers(ids: readonly string[]): Promise<Map<string, ContainerStats>> {
    if (ids.length === 0) return new Map();
    const { stats } = await this.call('list container stats', (deadline) =>
      this.cri.listContainerStats({ filter: idFilter(ids) }, deadline),
    );
    return pick(ids, stats, containerStatsOf, this.clock.now());
  }

  private async sandboxes(ids: readonly string[]): Promise<Map<string, SandboxStats>> {
    const runs = this.sandboxRuns;
    if (runs === undefined || ids.length === 0) return this.listedSandboxes(ids);
    const now = this.clock.now();
    const fromKernel = new Map<string, SandboxStats>();
    const listed: string[] = [];
    await Promise.all(
      ids.map(async (id) => {
        try {
          const { figures } = await runs.read(id, holderNetworkOf, { byProcess: true });
          if (figures === undefined) listed.push(id);
          else fromKernel.set(id, { timestamp: now, ...figures });
        } catch (error) {
          if (!isKubeletError(error, 'NotFound')) throw error;
        }
      }),
    );
    runs.keepOnly(new Set(ids));
    const fromList = await this.listedSandboxes(listed);
    const figures = new Map<string, SandboxStats>();
    for (const id of ids) {
      const found = fromKernel.get(id) ?? fromList.get(id);
      if (found !== undefined) figures.set(id, found);
    }
    return figures;
  }

  private async listedSandboxes(ids: readonly string[]): Promise<Map<string, SandboxStats>> {
    if (ids.length === 0) return new Map();
    try {
      // Always a filter, if an empty one: with none, containerd 1.6 reads every sandbox and fails
      // the whole list on one that is not ready; with one, it reads the ready ones only.
      const { stats } = await this.call('list sandbox stats', (deadline) =>
        this.cri.listPodSandboxStats({ filter: idFilter(ids) }, deadline),
      );
      return pick(ids, stats, sandboxStatsOf, this.clock.now());
    } catch (error) {
      if (isKubeletError(error) && grpcCodeOf(error.cause) === GrpcCode.UNIMPLEMENTED) return new Map();
      if (!isKubeletError(error, 'Internal')) throw error;
      if (ids.length > 1) {
        // containerd 1.6 fails the whole list on one sandbox it cannot read, ours or another's: each alone, then.
        const alone = await Promise.all(ids.map((id) => this.listedSandboxes([id])));
        return new Map(alone.flatMap((figures) => [...figures]));
      }
      this.logger.debug({ sandbox: ids[0], error: error.message }, 'no figures of the sandbox: its network is left out');
      return new Map([[ids[0]!, { timestamp: this.clock.now() }]]);
    }
  }
}

/** The requested ids' figures, in the order asked; ids the runtime did not list are left out. */
function pick<S extends { attributes: { id: string } | null }, T>(
  ids: readonly string[],
  listed: readonly S[],
  map: (stats: S, now: number) => T,
  now: number,
): Map<string, T> {
  const byId = new Map(listed.map((s) => [s.attributes?.id, s]));
  const figures = new Map<string, T>();
  for (const id of ids) {
    const stats = byId.get(id);
    if (stats !== undefined) figures.set(id, map(stats, now));
  }
  return figures;
}
