import { afterAll, describe, expect, it } from '@jest/globals';
import { cp, mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { KubeletError, type Clock } from '@kubelet-ts/core';
import type { DockerApi, DockerStats } from '../src/docker-api.js';
import { DockerStatsSource } from '../src/docker-stats-source.js';
import { translate } from '../src/errors.js';
import { KernelStats } from '@kubelet-ts/cgroup-stats';

const NOW = Date.parse('2030-01-01T00:00:00Z');
const clock: Clock = { now: () => NOW, setTimeout: () => 0 as never, clearTimeout: () => undefined };
const C = 'c'.repeat(64);
const S = 'a'.repeat(64);
const MIB = 1024 * 1024;

const roots: string[] = [];
afterAll(async () => {
  for (const root of roots) await rm(root, { recursive: true, force: true });
});

/** Writes `files` (path under the root → text) in a new temporary root, which it returns. */
async function fixture(files: (root: string) => Record<string, string>): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'kubelet-ts-kernel-stats-'));
  roots.push(root);
  await put(root, files(root));
  return root;
}

async function put(root: string, files: Record<string, string>): Promise<void> {
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(root, path)), { recursive: true });
    await writeFile(join(root, path), text);
  }
}

/** Makes `dir` anew, as the engine does a container's cgroup when it starts again: the same files, another inode. */
async function remake(dir: string): Promise<void> {
  await cp(dir, `${dir}.new`, { recursive: true });
  await rm(dir, { recursive: true });
  await rename(`${dir}.new`, dir);
}

const NET_DEV = (eth0Rx: number) =>
  'Inter-|   Receive                                                |  Transmit\n' +
  ' face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n' +
  '    lo:     100       1    0    0    0     0          0         0      100       1    0    0    0     0       0          0\n' +
  `  eth0: ${eth0Rx}      13    1    0    0     0          0         0      516       5    2    0    0     0       0          0\n`;

/** A hybrid cgroup v1 host, as Docker 20.10 on Debian: v1 hierarchies mounted, and a v2 one without the memory controller. */
const v1Host = (root: string): Record<string, string> => ({
  'proc/self/mountinfo': [
    `31 30 0:28 / ${root}/sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct`,
    `34 30 0:31 / ${root}/sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory`,
    `40 30 0:37 / ${root}/sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw`,
  ].join('\n'),
});

/** A v1 container `id` with main process `pid`: 128 MiB limit, 24 MiB inactive page cache, 8 MiB rss (the API test's capture). */
const v1Container = (id: string, pid: number, limit = '134217728'): Record<string, string> => ({
  [`proc/${pid}/cgroup`]: `12:cpu,cpuacct:/docker/${id}\n11:memory:/docker/${id}\n1:name=systemd:/docker/${id}\n0::/docker/${id}\n`,
  [`proc/${pid}/net/dev`]: NET_DEV(1086),
  [`sys/fs/cgroup/cpu,cpuacct/docker/${id}/cpuacct.usage`]: '85037111\n',
  [`sys/fs/cgroup/memory/docker/${id}/memory.usage_in_bytes`]: '35209216\n',
  [`sys/fs/cgroup/memory/docker/${id}/memory.limit_in_bytes`]: `${limit}\n`,
  [`sys/fs/cgroup/memory/docker/${id}/memory.stat`]:
    'cache 25247744\nrss 8540160\ninactive_file 25165824\npgfault 3522\npgmajfault 2\nhierarchical_memory_limit 134217728\n' +
    'total_cache 25247744\ntotal_rss 8540160\ntotal_inactive_file 25165824\ntotal_pgfault 3522\ntotal_pgmajfault 2\n',
  // The hybrid host's v2 tree has the container, without the memory controller: v1 must be read.
  [`sys/fs/cgroup/unified/docker/${id}/cpu.stat`]: 'usage_usec 1\n',
});

const V1_FIGURES = {
  timestamp: NOW,
  cpu: { usageNanoseconds: 85037111 },
  memory: {
    usageBytes: 35209216,
    workingSetBytes: 35209216 - 25165824,
    limitBytes: 128 * MIB,
    rssBytes: 8540160,
    pageFaults: 3522,
    majorPageFaults: 2,
  },
};

