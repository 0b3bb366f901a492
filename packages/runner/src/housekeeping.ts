import {
  Labels,
  identityOf,
  isManagedBy,
  isManagedSandbox,
  podNameOf,
  podUid,
  repeatEvery,
  type Clock,
  type ContainerRuntime,
  type ContainerStats,
  type ContainerUsage,
  type CpuUsage,
  type DesiredPod,
  type ImageFsUsage,
  type Logger,
  type MemoryStats,
  type NodeUsage,
  type PodUsage,
  type ResourceUsage,
  type VolumeUsage,
} from '@kubelet-ts/core';
import { NodeFigures, type NodeFiguresOptions } from './node-figures.js';
import { measureVolume, volumeDirsOf, type VolumeRoots } from './volume-figures.js';
import type { PodCache } from './pod-cache.js';

export interface HousekeepingOptions {
  readonly runtime: ContainerRuntime;
  readonly cache: PodCache;
  /** The desired pods now: whose running containers are sampled, and their namespace, name and uid. */
  readonly pods: () => readonly DesiredPod[];
  readonly hostname: string;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly node: NodeFigures;
  /** How often the figures are sampled while they are read (the kubelet's `--housekeeping-interval`). */
  readonly intervalMs: number;
  /**
   * How often they are sampled while nobody reads them (no `current()` for `READ_WINDOW_MS`); a
   * read brings back `intervalMs` at once. Not above `intervalMs`: every interval, read or not.
   */
  readonly unreadIntervalMs?: number;
  /** Where the pods' volumes are, for the Summary's `volume[]`; none: no volume figures. */
  readonly volumes?: VolumeRoots;
}

/** The kubelet's `--housekeeping-interval`. */
const DEFAULT_INTERVAL_MS = 10_000;

/**
 * How often figures nobody reads are sampled by default: the kubelet's evented PLEG relists that
 * often while its events flow (and this agent too, `eventedRelistMs`); a sample of 200 pods costs
 * 50-150 ms of CPU, which once a minute was still most of an idle agent's (bench/RESULTS.md).
 */
const DEFAULT_UNREAD_INTERVAL_MS = 300_000;

/** Figures count as read this long after a read: metrics-server (15 s) and Prometheus (1 min) scrape within it. */
const READ_WINDOW_MS = 120_000;

/**
 * How long what the runtime said of its image store is kept: images change when pulled or removed,
 * and what they take is read by the engine from its own store (containerd refreshes it every 10 s),
 * so once a minute (the kubelet's `--volume-stats-agg-period` for disk figures) is enough.
 */
const IMAGE_FS_EVERY_MS = 60_000;

/** How often a pod's volumes are walked by default: the kubelet's `--volume-stats-agg-period` (a walk reads every file's inode). */
const VOLUMES_EVERY_MS = 60_000;

/** The agent's housekeeping as its options ask (`intervalMs` 0: none), on the node's own figures. */
export function housekeepingOf(
  asked:
    | ({ readonly intervalMs?: number; readonly unreadIntervalMs?: number; readonly volumes?: VolumeRoots } & NodeFiguresOptions)
    | undefined,
  parts: Omit<HousekeepingOptions, 'node' | 'intervalMs' | 'unreadIntervalMs' | 'volumes'>,
): Housekeeping | undefined {
  const { intervalMs = DEFAULT_INTERVAL_MS, unreadIntervalMs = DEFAULT_UNREAD_INTERVAL_MS, volumes, ...node } = asked ?? {};
  return intervalMs === 0
    ? undefined
    : new Housekeeping({
        ...parts,
        node: new NodeFigures(node),
        intervalMs,
        unreadIntervalMs,
        ...(volumes === undefined ? {} : { volumes }),
      });
}

/** One reading of a CPU counter, to make a rate of with the next. */
interface CpuReading {
  readonly timestamp: number;
  readonly usageNanoseconds: number;
}

