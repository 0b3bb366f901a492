import { describe, expect, it } from '@jest/globals';
import { KubeletError, systemClock } from '@kubelet-ts/core';
import type { DockerApi, DockerStats, DockerVersion } from '../src/docker-api.js';
import { DockerStatsSource } from '../src/docker-stats-source.js';
import { containerStatsOf, sandboxStatsOf, statsQuirksOf } from '../src/docker-stats.js';
import { translate } from '../src/errors.js';

const NOW = Date.parse('2030-01-01T00:00:00Z');
const DOCKER: DockerVersion = { Version: '20.10.24+dfsg1', Platform: { Name: '' } };
const PODMAN_4_3: DockerVersion = { Version: '4.3.1', Components: [{ Name: 'Podman Engine', Version: '4.3.1' }] };
const asIs = statsQuirksOf(DOCKER);

/**
 * Docker 20.10.24 on cgroup v1 (`GET /containers/{id}/stats?stream=false&one-shot=true`), as
 * captured: a container with a 128 MiB limit that wrote a 24 MiB file (page cache, inactive) and
 * holds an 8 MiB buffer; on its pod's network, through its holder's namespace.
 */
const DOCKER_CGROUP_V1: DockerStats = {
  read: '2026-12-04T13:39:22.360767581Z',
  preread: '0001-01-01T00:00:00Z',
  pids_stats: { current: 3 },
  num_procs: 0,
  storage_stats: {},
  cpu_stats: {
    cpu_usage: { total_usage: 85037111, percpu_usage: [67199702, 17837409], usage_in_kernelmode: 50000000, usage_in_usermode: 20000000 },
    system_cpu_usage: 115328300000000,
    online_cpus: 2,
    throttling_data: { periods: 0, throttled_periods: 0, throttled_time: 0 },
  },
  memory_stats: {
    usage: 35209216,
    max_usage: 35209216,
    stats: {
      active_anon: 8192,
      active_file: 81920,
      cache: 25247744,
      dirty: 25165824,
      hierarchical_memory_limit: 134217728,
      hierarchical_memsw_limit: 268435456,
      inactive_anon: 8531968,
      inactive_file: 25165824,
      mapped_file: 0,
      pgfault: 3522,
      pgmajfault: 2,
      pgpgin: 3196,
      pgpgout: 1067,
      rss: 8540160,
      rss_huge: 0,
      total_active_anon: 8192,
      total_active_file: 81920,
      total_cache: 25247744,
      total_dirty: 25165824,
      total_inactive_anon: 8531968,
      total_inactive_file: 25165824,
      total_mapped_file: 0,
      total_pgfault: 3522,
      total_pgmajfault: 2,
      total_pgpgin: 3196,
      total_pgpgout: 1067,
      total_rss: 8540160,
      total_rss_huge: 0,
      total_unevictable: 0,
      total_writeback: 0,
      unevictable: 0,
      writeback: 0,
    },
    limit: 134217728,
  },
  name: '/rtdstats-cache',
  id: '78a656cc6a62721e12208b012ab6102f2f4c4be435261afa2ac11d06eb3854a0',
  networks: {
    eth0: { rx_bytes: 1086, rx_packets: 13, rx_errors: 0, rx_dropped: 0, tx_bytes: 0, tx_packets: 0, tx_errors: 0, tx_dropped: 0 },
  },
} as DockerStats;

/**
 * Docker on cgroup v2, written from the Engine API's documented format (`memory.stat` keys of
 * cgroup v2, no `max_usage`, no per-CPU figures): 48 MiB charged, of which 32 MiB anonymous and
 * 12 MiB inactive file pages.
 */
