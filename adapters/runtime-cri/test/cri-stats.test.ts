import { afterAll, describe, expect, it } from '@jest/globals';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { KernelStats } from '@kubelet-ts/cgroup-stats';
import { KubeletError, silentLogger, systemClock, type Clock } from '@kubelet-ts/core';
import type { CriApi, CriContainerStats, CriMemoryUsage, CriPodSandboxStats } from '../src/cri-api.js';
import { containerStatsOf, CriStats, sandboxPidOf, sandboxStatsOf } from '../src/cri-stats.js';
import { translate } from '../src/errors.js';

const NOW = 1_700_000_000_000;
const v = (value: string) => ({ value });

/** A memory read as containerd 1.6 answers it (cgroup v1, no limit: nothing available). */
const memory = (fields: Partial<CriMemoryUsage> = {}): CriMemoryUsage => ({
  timestamp: '1796391362942847640',
  workingSetBytes: v('42586112'),
  availableBytes: v('0'),
  usageBytes: v('42586112'),
  rssBytes: v('42098688'),
  pageFaults: v('11135'),
  majorPageFaults: v('0'),
  ...fields,
});

const container = (id: string, fields: Partial<CriContainerStats> = {}): CriContainerStats => ({
  attributes: { id },
  cpu: { timestamp: '1796391362942847640', usageCoreNanoSeconds: v('3614959115') },
  memory: memory(),
  writableLayer: { timestamp: '1796391361245945837', usedBytes: v('20480') },
  ...fields,
});

const sandbox = (id: string, network: NonNullable<CriPodSandboxStats['linux']>['network']): CriPodSandboxStats => ({
  attributes: { id },
  linux: { cpu: { timestamp: '1796391363380033271', usageCoreNanoSeconds: v('5453962696') }, memory: memory(), network },
});

const eth0 = {
  timestamp: '0',
  defaultInterface: { name: 'eth0', rxBytes: v('1166'), rxErrors: v('0'), txBytes: v('542'), txErrors: v('3') },
};

describe('containerStatsOf', () => {
  it('keeps the figures, in milliseconds of the CPU read, with the working set and the writable layer', () => {
    expect(containerStatsOf(container('c1'), NOW)).toEqual({
      timestamp: 1796391362942,
      cpu: { usageNanoseconds: 3614959115 },
      memory: { usageBytes: 42586112, workingSetBytes: 42586112, rssBytes: 42098688, pageFaults: 11135, majorPageFaults: 0 },
      writableLayerBytes: 20480,
    });
  });

  it('tells a limit from what is available under it, and has none when nothing is', () => {
    const limited = containerStatsOf(
      container('c1', { memory: memory({ workingSetBytes: v('229376'), availableBytes: v('66879488') }) }),
      NOW,
    );
    expect(limited.memory.limitBytes).toBe(64 * 1024 * 1024);
    expect(containerStatsOf(container('c1'), NOW).memory).not.toHaveProperty('limitBytes');
  });

  it('leaves out what the runtime left out, and reads a container with no task as zero at the time asked', () => {
    const bare = containerStatsOf(
      container('c1', {
        memory: memory({ usageBytes: null, rssBytes: null, pageFaults: null, majorPageFaults: null, availableBytes: null }),
        writableLayer: null,
      }),
      NOW,
    );
    expect(bare.memory).toEqual({ usageBytes: 42586112, workingSetBytes: 42586112 });
    expect(bare).not.toHaveProperty('writableLayerBytes');
    // containerd lists a created or exited container with no CPU and memory at all.
    expect(containerStatsOf(container('c1', { cpu: null, memory: null, writableLayer: null }), NOW)).toEqual({
      timestamp: NOW,
      cpu: { usageNanoseconds: 0 },
      memory: { usageBytes: 0, workingSetBytes: 0 },
    });
  });

  it('takes the memory read time when the CPU read has none', () => {
    const stats = containerStatsOf(container('c1', { cpu: { timestamp: '0', usageCoreNanoSeconds: v('5') } }), NOW);
    expect(stats.timestamp).toBe(1796391362942);
  });
});

