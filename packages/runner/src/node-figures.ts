import type { StatsFs } from 'node:fs';
import { readFile, statfs } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { netDevInterfaces, type FsStats, type ImageFsUsage, type NodeUsage } from '@kubelet-ts/core';

/** The kernel's clock tick for `/proc/stat` (USER_HZ): 100 on every Linux the agent runs on. */
const USER_HZ = 100;

export interface NodeFiguresOptions {
  /** Where the kernel's files are read from. Default `/proc` (a test gives a folder of its own). */
  readonly procRoot?: string;
  /** The file system of the agent's volumes (the Summary's `node.fs`): its root directory. */
  readonly fsPath?: string;
}

/** The node's figures without its CPU rate (the sampler computes it from two reads). */
export type NodeReading = Omit<NodeUsage, 'cpu'> & { readonly cpu: { readonly usageNanoseconds: number } };

/**
 * Reads what the host uses from the kernel, as cAdvisor does for the node: CPU time from
 * `/proc/stat` (all but idle and iowait), memory from `/proc/meminfo` (usage is what is not free,
 * the working set that less inactive file pages, RSS the anonymous pages), faults from
 * `/proc/vmstat`, traffic from `/proc/net/dev` (every interface but loopback), process ids from
 * `/proc/loadavg` and `pid_max`, and the file systems by `statfs`.
 */
export class NodeFigures {
  private readonly proc: string;

  constructor(private readonly options: NodeFiguresOptions = {}) {
    this.proc = options.procRoot ?? '/proc';
  }

  /** The node's figures now; with `imageFs` (what the runtime said of its image store), `node.runtime.imageFs` too. */
  async read(now: number, imageFs?: ImageFsUsage): Promise<NodeReading> {
    const [stat, meminfo, vmstat, netdev, loadavg, pidMax] = await Promise.all(
      ['stat', 'meminfo', 'vmstat', 'net/dev', 'loadavg', 'sys/kernel/pid_max'].map((file) => readFile(join(this.proc, file), 'utf8')),
    );
    const fs = await this.fs(this.options.fsPath, now);
    const images = await this.imageFs(imageFs, now);
    return {
      timestamp: now,
      startTime: bootTime(stat!),
      cpu: { usageNanoseconds: cpuTime(stat!) },
      memory: memory(meminfo!, vmstat!),
      network: netDevInterfaces(netdev!),
      ...(fs === undefined ? {} : { fs }),
      ...(images === undefined ? {} : { imageFs: images }),
      rlimit: { maxpid: Number(pidMax!.trim()), curproc: Number(loadavg!.split(/\s+/)[3]?.split('/')[1] ?? 0) },
    };
  }

  /**
   * The image store's file system: its size, space and inodes by `statfs`, what the images take as
   * the runtime counts it (the kubelet's `ImageFsInfo`: the images' sizes, not the whole disk's use).
   */
  private async imageFs(usage: ImageFsUsage | undefined, now: number): Promise<FsStats | undefined> {
    if (usage === undefined) return undefined;
    const fs = await this.fs(usage.mountpoint, now);
    if (fs === undefined) return undefined;
    return {
      ...fs,
      ...(usage.usedBytes === undefined ? {} : { usedBytes: usage.usedBytes }),
      ...(usage.inodesUsed === undefined ? {} : { inodesUsed: usage.inodesUsed }),
    };
  }

  /**
   * The figures of the file system `path` is on (of its nearest existing parent, while it is not
   * made yet); undefined when no path is given or none can be read.
   */
  private async fs(path: string | undefined, now: number): Promise<FsStats | undefined> {
    if (path === undefined) return undefined;
    try {
      const s = await statfsOfNearest(path);
      const capacityBytes = s.blocks * s.bsize;
      const availableBytes = s.bavail * s.bsize;
      return {
        timestamp: now,
        availableBytes,
        capacityBytes,
        usedBytes: (s.blocks - s.bfree) * s.bsize,
        inodes: s.files,
        inodesFree: s.ffree,
        inodesUsed: s.files - s.ffree,
      };
    } catch {
      return undefined;
    }
  }
}

async function statfsOfNearest(path: string): Promise<StatsFs> {
  for (let at = path; ; at = dirname(at)) {
    try {
      return await statfs(at);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || dirname(at) === at) throw error;
    }
  }
}

function cpuTime(stat: string): number {
  const line = stat.split('\n').find((l) => l.startsWith('cpu '));
  if (line === undefined) throw new Error('no "cpu" line in /proc/stat');
  // user nice system idle iowait irq softirq steal (guest time is already in user)
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = line.trim().split(/\s+/).slice(1).map(Number);
  return ((user + nice + system + irq + softirq + steal) * 1e9) / USER_HZ;
}

function bootTime(stat: string): number {
  const line = stat.split('\n').find((l) => l.startsWith('btime '));
  return line === undefined ? 0 : Number(line.split(/\s+/)[1]) * 1000;
}

/** `Key: value kB` lines, in bytes (a value without a unit as it is). */
function keyed(text: string, separator: RegExp): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const [key, value, unit] = line.split(separator);
    if (key === undefined || value === undefined || key === '') continue;
    out.set(key, Number(value) * (unit === 'kB' ? 1024 : 1));
  }
  return out;
}

function memory(meminfo: string, vmstat: string): NodeReading['memory'] {
  const m = keyed(meminfo, /:?\s+/);
  const v = keyed(vmstat, /\s+/);
  const total = m.get('MemTotal') ?? 0;
  const usage = total - (m.get('MemFree') ?? 0);
  return {
    usageBytes: usage,
    limitBytes: total,
    workingSetBytes: Math.max(0, usage - (m.get('Inactive(file)') ?? 0)),
    availableBytes: m.get('MemAvailable') ?? m.get('MemFree') ?? 0,
    rssBytes: m.get('AnonPages') ?? 0,
    pageFaults: v.get('pgfault') ?? 0,
    majorPageFaults: v.get('pgmajfault') ?? 0,
  };
}