const DOCKER_CGROUP_V2: DockerStats = {
  read: '2026-12-04T14:00:00.123456789Z',
  preread: '0001-01-01T00:00:00Z',
  pids_stats: { current: 2, limit: 18446744073709552000 },
  cpu_stats: {
    cpu_usage: { total_usage: 1234567000, usage_in_kernelmode: 234567000, usage_in_usermode: 1000000000 },
    system_cpu_usage: 987654321000000,
    online_cpus: 4,
    throttling_data: { periods: 0, throttled_periods: 0, throttled_time: 0 },
  },
  memory_stats: {
    usage: 50331648,
    stats: {
      active_anon: 0,
      active_file: 2097152,
      anon: 33554432,
      anon_thp: 0,
      file: 14680064,
      file_dirty: 0,
      file_mapped: 1048576,
      file_writeback: 0,
      inactive_anon: 33554432,
      inactive_file: 12582912,
      kernel_stack: 32768,
      pgactivate: 0,
      pgdeactivate: 0,
      pgfault: 9120,
      pglazyfree: 0,
      pglazyfreed: 0,
      pgmajfault: 7,
      pgrefill: 0,
      pgscan: 0,
      pgsteal: 0,
      shmem: 0,
      slab: 1048576,
      slab_reclaimable: 524288,
      slab_unreclaimable: 524288,
      sock: 0,
      thp_collapse_alloc: 0,
      thp_fault_alloc: 0,
      unevictable: 0,
      workingset_activate: 0,
      workingset_nodereclaim: 0,
      workingset_refault: 0,
    },
    limit: 268435456,
  },
  name: '/busy',
  id: 'a'.repeat(64),
  networks: {
    eth0: { rx_bytes: 5000, rx_packets: 40, rx_errors: 1, rx_dropped: 0, tx_bytes: 3000, tx_packets: 30, tx_errors: 2, tx_dropped: 0 },
  },
} as DockerStats;

/** Podman 4.3.1 on cgroup v1, as captured: the contract's busy container (40 MiB held); no `memory.stat`. */
const PODMAN_CGROUP_V1: DockerStats = {
  read: '2026-12-04T13:36:12.834295868Z',
  preread: '0001-01-01T00:00:00Z',
  pids_stats: { current: 3 },
  num_procs: 0,
  storage_stats: {},
  cpu_stats: {
    cpu_usage: { total_usage: 203521873, percpu_usage: [125566085, 77955788], usage_in_kernelmode: 172000000, usage_in_usermode: 31521873 },
    system_cpu_usage: 33526939031587,
    online_cpus: 2,
    cpu: 0,
    throttling_data: { periods: 0, throttled_periods: 0, throttled_time: 0 },
  },
  memory_stats: { usage: 43102208, limit: 25276166144 },
  name: 'rtdstats-busy',
  Id: 'b355af55113c44e8f17e943159371799f3e06592764ed359094659f2679484ae',
  // The namespace's eth0 had received 1110 bytes and sent 516 (its /proc/<pid>/net/dev).
  networks: {
    network: { rx_bytes: 516, rx_packets: 0, rx_errors: 0, rx_dropped: 0, tx_bytes: 1110, tx_packets: 0, tx_errors: 0, tx_dropped: 0 },
  },
} as DockerStats;

/** Docker's host-network holder, as captured: no `networks` at all. */
const DOCKER_HOST_NETWORK: DockerStats = {
  read: '2026-12-04T13:35:37.739819344Z',
  cpu_stats: { cpu_usage: { total_usage: 52044469 } },
  memory_stats: { usage: 368640, stats: { total_inactive_file: 0, total_rss: 53248 }, limit: 25276166144 },
};

/** Podman's host-network holder, as captured: a `network` of zeros. */
const PODMAN_HOST_NETWORK: DockerStats = {
  read: '2026-12-04T13:36:12.861395629Z',
  cpu_stats: { cpu_usage: { total_usage: 59826509 } },
  memory_stats: { usage: 741376, limit: 25276166144 },
  networks: { network: { rx_bytes: 0, rx_errors: 0, tx_bytes: 0, tx_errors: 0 } },
};

