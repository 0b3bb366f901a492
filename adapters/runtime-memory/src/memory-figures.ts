import type {
  Clock,
  ContainerStats,
  ContainerStatsSource,
  ImageFsUsage,
  InterfaceStats,
  RuntimeOperation,
  SandboxStats,
  StatsRequest,
  StatsSample,
} from '@kubelet-ts/core';

/** What a test says a memory container uses; what it leaves out is 0 (working set: all of memory). */
export interface MemoryUse {
  readonly cpuNs: number;
  readonly memoryBytes: number;
  readonly workingSetBytes?: number;
  readonly rssBytes?: number;
  readonly pageFaults?: number;
  readonly majorPageFaults?: number;
  readonly writableLayerBytes?: number;
}

/** What the figures need of the runtime: its clock, its call log, and its containers and sandboxes. */
export interface MemoryFiguresHost {
  readonly clock: Clock;
  enter(op: RuntimeOperation, target?: string): Promise<void>;
  /** The container's memory limit; throws `NotFound` for an unknown one. */
  limitOf(id: string): number | undefined;
  hasContainer(id: string): boolean;
  /** Whether the sandbox exists, and whether it is on the host's network (then it has no network of its own). */
  sandbox(id: string): { readonly hostNetwork: boolean } | undefined;
}

/**
 * The memory runtime's `capabilities.stats`: figures tests set (`set`, `setNetwork`,
 * `setImageFs`), zero until they do; a sandbox's interface is `eth0` with zero traffic unless set.
 * Its images take no disk: its image store is the root file system, 0 bytes used, unless set.
 */
export class MemoryFigures implements ContainerStatsSource {
  private readonly use = new Map<string, MemoryUse>();
  private readonly networks = new Map<string, Omit<InterfaceStats, 'name'>>();
  private imageStore: ImageFsUsage = { mountpoint: '/', usedBytes: 0, inodesUsed: 0 };

  constructor(private readonly host: MemoryFiguresHost) {}

  set(id: string, use: MemoryUse): void {
    this.host.limitOf(id);
    this.use.set(id, { ...use });
  }

  setNetwork(sandboxId: string, traffic: Omit<InterfaceStats, 'name'>): void {
    this.networks.set(sandboxId, { ...traffic });
  }

  setImageFs(usage: ImageFsUsage): void {
    this.imageStore = { ...usage };
  }

  async imageFs(): Promise<ImageFsUsage> {
    await this.host.enter('imageFs');
    return this.imageStore;
  }

  forget(id: string): void {
    this.use.delete(id);
    this.networks.delete(id);
  }

  async stats(id: string): Promise<ContainerStats> {
    await this.host.enter('stats', id);
    return this.figures(id);
  }

  async sample(request: StatsRequest): Promise<StatsSample> {
    await this.host.enter('statsSample');
    const containers = new Map<string, ContainerStats>();
    for (const id of request.containers) if (this.host.hasContainer(id)) containers.set(id, this.figures(id));
    const sandboxes = new Map<string, SandboxStats>();
    const timestamp = this.host.clock.now();
    for (const id of request.sandboxes) {
      const sandbox = this.host.sandbox(id);
      if (sandbox === undefined) continue;
      const traffic = this.networks.get(id) ?? { rxBytes: 0, rxErrors: 0, txBytes: 0, txErrors: 0 };
      sandboxes.set(id, sandbox.hostNetwork ? { timestamp } : { timestamp, network: { name: 'eth0', ...traffic } });
    }
    return { containers, sandboxes };
  }

  private figures(id: string): ContainerStats {
    const limit = this.host.limitOf(id);
    const use = this.use.get(id) ?? { cpuNs: 0, memoryBytes: 0 };
    const { workingSetBytes = use.memoryBytes, rssBytes, pageFaults, majorPageFaults, writableLayerBytes } = use;
    return {
      timestamp: this.host.clock.now(),
      cpu: { usageNanoseconds: use.cpuNs },
      memory: {
        usageBytes: use.memoryBytes,
        workingSetBytes,
        ...(limit === undefined ? {} : { limitBytes: limit }),
        ...(rssBytes === undefined ? {} : { rssBytes }),
        ...(pageFaults === undefined ? {} : { pageFaults }),
        ...(majorPageFaults === undefined ? {} : { majorPageFaults }),
      },
      ...(writableLayerBytes === undefined ? {} : { writableLayerBytes }),
    };
  }
}
