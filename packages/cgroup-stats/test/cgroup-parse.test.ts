import { describe, expect, it } from '@jest/globals';
import { netDevInterfaces } from '@kubelet-ts/core';
import { cgroupMountsOf, flatKeyedOf, memoryLimitOf, numberOf, processCgroupsOf } from '../src/cgroup-parse.js';

const ID = '78a656cc6a62721e12208b012ab6102f2f4c4be435261afa2ac11d06eb3854a0';

describe('processCgroupsOf (/proc/<pid>/cgroup)', () => {
  it('reads cgroup v1 lines, and the 0:: line of a hybrid host', () => {
    const text = [`12:cpu,cpuacct:/docker/${ID}`, `11:memory:/docker/${ID}`, `1:name=systemd:/docker/${ID}`, `0::/docker/${ID}`, ''].join(
      '\n',
    );
    expect(processCgroupsOf(text)).toEqual({
      v1: [
        { controllers: 'cpu,cpuacct', path: `/docker/${ID}` },
        { controllers: 'memory', path: `/docker/${ID}` },
        { controllers: 'name=systemd', path: `/docker/${ID}` },
      ],
      v2: `/docker/${ID}`,
    });
  });

  it('reads cgroup v2: the 0:: line alone', () => {
    expect(processCgroupsOf(`0::/system.slice/docker-${ID}.scope\n`)).toEqual({ v1: [], v2: `/system.slice/docker-${ID}.scope` });
  });
});

describe('cgroupMountsOf (/proc/self/mountinfo)', () => {
  it('lists v1 hierarchies with their controllers and the v2 one, with root and mount point; skips the rest', () => {
    const text = [
      '22 1 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw',
      '30 22 0:27 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755',
      '31 30 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:10 - cgroup cgroup rw,cpu,cpuacct',
      '34 30 0:31 /docker/abc /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory',
      '40 30 0:37 / /sys/fs/cgroup/unified rw,relatime shared:11 - cgroup2 cgroup2 rw,nsdelegate',
      '41 30 0:38 / /mnt/with\\040space rw - cgroup2 cgroup2 rw',
    ].join('\n');
    expect(cgroupMountsOf(text)).toEqual([
      { version: 1, controllers: ['rw', 'cpu', 'cpuacct'], root: '/', mountPoint: '/sys/fs/cgroup/cpu,cpuacct' },
      { version: 1, controllers: ['rw', 'memory'], root: '/docker/abc', mountPoint: '/sys/fs/cgroup/memory' },
      { version: 2, controllers: [], root: '/', mountPoint: '/sys/fs/cgroup/unified' },
      { version: 2, controllers: [], root: '/', mountPoint: '/mnt/with space' },
    ]);
  });
});

describe('flatKeyedOf, numberOf, memoryLimitOf (cgroup files)', () => {
  it('reads v1 memory.stat', () => {
    const stat = flatKeyedOf(
      'cache 25247744\nrss 8540160\ninactive_file 25165824\npgfault 3522\n' +
        'hierarchical_memory_limit 134217728\ntotal_rss 8540160\ntotal_inactive_file 25165824\ntotal_pgfault 3522\ntotal_pgmajfault 2\n',
    );
    expect(stat).toMatchObject({ total_rss: 8540160, total_inactive_file: 25165824, total_pgfault: 3522, total_pgmajfault: 2 });
  });

  it('reads v2 memory.stat and cpu.stat', () => {
    expect(flatKeyedOf('anon 33554432\nfile 14680064\ninactive_file 12582912\npgfault 9120\npgmajfault 7\n')).toEqual({
      anon: 33554432,
      file: 14680064,
      inactive_file: 12582912,
      pgfault: 9120,
      pgmajfault: 7,
    });
    expect(flatKeyedOf('usage_usec 1234567\nuser_usec 1000000\nsystem_usec 234567\nnr_periods 0\n')['usage_usec']).toBe(1234567);
  });

  it('reads one-number files (v1 cpuacct.usage in ns), and refuses what is not one', () => {
    expect(numberOf('85037111\n')).toBe(85037111);
    expect(() => numberOf('garbage\n')).toThrow(/not a number/);
  });

  it('gives no limit for an unlimited cgroup: v1 9223372036854771712, v2 max', () => {
    expect(memoryLimitOf('134217728\n')).toBe(134217728);
    expect(memoryLimitOf('9223372036854771712\n')).toBeUndefined();
    expect(memoryLimitOf('max\n')).toBeUndefined();
  });
});

describe('netDevInterfaces (/proc/<pid>/net/dev), as the kernel path reads it', () => {
  it('reads bytes and errors each way, in order, loopback left out; a wide figure may touch the name', () => {
    const text = [
      'Inter-|   Receive                                                |  Transmit',
      ' face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed',
      '    lo:     100       1    0    0    0     0          0         0      100       1    0    0    0     0       0          0',
      '  net1:       1       1    0    0    0     0          0         0        2       1    0    0    0     0       0          0',
      '  eth0:12345678901  40    1    0    0     0          0         0     3000      30    2    0    0     0       0          0',
      '',
    ].join('\n');
    expect(netDevInterfaces(text)).toEqual([
      { name: 'net1', rxBytes: 1, rxErrors: 0, txBytes: 2, txErrors: 0 },
      { name: 'eth0', rxBytes: 12345678901, rxErrors: 1, txBytes: 3000, txErrors: 2 },
    ]);
  });
});