describe('containerStatsOf (no engine)', () => {
  it('maps Docker on cgroup v1: working set is usage less total_inactive_file; rss, faults, CPU, time and limit', () => {
    expect(containerStatsOf(DOCKER_CGROUP_V1, NOW)).toEqual({
      timestamp: Date.parse('2026-12-04T13:39:22.360Z'),
      cpu: { usageNanoseconds: 85037111 },
      memory: {
        usageBytes: 35209216,
        workingSetBytes: 35209216 - 25165824,
        limitBytes: 134217728,
        rssBytes: 8540160,
        pageFaults: 3522,
        majorPageFaults: 2,
      },
    });
  });

  it('maps Docker on cgroup v2: working set is usage less inactive_file; rss is anon', () => {
    expect(containerStatsOf(DOCKER_CGROUP_V2, NOW)).toEqual({
      timestamp: Date.parse('2026-12-04T14:00:00.123Z'),
      cpu: { usageNanoseconds: 1234567000 },
      memory: {
        usageBytes: 50331648,
        workingSetBytes: 50331648 - 12582912,
        limitBytes: 268435456,
        rssBytes: 33554432,
        pageFaults: 9120,
        majorPageFaults: 7,
      },
    });
  });

  it('maps Podman: no memory.stat, so the working set is the usage, and rss and faults are left out', () => {
    expect(containerStatsOf(PODMAN_CGROUP_V1, NOW)).toEqual({
      timestamp: Date.parse('2026-12-04T13:36:12.834Z'),
      cpu: { usageNanoseconds: 203521873 },
      memory: { usageBytes: 43102208, workingSetBytes: 43102208, limitBytes: 25276166144 },
    });
  });

  it('never gives a working set below 0 (inactive file pages counted after the usage was read)', () => {
    const figures: DockerStats = { read: DOCKER_CGROUP_V2.read!, memory_stats: { usage: 4096, stats: { inactive_file: 8192 } } };
    expect(containerStatsOf(figures, NOW).memory.workingSetBytes).toBe(0);
    const v1: DockerStats = { memory_stats: { usage: 4096, stats: { total_inactive_file: 8192, inactive_file: 0 } } };
    expect(containerStatsOf(v1, NOW).memory.workingSetBytes).toBe(0);
  });

  it('gives zeros at the runtime clock for a container that is not running (Docker dates it to year 1)', () => {
    const stopped: DockerStats = { read: '0001-01-01T00:00:00Z', cpu_stats: { cpu_usage: { total_usage: 0 } }, memory_stats: {} };
    expect(containerStatsOf(stopped, NOW)).toEqual({
      timestamp: NOW,
      cpu: { usageNanoseconds: 0 },
      memory: { usageBytes: 0, workingSetBytes: 0 },
    });
    // Podman's empty body, as the source passes it on.
    expect(containerStatsOf({}, NOW)).toEqual({
      timestamp: NOW,
      cpu: { usageNanoseconds: 0 },
      memory: { usageBytes: 0, workingSetBytes: 0 },
    });
  });
});

describe('sandboxStatsOf (no engine)', () => {
  it("reports the pod's eth0, else the first interface the engine names", () => {
    expect(sandboxStatsOf(DOCKER_CGROUP_V1, NOW, { quirks: asIs })).toEqual({
      timestamp: Date.parse('2026-12-04T13:39:22.360Z'),
      network: { name: 'eth0', rxBytes: 1086, rxErrors: 0, txBytes: 0, txErrors: 0 },
    });
    const two: DockerStats = {
      networks: {
        net1: { rx_bytes: 1, rx_errors: 0, tx_bytes: 2, tx_errors: 0 },
        eth0: { rx_bytes: 5000, rx_errors: 1, tx_bytes: 3000, tx_errors: 2 },
      },
    };
    expect(sandboxStatsOf(two, NOW, { quirks: asIs }).network).toEqual({
      name: 'eth0',
      rxBytes: 5000,
      rxErrors: 1,
      txBytes: 3000,
      txErrors: 2,
    });
    const other: DockerStats = { networks: { net1: { rx_bytes: 1, rx_errors: 0, tx_bytes: 2, tx_errors: 0 } } };
    expect(sandboxStatsOf(other, NOW, { quirks: asIs }).network?.name).toBe('net1');
  });

  it('leaves the network out for a holder on the host network: Docker names none, Podman is told', () => {
    expect(sandboxStatsOf(DOCKER_HOST_NETWORK, NOW, { quirks: asIs })).toEqual({ timestamp: Date.parse('2026-12-04T13:35:37.739Z') });
    expect(sandboxStatsOf(PODMAN_HOST_NETWORK, NOW, { quirks: statsQuirksOf(PODMAN_4_3), hostNetwork: true })).toEqual({
      timestamp: Date.parse('2026-12-04T13:36:12.861Z'),
    });
    // A holder that is not running: no figures, no network.
    expect(sandboxStatsOf({}, NOW, { quirks: asIs })).toEqual({ timestamp: NOW });
  });

  it("puts back Podman 4.3's swapped directions; later Podman and Docker are taken as they are", () => {
    expect(sandboxStatsOf(PODMAN_CGROUP_V1, NOW, { quirks: statsQuirksOf(PODMAN_4_3) }).network).toEqual({
      name: 'network',
      rxBytes: 1110,
      rxErrors: 0,
      txBytes: 516,
      txErrors: 0,
    });
    const podman = (v: string): DockerVersion => ({ Version: v, Components: [{ Name: 'Podman Engine', Version: v }] });
    expect(statsQuirksOf(podman('3.4.4')).swappedNetwork).toBe(true);
    expect(statsQuirksOf(podman('4.4.0')).swappedNetwork).toBe(false);
    expect(statsQuirksOf(podman('5.2.1')).swappedNetwork).toBe(false);
    expect(statsQuirksOf(DOCKER).swappedNetwork).toBe(false);
  });
});