/**
 * The agent's housekeeping (cAdvisor's role in the kubelet): every `intervalMs` it samples what
 * the node and each running pod use, in one `sample` call to the runtime for every container and
 * sandbox, and keeps the figures; `/stats/summary`, `/metrics/resource` and `top` read them, so a
 * scrape never waits on the engine and never multiplies calls to it. CPU rates (`usageNanoCores`)
 * are the change between two samples, so they appear from the second.
 *
 * Figures nobody reads are sampled every `unreadIntervalMs` only, as the kubelet's evented PLEG
 * relists rarely while nothing asks for more: an idle host pays for the figures that are read. The
 * agent's start counts as a read; the first read after a quiet spell gets the last figures (with
 * their time) and brings the interval back at once, with a sample taken then.
 */
export class Housekeeping {
  private usage: ResourceUsage;
  private previous = new Map<string, CpuReading>();
  private imageFsRead: { readonly at: number; readonly usage: ImageFsUsage | undefined } | undefined;
  /** Each pod's volumes as last walked, by pod id. */
  private volumesRead = new Map<string, { readonly at: number; readonly usage: readonly VolumeUsage[] }>();
  private stop: (() => void) | undefined;
  private running: Promise<void> | undefined;
  private lastReadAt = Number.NEGATIVE_INFINITY;
  private lastSampleAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly options: HousekeepingOptions) {
    this.usage = { nodeName: options.hostname, node: undefined, pods: [] };
  }

  /** Samples now and every interval after, until `close()`. */
  start(): void {
    if (this.stop !== undefined) return;
    const { clock, intervalMs, unreadIntervalMs = intervalMs } = this.options;
    this.lastReadAt = clock.now();
    this.stop = repeatEvery(clock, intervalMs, () => {
      const now = clock.now();
      // Unread: a sample when the last is an unread interval old (half a tick early, as timers drift).
      if (!this.unread(now) || now - this.lastSampleAt >= unreadIntervalMs - intervalMs / 2) void this.sample();
    });
    void this.sample();
  }

  async close(): Promise<void> {
    this.stop?.();
    await this.running;
  }

  /** The figures of the last sample; a read after a quiet spell also takes one now. */
  current(): ResourceUsage {
    const now = this.options.clock.now();
    if (this.stop !== undefined && this.unread(now) && now - this.lastSampleAt >= this.options.intervalMs) void this.sample();
    this.lastReadAt = now;
    return this.usage;
  }

  /** Whether nobody has read the figures for long enough to sample them every unread interval. */
  private unread(now: number): boolean {
    const { intervalMs, unreadIntervalMs = intervalMs } = this.options;
    return unreadIntervalMs > intervalMs && now - this.lastReadAt >= READ_WINDOW_MS;
  }

  /** One sample (a second one asked for while one runs waits for that one instead). */
  sample(): Promise<void> {
    this.running ??= this.take().finally(() => (this.running = undefined));
    return this.running;
  }

  private async take(): Promise<void> {
    const { clock, logger, runtime } = this.options;
    this.lastSampleAt = clock.now();
    const readings = new Map<string, CpuReading>();
    const rate = (key: string, timestamp: number, usageNanoseconds: number): CpuUsage => {
      readings.set(key, { timestamp, usageNanoseconds });
      const before = this.previous.get(key);
      if (before === undefined || timestamp <= before.timestamp || usageNanoseconds < before.usageNanoseconds) return { usageNanoseconds };
      // CPU nanoseconds a second of wall time: nanocores.
      const usageNanoCores = Math.round(((usageNanoseconds - before.usageNanoseconds) * 1000) / (timestamp - before.timestamp));
      return { usageNanoseconds, usageNanoCores };
    };
    let node: NodeUsage | undefined;
    try {
      const reading = await this.options.node.read(clock.now(), await this.imageFs());
      node = { ...reading, cpu: rate('node', reading.timestamp, reading.cpu.usageNanoseconds) };
    } catch (error) {
      logger.warn({ err: error }, 'could not read the node figures');
    }
    const targets = await this.withVolumes(this.targets());
    let pods: PodUsage[] = [];
    let error: string | undefined;
    const stats = runtime.capabilities.stats;
    if (stats === undefined) error = `the ${runtime.name} runtime gives no container figures`;
    else if (targets.length > 0) {
      try {
        const sample = await stats.sample({
          containers: targets.flatMap((t) => t.containers.map((c) => c.id)),
          sandboxes: targets.flatMap((t) => (t.sandboxId === undefined ? [] : [t.sandboxId])),
        });
        pods = targets.flatMap((t) => {
          const containers = t.containers.flatMap((c): ContainerUsage[] => {
            const figures = sample.containers.get(c.id);
            return figures === undefined ? [] : [containerUsage(c, figures, rate(c.id, figures.timestamp, figures.cpu.usageNanoseconds))];
          });
          if (containers.length === 0) return [];
          const network = t.sandboxId === undefined ? undefined : sample.sandboxes.get(t.sandboxId)?.network;
          const timestamp = Math.max(...containers.map((c) => c.timestamp));
          return [
            {
              namespace: t.namespace,
              name: t.name,
              uid: t.uid,
              startTime: t.startTime ?? Math.min(...containers.map((c) => c.startTime)),
              timestamp,
              containers,
              cpu: sumCpu(containers),
              memory: sumMemory(containers.map((c) => c.memory)),
              ...(network === undefined ? {} : { network }),
              ...(t.volumes === undefined ? {} : { volumes: t.volumes }),
            },
          ];
        });
      } catch (e) {
        error = `the runtime's figures could not be read: ${(e as Error).message}`;
        logger.warn({ err: e }, 'could not sample the containers');
      }
    }
    this.previous = readings;
    this.usage = { nodeName: this.options.hostname, node, pods, ...(error === undefined ? {} : { error }) };
  }

  /** What the runtime says of its image store, asked at most every `IMAGE_FS_EVERY_MS`; undefined where it cannot tell. */
  private async imageFs(): Promise<ImageFsUsage | undefined> {
    const { clock, logger, runtime } = this.options;
    const source = runtime.capabilities.stats;
    if (source?.imageFs === undefined) return undefined;
    const now = clock.now();
    if (this.imageFsRead !== undefined && now - this.imageFsRead.at < IMAGE_FS_EVERY_MS) return this.imageFsRead.usage;
    let usage: ImageFsUsage | undefined;
    try {
      usage = await source.imageFs();
    } catch (error) {
      // Kept as the last one read (none the first time): the other figures are still worth having.
      logger.warn({ err: error }, 'could not read the image store figures');
      usage = this.imageFsRead?.usage;
    }
    this.imageFsRead = { at: now, usage };
    return usage;
  }

  /**
   * The targets with their pods' volumes: walked again when their last walk is older than
   * `volumes.everyMs`, else as last walked; the walks of pods no longer sampled are forgotten.
   */
  private async withVolumes(targets: PodTarget[]): Promise<PodTarget[]> {
    const roots = this.options.volumes;
    if (roots === undefined) return targets;
    const now = this.options.clock.now();
    const everyMs = roots.everyMs ?? VOLUMES_EVERY_MS;
    const read = new Map<string, { readonly at: number; readonly usage: readonly VolumeUsage[] }>();
    const out: PodTarget[] = [];
    for (const t of targets) {
      let last = this.volumesRead.get(t.manifest.id);
      if (last === undefined || now - last.at >= everyMs) {
        const usage: VolumeUsage[] = [];
        for (const volume of volumeDirsOf(t.manifest, roots)) {
          const measured = await measureVolume(volume, t.namespace, now);
          if (measured === undefined) continue;
          usage.push(measured);
          // What the kubelet's eviction manager logs of a static pod's volume over its limit: it
          // evicts no critical pod, and every static pod is one.
          if (volume.sizeLimit !== undefined && measured.usedBytes > volume.sizeLimit)
            this.options.logger.warn(
              { podId: t.manifest.id, volume: volume.name, usedBytes: measured.usedBytes, sizeLimit: volume.sizeLimit },
              `usage of emptyDir volume "${volume.name}" of pod ${t.manifest.id} (${measured.usedBytes} bytes) exceeds its sizeLimit (${volume.sizeLimit}); the pod is not evicted, as the kubelet evicts no static pod: give it medium: Memory to hold it to the limit`,
            );
        }
        last = { at: now, usage };
      }
      read.set(t.manifest.id, last);
      out.push(last.usage.length === 0 ? t : { ...t, volumes: last.usage });
    }
    this.volumesRead = read;
    return out;
  }

  /** Each desired pod's running containers on this node, and its ready sandbox. */
  private targets(): PodTarget[] {
    const { cache, hostname } = this.options;
    const { containers, sandboxes } = cache.snapshot();
    const byPod = new Map<string, { id: string; name: string; startTime: number }[]>();
    for (const c of containers) {
      if (c.state !== 'running' || !isManagedBy(c.labels, hostname)) continue;
      const identity = identityOf(c.labels)!;
      const list = byPod.get(identity.podId) ?? [];
      list.push({ id: c.id, name: identity.container, startTime: c.startedAt ?? c.createdAt });
      byPod.set(identity.podId, list);
    }
    const sandboxOf = new Map<string, { id: string; createdAt: number }>();
    for (const s of sandboxes)
      if (s.state === 'ready' && isManagedSandbox(s, hostname))
        sandboxOf.set(s.labels[Labels.sandbox]!, { id: s.id, createdAt: s.createdAt });
    return this.options.pods().flatMap(({ manifest, source }): PodTarget[] => {
      const running = byPod.get(manifest.id);
      if (running === undefined) return [];
      const sandbox = sandboxOf.get(manifest.id);
      return [
        {
          manifest,
          namespace: manifest.namespace ?? 'default',
          name: podNameOf(manifest.id, manifest.namespace),
          uid: podUid(manifest, { node: hostname, source }),
          containers: running,
          ...(sandbox === undefined ? {} : { sandboxId: sandbox.id, startTime: sandbox.createdAt }),
        },
      ];
    });
  }
}