/** A pure cgroup v2 host (systemd driver), found through the standard layout: no cgroup mount listed. */
const v2Container = (id: string, pid: number): Record<string, string> => ({
  'proc/self/mountinfo': '',
  [`proc/${pid}/cgroup`]: `0::/system.slice/docker-${id}.scope\n`,
  [`sys/fs/cgroup/system.slice/docker-${id}.scope/cpu.stat`]: 'usage_usec 1234567\nuser_usec 1000000\nsystem_usec 234567\n',
  [`sys/fs/cgroup/system.slice/docker-${id}.scope/memory.current`]: '50331648\n',
  [`sys/fs/cgroup/system.slice/docker-${id}.scope/memory.max`]: 'max\n',
  [`sys/fs/cgroup/system.slice/docker-${id}.scope/memory.stat`]:
    'anon 33554432\nfile 14680064\ninactive_file 12582912\nactive_file 2097152\npgfault 9120\npgmajfault 7\n',
});

/** What the engine's stats API answers: figures unlike the files', to tell which one served. */
const API_FIGURES: DockerStats = { cpu_stats: { cpu_usage: { total_usage: 999 } }, memory_stats: { usage: 4096 } };

/** An engine that knows `containers` (pid 0: not running), counting inspects and stats calls. */
function fakeEngine(containers: Record<string, { pid: number; hostNetwork?: boolean; goneAfterInspect?: boolean }>) {
  const calls = { inspect: [] as string[], stats: [] as string[] };
  const notFound = () => Object.assign(new Error('no such container'), { statusCode: 404 });
  const docker = {
    getContainer: (id: string) => ({
      inspect: async () => {
        calls.inspect.push(id);
        const c = containers[id];
        if (c === undefined) throw notFound();
        if (c.goneAfterInspect === true) delete containers[id];
        return { State: { Pid: c.pid }, HostConfig: { NetworkMode: c.hostNetwork === true ? 'host' : 'bridge' } };
      },
      stats: async () => {
        calls.stats.push(id);
        if (containers[id] === undefined) throw notFound();
        return containers[id]!.pid === 0 ? {} : API_FIGURES;
      },
    }),
  } as unknown as DockerApi;
  return { docker, calls };
}

const sourceOf = (docker: DockerApi, root: string, endpoint = 'unix:///var/run/docker.sock') =>
  new DockerStatsSource({
    docker,
    clock,
    endpoint,
    kernel: { procRoot: join(root, 'proc'), cgroupRoot: join(root, 'sys/fs/cgroup') },
    call: async (what, fn) => {
      try {
        return await fn();
      } catch (error) {
        throw translate(error, what, endpoint);
      }
    },
    version: async () => ({ Version: '20.10.24' }),
  });

describe('KernelStats (fixture files)', () => {
  it('finds a container through the mounts, and refuses a process whose cgroup does not name it (another pid namespace)', async () => {
    const root = await fixture((r) => ({ ...v1Host(r), ...v1Container(C, 42) }));
    const kernel = KernelStats.open({ procRoot: join(root, 'proc'), cgroupRoot: '/nowhere' })!;
    expect(kernel.locate(C, 42)).toMatchObject({
      version: 1,
      memory: join(root, `sys/fs/cgroup/memory/docker/${C}`),
      cpuacct: join(root, `sys/fs/cgroup/cpu,cpuacct/docker/${C}`),
    });
    expect(kernel.locate(S, 42)).toBeUndefined();
    expect(() => kernel.locate(C, 43)).toThrow(expect.objectContaining({ code: 'ENOENT' }) as unknown as Error);
  });

  it('is not opened without a readable procfs', () => {
    expect(KernelStats.open({ procRoot: '/nowhere/proc' })).toBeUndefined();
  });
});