describe('DockerStatsSource (no engine)', () => {
  const GONE = 'f'.repeat(64);
  /** A client whose stats answer `answers[id]` after a turn: NotFound for an id it lacks, and counts reads in flight. */
  const fake = (answers: Record<string, DockerStats | Buffer | Error>, hostNetwork: readonly string[] = []) => {
    const seen = { inFlight: 0, most: 0, reads: [] as string[] };
    const notFound = Object.assign(new Error('no such container'), { statusCode: 404 });
    const docker = {
      getContainer: (id: string) => ({
        stats: async (options: Record<string, unknown>) => {
          seen.reads.push(`${id}:${JSON.stringify(options)}`);
          seen.most = Math.max(seen.most, ++seen.inFlight);
          await new Promise((resolve) => setTimeout(resolve, 5));
          seen.inFlight--;
          const answer = answers[id] ?? notFound;
          if (answer instanceof Error) throw answer;
          return answer;
        },
        inspect: async () => {
          if (answers[id] === undefined) throw notFound;
          return { HostConfig: { NetworkMode: hostNetwork.includes(id) ? 'host' : 'bridge' } };
        },
      }),
    } as unknown as DockerApi;
    return { docker, seen };
  };
  const sourceOf = (docker: DockerApi, version: DockerVersion = DOCKER, concurrency?: number) =>
    new DockerStatsSource({
      ...(concurrency === undefined ? {} : { concurrency }),
      docker,
      clock: systemClock,
      call: async (what, fn) => {
        try {
          return await fn();
        } catch (error) {
          throw translate(error, what, 'unix:///fake.sock');
        }
      },
      version: async () => version,
    });

  it('reads each id once, one-shot, at most `concurrency` at once, in the order asked, leaving the gone ones out', async () => {
    const ids = Array.from({ length: 20 }, (_, i) => `c${String(i).padStart(2, '0')}`);
    const { docker, seen } = fake({ ...Object.fromEntries(ids.map((id) => [id, DOCKER_CGROUP_V2])), sb: DOCKER_CGROUP_V1 });
    const sample = await sourceOf(docker, DOCKER, 8).sample({ containers: [...ids, GONE], sandboxes: [GONE, 'sb'] });
    expect([...sample.containers.keys()]).toEqual(ids);
    expect([...sample.sandboxes.keys()]).toEqual(['sb']);
    expect(sample.sandboxes.get('sb')!.network?.name).toBe('eth0');
    expect(seen.reads).toHaveLength(23);
    expect(seen.reads.every((r) => r.endsWith(':{"stream":false,"one-shot":true}'))).toBe(true);
    expect(seen.most).toBe(8);
    // By default 64: Docker answers reads made at once on one tick of its collector.
    const many = Array.from({ length: 100 }, (_, i) => `m${i}`);
    const lots = fake(Object.fromEntries(many.map((id) => [id, DOCKER_CGROUP_V2])));
    expect((await sourceOf(lots.docker).sample({ containers: many, sandboxes: [] })).containers.size).toBe(100);
    expect(lots.seen.most).toBe(64);
  });

  it("on Podman, inspects the sandboxes: a host-network holder's zeros are no network; an empty body is zero figures", async () => {
    const { docker } = fake({ sb: PODMAN_CGROUP_V1, host: PODMAN_HOST_NETWORK, stopped: Buffer.alloc(0) }, ['host']);
    const sample = await sourceOf(docker, PODMAN_4_3).sample({ containers: ['stopped'], sandboxes: ['sb', 'host', GONE] });
    expect(sample.sandboxes.get('sb')!.network).toMatchObject({ rxBytes: 1110, txBytes: 516 });
    expect(sample.sandboxes.get('host')!.network).toBeUndefined();
    expect([...sample.sandboxes.keys()]).toEqual(['sb', 'host']);
    expect(sample.containers.get('stopped')!.memory).toEqual({ usageBytes: 0, workingSetBytes: 0 });
  });

  it('fails the sample when the engine cannot be reached, and answers NotFound for one unknown id', async () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    const { docker } = fake({ a: DOCKER_CGROUP_V1, b: refused });
    const error = await sourceOf(docker)
      .sample({ containers: ['a', 'b'], sandboxes: [] })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(KubeletError);
    expect((error as KubeletError).code).toBe('Unavailable');
    await expect(sourceOf(docker).stats(GONE)).rejects.toMatchObject({ code: 'NotFound' });
  });
});
