import { describe, expect, it } from '@jest/globals';
import { KubeletError, silentLogger, systemClock, type Clock } from '@kubelet-ts/core';
import type { CriApi, CriContainerStats, CriMemoryUsage, CriPodSandboxStats } from '../src/cri-api.js';
import { containerStatsOf, CriStats, sandboxStatsOf } from '../src/cri-stats.js';
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
    return { stats: new CriStats(cri, call, clock, silentLogger), asked };
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