describe('sandboxStatsOf', () => {
  it("reports the default interface, at the sandbox's CPU read when the network's time is 0 (containerd 1.6)", () => {
    expect(sandboxStatsOf(sandbox('s1', eth0), NOW)).toEqual({
      timestamp: 1796391363380,
      network: { name: 'eth0', rxBytes: 1166, rxErrors: 0, txBytes: 542, txErrors: 3 },
    });
    expect(sandboxStatsOf(sandbox('s1', { ...eth0, timestamp: '1796391364000000000' }), NOW).timestamp).toBe(1796391364000);
  });

  it("has no network for a sandbox on the host's network, and the time asked when there is no read at all", () => {
    expect(sandboxStatsOf(sandbox('s1', null), NOW)).toEqual({ timestamp: 1796391363380 });
    expect(sandboxStatsOf({ attributes: { id: 's1' }, linux: null }, NOW)).toEqual({ timestamp: NOW });
  });
});

describe('CriStats', () => {
  const clock: Clock = { ...systemClock, now: () => NOW };
  const grpcError = (code: number, details: string) => Object.assign(new Error(`${code} ${details}`), { code, details });

  /** A CRI of the stats calls only, recording what was asked. */
  const fake = (over: Partial<CriApi>) => {
    const asked: Array<[string, unknown]> = [];
    const record =
      <R>(name: string, answer: (request: never) => Promise<R>) =>
      (request: never) => {
        asked.push([name, request]);
        return answer(request);
      };
    const cri = {
      listContainerStats: record('listContainerStats', () =>
        Promise.resolve({ stats: [container('a'), container('b'), container('foreign')] }),
      ),
      listPodSandboxStats: record('listPodSandboxStats', () => Promise.resolve({ stats: [sandbox('s1', eth0), sandbox('s2', null)] })),
      containerStats: record('containerStats', () => Promise.resolve({ stats: container('a') })),
      ...Object.fromEntries(Object.entries(over).map(([name, fn]) => [name, record(name, fn as (request: never) => Promise<unknown>)])),
    } as unknown as CriApi;
    const call = <T>(what: string, fn: (deadline: number) => Promise<T>) =>
      fn(Date.now() + 1_000).catch((error: unknown) => {
        throw translate(error, what, 'unix:///run/test/cri.sock');
      });
    return { cri, call, stats: new CriStats(cri, call, clock, silentLogger), asked };
  };

  it('samples with one list of each, keeps the ids asked for in their order, and leaves the gone ones out', async () => {
    const { stats, asked } = fake({});
    const sample = await stats.sample({ containers: ['b', 'gone', 'a'], sandboxes: ['s2', 's1', 'gone'] });
    expect([...sample.containers.keys()]).toEqual(['b', 'a']);
    expect([...sample.sandboxes.keys()]).toEqual(['s2', 's1']);
    expect(sample.sandboxes.get('s1')?.network?.name).toBe('eth0');
    // An empty filter, not none: containerd 1.6 then reads the ready sandboxes only.
    expect(asked).toEqual([
      ['listContainerStats', { filter: {} }],
      ['listPodSandboxStats', { filter: {} }],
    ]);
  });

  it('asks by id for one, and nothing for none', async () => {
    const { stats, asked } = fake({});
    await stats.sample({ containers: ['a'], sandboxes: ['s1'] });
    await stats.sample({ containers: [], sandboxes: [] });
    expect(asked).toEqual([
      ['listContainerStats', { filter: { id: 'a' } }],
      ['listPodSandboxStats', { filter: { id: 's1' } }],
    ]);
  });

  it("gives no sandbox figures on a runtime without pod stats, and still the containers'", async () => {
    const { stats } = fake({ listPodSandboxStats: () => Promise.reject(grpcError(12, 'unknown method ListPodSandboxStats')) });
    const sample = await stats.sample({ containers: ['a'], sandboxes: ['s1'] });
    expect([...sample.containers.keys()]).toEqual(['a']);
    expect(sample.sandboxes.size).toBe(0);
  });

  it('reads each sandbox alone when the runtime fails the list on one it cannot read, which then has no network', async () => {
    // containerd 1.6 on a sandbox run without a cgroup parent: UNKNOWN, for the whole list.
    const noCgroup = grpcError(2, 'failed to get cgroup metrics for sandbox s2 because cgroupPath is empty');
    const { stats, asked } = fake({
      listPodSandboxStats: (request: { filter: { id?: string } }) => {
        const id = request.filter.id;
        if (id === undefined || id === 's2') return Promise.reject(noCgroup);
        return Promise.resolve({ stats: id === 's1' ? [sandbox('s1', eth0)] : [] });
      },
    });
    const sample = await stats.sample({ containers: [], sandboxes: ['s1', 's2', 'gone'] });
    expect([...sample.sandboxes]).toEqual([
      ['s1', sandboxStatsOf(sandbox('s1', eth0), NOW)],
      ['s2', { timestamp: NOW }],
    ]);
    expect(asked.map(([, request]) => request)).toEqual([
      { filter: {} },
      { filter: { id: 's1' } },
      { filter: { id: 's2' } },
      { filter: { id: 'gone' } },
    ]);
  });

  it('rejects a sample with Unavailable when the runtime cannot be reached', async () => {
    const { stats } = fake({ listContainerStats: () => Promise.reject(grpcError(14, 'No connection established')) });
    const error = await stats.sample({ containers: ['a'], sandboxes: [] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(KubeletError);
    expect((error as KubeletError).code).toBe('Unavailable');
  });

  it("reads a container with no task from the list, as containerd's ContainerStats refuses it", async () => {
    const { stats, asked } = fake({
      containerStats: () => Promise.reject(grpcError(2, 'unexpected metrics response: []')),
      listContainerStats: () => Promise.resolve({ stats: [container('a', { cpu: null, memory: null })] }),
    });
    expect(await stats.stats('a')).toMatchObject({ timestamp: NOW, cpu: { usageNanoseconds: 0 } });
    expect(asked.map(([name]) => name)).toEqual(['containerStats', 'listContainerStats']);
  });

  it('answers NotFound for an unknown container, without asking further', async () => {
    const { stats, asked } = fake({ containerStats: () => Promise.reject(grpcError(5, 'failed to find container: not found')) });
    const error = await stats.stats('gone').catch((e: unknown) => e);
    expect((error as KubeletError).code).toBe('NotFound');
    expect(asked).toHaveLength(1);
  });
});

describe("CriStats on a runtime on this host: a sandbox's network from the kernel", () => {
  const clock: Clock = { ...systemClock, now: () => NOW };
  const roots: string[] = [];
  afterAll(async () => {
    for (const root of roots) await rm(root, { recursive: true, force: true });
  });

  const netDev = (eth0Rx: number) =>
    'Inter-|   Receive                                                |  Transmit\n' +
    ' face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n' +
    '    lo:     100       1    0    0    0     0          0         0      100       1    0    0    0     0       0          0\n' +
    `  eth0: ${eth0Rx}      13    1    0    0     0          0         0      516       5    2    0    0     0       0          0\n`;

  /** A cgroup v1 host where containerd ran sandbox `id` (its pause process `pid`) under the cgroup parent `/kubelet-ts-cri`. */
  const host = async (sandboxes: Record<string, number>): Promise<KernelStats> => {
    const root = await mkdtemp(join(tmpdir(), 'kubelet-ts-cri-kernel-'));
    roots.push(root);
    const files: Record<string, string> = {
      'proc/self/mountinfo': [
        `31 30 0:28 / ${root}/sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct`,
        `34 30 0:31 / ${root}/sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory`,
      ].join('\n'),
    };
    for (const [id, pid] of Object.entries(sandboxes)) {
      files[`proc/${pid}/cgroup`] = `12:cpu,cpuacct:/kubelet-ts-cri/${id}\n11:memory:/kubelet-ts-cri/${id}\n`;
      files[`proc/${pid}/net/dev`] = netDev(pid * 10);
      files[`sys/fs/cgroup/cpu,cpuacct/kubelet-ts-cri/${id}/cpuacct.usage`] = '1\n';
      files[`sys/fs/cgroup/memory/kubelet-ts-cri/${id}/memory.stat`] = 'total_rss 1\n';
    }
    for (const [path, text] of Object.entries(files)) {
      await mkdir(dirname(join(root, path)), { recursive: true });
      await writeFile(join(root, path), text);
    }
    return KernelStats.open({ procRoot: join(root, 'proc'), cgroupRoot: join(root, 'sys/fs/cgroup') })!;
  };

  /** containerd's verbose PodSandboxStatus: `pid` in its `info` JSON, the network mode in `linux.namespaces`. */
  const statuses = (known: Record<string, { pid?: number; hostNetwork?: boolean; state?: string }>) => {
    const asked: string[] = [];
    const podSandboxStatus = async ({ podSandboxId }: { podSandboxId: string }) => {
      asked.push(podSandboxId);
      const s = known[podSandboxId];
      if (s === undefined)
        throw Object.assign(new Error('5 an error occurred when try to find sandbox: not found'), { code: 5, details: 'not found' });
      return {
        status: {
          id: podSandboxId,
          state: s.state ?? 'SANDBOX_READY',
          linux: { namespaces: { options: { network: s.hostNetwork === true ? 'NODE' : 'POD', pid: 'CONTAINER', ipc: 'POD' } } },
        },
        info: s.pid === undefined ? {} : { info: JSON.stringify({ pid: s.pid, processStatus: 'running' }) },
      };
    };
    return { podSandboxStatus, asked };
  };

  const statsWith = async (kernelSandboxes: Record<string, number>, known: Parameters<typeof statuses>[0]) => {
    const listed: unknown[] = [];
    const { podSandboxStatus, asked } = statuses(known);
    const cri = {
      podSandboxStatus,
      listPodSandboxStats: async (request: unknown) => {
        listed.push(request);
        return { stats: [sandbox('unknown-pid', eth0)] };
      },
      listContainerStats: async () => ({ stats: [] }),
    } as unknown as CriApi;
    const call = <T>(what: string, fn: (deadline: number) => Promise<T>) =>
      fn(Date.now() + 1_000).catch((error: unknown) => {
        throw translate(error, what, 'unix:///run/test/cri.sock');
      });
    return { stats: new CriStats(cri, call, clock, silentLogger, { kernel: await host(kernelSandboxes) }), listed, asked };
  };

  it("reads each ready sandbox's eth0 from /proc/<pid>/net/dev, learning its pid once, with no ListPodSandboxStats", async () => {
    const { stats, listed, asked } = await statsWith({ s1: 101, s2: 202 }, { s1: { pid: 101 }, s2: { pid: 202 } });
    for (let i = 0; i < 3; i++) {
      const sample = await stats.sample({ containers: [], sandboxes: ['s2', 's1'] });
      expect([...sample.sandboxes]).toEqual([
        ['s2', { timestamp: NOW, network: { name: 'eth0', rxBytes: 2020, rxErrors: 1, txBytes: 516, txErrors: 2 } }],
        ['s1', { timestamp: NOW, network: { name: 'eth0', rxBytes: 1010, rxErrors: 1, txBytes: 516, txErrors: 2 } }],
      ]);
    }
    expect(asked.sort()).toEqual(['s1', 's2']);
    expect(listed).toEqual([]);
  });

  it("gives a host-network sandbox no network (its namespace's is the node's), and leaves a sandbox the runtime does not know out", async () => {
    const { stats, listed } = await statsWith({ host: 303 }, { host: { pid: 303, hostNetwork: true } });
    const sample = await stats.sample({ containers: [], sandboxes: ['host', 'gone'] });
    expect([...sample.sandboxes]).toEqual([['host', { timestamp: NOW }]]);
    expect(listed).toEqual([]);
  });

  it('lists the sandboxes the kernel cannot tell: no pid in the verbose status, a pid of another namespace, one not ready', async () => {
    // 404's cgroup names another sandbox: a pid of another pid namespace, which must not be read.
    const { stats, listed } = await statsWith(
      { elsewhere: 404 },
      { 'unknown-pid': {}, 'other-ns': { pid: 404 }, stopped: { pid: 505, state: 'SANDBOX_NOTREADY' } },
    );
    const sample = await stats.sample({ containers: [], sandboxes: ['unknown-pid', 'other-ns', 'stopped'] });
    expect([...sample.sandboxes.keys()]).toEqual(['unknown-pid']);
    expect(sample.sandboxes.get('unknown-pid')?.network?.rxBytes).toBe(1166);
    expect(listed).toEqual([{ filter: {} }]);
  });

  it("reads a sandbox's pid from containerd's verbose info, and none from anything else", () => {
    expect(sandboxPidOf({ info: JSON.stringify({ pid: 4242, processStatus: 'running' }) })).toBe(4242);
    expect(sandboxPidOf({})).toBe(0);
    expect(sandboxPidOf({ info: 'not json' })).toBe(0);
    expect(sandboxPidOf({ info: JSON.stringify({ pid: '12' }) })).toBe(0);
    expect(sandboxPidOf({ info: JSON.stringify({ pid: 0 }) })).toBe(0);
  });
});