interface PodTarget {
  readonly manifest: DesiredPod['manifest'];
  readonly volumes?: readonly VolumeUsage[];
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly containers: readonly { readonly id: string; readonly name: string; readonly startTime: number }[];
  readonly sandboxId?: string;
  readonly startTime?: number;
}

function containerUsage(
  c: { readonly id: string; readonly name: string; readonly startTime: number },
  figures: ContainerStats,
  cpu: CpuUsage,
): ContainerUsage {
  return {
    name: c.name,
    id: c.id,
    startTime: c.startTime,
    timestamp: figures.timestamp,
    cpu,
    memory: figures.memory,
    ...(figures.writableLayerBytes === undefined ? {} : { writableLayerBytes: figures.writableLayerBytes }),
  };
}

function sumCpu(containers: readonly ContainerUsage[]): CpuUsage {
  const usageNanoseconds = containers.reduce((n, c) => n + c.cpu.usageNanoseconds, 0);
  // A pod's rate only when every container has one (a new container has none yet).
  const rated = containers.every((c) => c.cpu.usageNanoCores !== undefined);
  return rated ? { usageNanoseconds, usageNanoCores: containers.reduce((n, c) => n + c.cpu.usageNanoCores!, 0) } : { usageNanoseconds };
}

function sumMemory(all: readonly MemoryStats[]): MemoryStats {
  const sum = (pick: (m: MemoryStats) => number | undefined) => all.reduce((n, m) => n + (pick(m) ?? 0), 0);
  return {
    usageBytes: sum((m) => m.usageBytes),
    workingSetBytes: sum((m) => m.workingSetBytes),
    rssBytes: sum((m) => m.rssBytes),
    pageFaults: sum((m) => m.pageFaults),
    majorPageFaults: sum((m) => m.majorPageFaults),
  };
}