describe('DockerStatsSource from the kernel (fixture files)', () => {
  it('reads a v1 container from its cgroup files and a holder from its namespace, without the stats API', async () => {
    const root = await fixture((r) => ({ ...v1Host(r), ...v1Container(C, 42), ...v1Container(S, 7) }));
    const { docker, calls } = fakeEngine({ [C]: { pid: 42 }, [S]: { pid: 7 } });
    const sample = await sourceOf(docker, root).sample({ containers: [C], sandboxes: [S] });
    expect(sample.containers.get(C)).toEqual(V1_FIGURES);
    expect(sample.sandboxes.get(S)).toEqual({
      timestamp: NOW,
      network: { name: 'eth0', rxBytes: 1086, rxErrors: 1, txBytes: 516, txErrors: 2 },
    });
    expect(calls.stats).toEqual([]);
    expect(await sourceOf(docker, root).stats(C)).toEqual(V1_FIGURES);
  });

  it('reads a v2 container: CPU from usage_usec, no limit for max, rss is anon', async () => {
    const root = await fixture(() => v2Container(C, 42));
    const { docker, calls } = fakeEngine({ [C]: { pid: 42 } });
    expect(await sourceOf(docker, root).stats(C)).toEqual({
      timestamp: NOW,
      cpu: { usageNanoseconds: 1234567000 },
      memory: { usageBytes: 50331648, workingSetBytes: 50331648 - 12582912, rssBytes: 33554432, pageFaults: 9120, majorPageFaults: 7 },
    });
    expect(calls.stats).toEqual([]);
  });

  it('gives no limit for an unlimited v1 cgroup (the engine would report the host memory)', async () => {
    const root = await fixture((r) => ({ ...v1Host(r), ...v1Container(C, 42, '9223372036854771712') }));
    const { docker } = fakeEngine({ [C]: { pid: 42 } });
    expect((await sourceOf(docker, root).stats(C)).memory).not.toHaveProperty('limitBytes');
  });

  it('inspects each container once across samples; again after a restart, or when asked again after a sample without it', async () => {
    const root = await fixture((r) => ({ ...v1Host(r), ...v1Container(C, 42), ...v1Container(S, 7) }));
    const holder = { pid: 7 };
    const { docker, calls } = fakeEngine({ [C]: { pid: 42 }, [S]: holder });
    const source = sourceOf(docker, root);
    for (let i = 0; i < 3; i++) await source.sample({ containers: [C], sandboxes: [S] });
    expect(calls.inspect.sort()).toEqual([S, C].sort());
    // The holder restarts: a new main process, and its cgroup made anew.
    await put(root, { ...v1Container(S, 8), 'proc/8/net/dev': NET_DEV(5000) });
    await rm(join(root, 'proc/7'), { recursive: true });
    await remake(join(root, `sys/fs/cgroup/memory/docker/${S}`));
    holder.pid = 8;
    const after = await source.sample({ containers: [C], sandboxes: [S] });
    expect(after.sandboxes.get(S)!.network?.rxBytes).toBe(5000);
    expect(calls.inspect.filter((id) => id === S)).toHaveLength(2);
    await source.sample({ containers: [], sandboxes: [S] });
    await source.sample({ containers: [C], sandboxes: [S] });
    expect(calls.inspect.filter((id) => id === C)).toHaveLength(2);
    expect(calls.stats).toEqual([]);
  });

  it('reads a container by its cgroup with no check of its process, and its limit once, as cAdvisor takes it from the spec', async () => {
    const root = await fixture((r) => ({ ...v1Host(r), ...v1Container(C, 42) }));
    const { docker, calls } = fakeEngine({ [C]: { pid: 42 } });
    const source = sourceOf(docker, root);
    expect((await source.stats(C)).memory.limitBytes).toBe(128 * MIB);
    // Restarted in place (Docker names the cgroup after the id): the same directory, its figures read on.
    await remake(join(root, `sys/fs/cgroup/memory/docker/${C}`));
    await put(root, v1Container(C, 42, String(256 * MIB)));
    const after = await source.stats(C);
    expect(after.memory.usageBytes).toBe(35209216);
    expect(after.memory.limitBytes).toBe(128 * MIB);
    expect(calls.inspect).toEqual([C]);
  });

  it("inspects again when the holder's /proc entry is gone (the engine answers meanwhile)", async () => {
    const root = await fixture((r) => ({ ...v1Host(r), ...v1Container(S, 7) }));
    const holder = { pid: 7 };
    const { docker, calls } = fakeEngine({ [S]: holder });
    const source = sourceOf(docker, root);
    await source.sample({ containers: [], sandboxes: [S] });
    await rm(join(root, 'proc/7'), { recursive: true });
    await put(root, { ...v1Container(S, 9), 'proc/9/net/dev': NET_DEV(777) });
    holder.pid = 9;
    expect((await source.sample({ containers: [], sandboxes: [S] })).sandboxes.has(S)).toBe(true);
    expect(calls.stats).toEqual([S]);
    expect((await source.sample({ containers: [], sandboxes: [S] })).sandboxes.get(S)!.network?.rxBytes).toBe(777);
    expect(calls.inspect).toEqual([S, S]);
  });

  it("gives a holder on the host's network no network, and never reads its namespace", async () => {
    const root = await fixture((r) => ({ ...v1Host(r), ...v1Container(S, 7) }));
    await rm(join(root, 'proc/7/net'), { recursive: true });
    const { docker, calls } = fakeEngine({ [S]: { pid: 7, hostNetwork: true } });
    const sample = await sourceOf(docker, root).sample({ containers: [], sandboxes: [S] });
    expect(sample.sandboxes.get(S)).toEqual({ timestamp: NOW });
    expect(calls.stats).toEqual([]);
  });

  it('falls back to the API: files missing (one inspect, then the API each time), no procfs, a remote engine', async () => {
    const root = await fixture((r) => ({ ...v1Host(r), [`proc/42/cgroup`]: `11:memory:/docker/${C}\n` }));
    const { docker, calls } = fakeEngine({ [C]: { pid: 42 } });
    const source = sourceOf(docker, root);
    for (let i = 0; i < 2; i++)
      expect((await source.sample({ containers: [C], sandboxes: [] })).containers.get(C)!.cpu.usageNanoseconds).toBe(999);
    expect(calls).toEqual({ inspect: [C], stats: [C, C] });
    for (const source of [sourceOf(docker, '/nowhere'), sourceOf(docker, root, 'tcp://10.0.0.1:2375')]) {
      calls.inspect.length = 0;
      expect((await source.stats(C)).cpu.usageNanoseconds).toBe(999);
      expect(calls.inspect).toEqual([]);
    }
  });

  it('serves a container whose files fail otherwise from the API from then on, without inspecting it again', async () => {
    const root = await fixture((r) => ({ ...v1Host(r), ...v1Container(C, 42) }));
    await put(root, { [`sys/fs/cgroup/memory/docker/${C}/memory.usage_in_bytes`]: 'garbage\n' });
    const { docker, calls } = fakeEngine({ [C]: { pid: 42 } });
    const source = sourceOf(docker, root);
    for (let i = 0; i < 2; i++) await source.sample({ containers: [C], sandboxes: [] });
    expect(calls).toEqual({ inspect: [C], stats: [C, C] });
  });

  it("gives a stopped container the API's zeros and asks again next time; an unknown id is NotFound", async () => {
    const root = await fixture((r) => v1Host(r));
    const { docker, calls } = fakeEngine({ [C]: { pid: 0 } });
    const source = sourceOf(docker, root);
    for (let i = 0; i < 2; i++)
      expect((await source.sample({ containers: [C], sandboxes: [] })).containers.get(C)).toEqual({
        timestamp: NOW,
        cpu: { usageNanoseconds: 0 },
        memory: { usageBytes: 0, workingSetBytes: 0 },
      });
    expect(calls).toEqual({ inspect: [C, C], stats: [C, C] });
    const error = await source.stats(S).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(KubeletError);
    expect((error as KubeletError).code).toBe('NotFound');
  });

  it('leaves out, without failing the sample, a container that ends between its inspect and its read', async () => {
    const root = await fixture((r) => ({ ...v1Host(r), ...v1Container(C, 42), ...v1Container(S, 7) }));
    const engine: Parameters<typeof fakeEngine>[0] = { [C]: { pid: 42 }, [S]: { pid: 7 }, gone: { pid: 99, goneAfterInspect: true } };
    const { docker } = fakeEngine(engine);
    const source = sourceOf(docker, root);
    const first = await source.sample({ containers: [C, 'gone'], sandboxes: [S, 'gone'] });
    expect([...first.containers.keys()]).toEqual([C]);
    expect([...first.sandboxes.keys()]).toEqual([S]);
    // Learnt, then removed as its files were being read (its directory still there, a file gone).
    delete engine[C];
    await rm(join(root, `sys/fs/cgroup/memory/docker/${C}/memory.stat`));
    expect([...(await source.sample({ containers: [C], sandboxes: [S] })).containers.keys()]).toEqual([]);
    // And once its directory is gone too.
    await rm(join(root, `sys/fs/cgroup/memory/docker/${C}`), { recursive: true });
    expect([...(await source.sample({ containers: [C], sandboxes: [S] })).containers.keys()]).toEqual([]);
  });
});
