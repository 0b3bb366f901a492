import { describe, expect, it } from '@jest/globals';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeletError, podUid, wrapRuntime } from '@kubelet-ts/core';
import type { Kubelet } from '../src/kubelet.js';
import { NodeFigures } from '../src/node-figures.js';
import { HOST, SYNC_MS, agentFixture } from './agent-fixture.js';
import { pod, RecordingLogger, settle, ScriptedSource } from './helpers.js';

const HOUSEKEEPING_MS = 10_000;

describe('housekeeping: what the node and the running pods use', () => {
  const f = agentFixture();

  /** Advances the clock to the next housekeeping pass and waits until it has sampled (it reads /proc for real). */
  const nextSample = async (k: Kubelet) => {
    const before = k.resourceUsage();
    await f.clock.advance(HOUSEKEEPING_MS);
    const deadline = Date.now() + 5_000;
    while (k.resourceUsage() === before) {
      if (Date.now() > deadline) throw new Error('no housekeeping sample within 5 s');
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  };

  /** An agent running these pods, once the sample made as it started has them all (their first). */
  const running = async (...ids: string[]) => {
    const k = f.kubelet([new ScriptedSource('a', { initial: ids.map((id) => pod(id)) })]);
    await k.start();
    await settle();
    const deadline = Date.now() + 5_000;
    while (k.resourceUsage().pods.length < ids.length) {
      if (Date.now() > deadline) await nextSample(k);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    return k;
  };

  it('samples every running container and sandbox in one runtime call a pass, and rates CPU between two passes', async () => {
    const k = await running('web', 'db');
    // Each container's first sample: no rate yet.
    expect(k.resourceUsage().pods.map((p) => p.cpu)).toEqual([{ usageNanoseconds: 0 }, { usageNanoseconds: 0 }]);
    const web = f.one('web');
    const db = f.one('db');
    f.runtime.setStats(web.id, { cpuNs: 1e9, memoryBytes: 30e6, workingSetBytes: 20e6, rssBytes: 10e6 });
    f.runtime.setStats(db.id, { cpuNs: 4e9, memoryBytes: 50e6 });
    const before = f.runtime.callCount('statsSample');
    await nextSample(k);
    expect(f.runtime.callCount('statsSample') - before).toBe(1);
    let usage = k.resourceUsage();
    expect(usage.nodeName).toBe(HOST);
    expect(usage.error).toBeUndefined();
    const webUsage = usage.pods.find((p) => p.name === 'web')!;
    expect(webUsage).toMatchObject({
      namespace: 'default',
      uid: podUid({ id: 'web' }, { node: HOST, source: 'a' }),
      containers: [
        { name: 'web', id: web.id, cpu: { usageNanoseconds: 1e9 }, memory: { usageBytes: 30e6, workingSetBytes: 20e6, rssBytes: 10e6 } },
      ],
      network: { name: 'eth0', rxBytes: 0 },
    });
    // A tenth of a core over the 10 s since the first sample.
    expect(webUsage.containers[0]!.cpu.usageNanoCores).toBe(100_000_000);
    // Half a core for 10 s more.
    f.runtime.setStats(web.id, { cpuNs: 6e9, memoryBytes: 30e6 });
    await nextSample(k);
    usage = k.resourceUsage();
    expect(usage.pods.find((p) => p.name === 'web')!.cpu).toEqual({ usageNanoseconds: 6e9, usageNanoCores: 500_000_000 });
    expect(usage.pods.find((p) => p.name === 'db')!.cpu).toEqual({ usageNanoseconds: 4e9, usageNanoCores: 0 });
    expect(usage.node?.cpu.usageNanoseconds).toBeGreaterThan(0);
  });

  it('asks the runtime for its image store once a minute, and keeps the last answer through a failure', async () => {
    f.runtime.figures.setImageFs({ mountpoint: tmpdir(), usedBytes: 5_000_000 });
    const k = await running('web');
    expect(k.resourceUsage().node?.imageFs?.usedBytes).toBe(5_000_000);
    expect(f.runtime.callCount('imageFs')).toBe(1);
    f.runtime.figures.setImageFs({ mountpoint: tmpdir(), usedBytes: 7_000_000 });
    for (let i = 0; i < 5; i++) await nextSample(k); // 50 s
    expect(f.runtime.callCount('imageFs')).toBe(1);
    expect(k.resourceUsage().node?.imageFs?.usedBytes).toBe(5_000_000);
    await nextSample(k); // 60 s: asked again
    expect(f.runtime.callCount('imageFs')).toBe(2);
    expect(k.resourceUsage().node?.imageFs?.usedBytes).toBe(7_000_000);
    f.runtime.setFault('imageFs', () => new KubeletError('Unavailable', 'engine down'));
    for (let i = 0; i < 6; i++) await nextSample(k);
    expect(f.runtime.callCount('imageFs')).toBe(3);
    expect(k.resourceUsage().node?.imageFs?.usedBytes).toBe(7_000_000);
    expect(k.resourceUsage().pods).toHaveLength(1);
  });

  it("walks each running pod's own volumes once a minute (the kubelet's volume-stats-agg-period)", async () => {
    const volumesRoot = await mkdtemp(join(tmpdir(), 'kubelet-ts-hk-volumes-'));
    try {
      await mkdir(join(volumesRoot, 'web', 'cache'), { recursive: true });
      await writeFile(join(volumesRoot, 'web', 'cache', 'a'), Buffer.alloc(64 * 1024, 1));
      const web = { ...pod('web'), volumes: [{ name: 'cache' }] };
      const k = f.kubelet([new ScriptedSource('a', { initial: [web] })], { housekeeping: { volumes: { volumesRoot } } });
      await k.start();
      await settle();
      // The sample made as the agent started came before the pod ran: the next has it, and walks its volumes.
      for (let i = 0; i < 3 && k.resourceUsage().pods.length === 0; i++) await nextSample(k);
      const first = k.resourceUsage().pods[0]!.volumes!;
      expect(first.map((v) => v.name)).toEqual(['cache']);
      expect(first[0]!.usedBytes).toBeGreaterThanOrEqual(64 * 1024);
      expect(first[0]!.inodesUsed).toBe(2);
      const walkedAt = first[0]!.timestamp;
      await writeFile(join(volumesRoot, 'web', 'cache', 'b'), Buffer.alloc(256 * 1024, 1));
      // Each sample until the next walk shows the last one (its time, its figures); the next walk is a minute after it.
      let again = first[0]!;
      for (let i = 0; i < 8 && again.timestamp === walkedAt; i++) {
        await nextSample(k);
        again = k.resourceUsage().pods[0]!.volumes![0]!;
        if (again.timestamp === walkedAt) expect(again.inodesUsed).toBe(2);
      }
      expect(again.timestamp - walkedAt).toBeGreaterThanOrEqual(60_000);
      expect(again.timestamp - walkedAt).toBeLessThan(70_000);
      expect(again.inodesUsed).toBe(3);
      expect(again.usedBytes).toBeGreaterThanOrEqual(320 * 1024);
    } finally {
      await rm(volumesRoot, { recursive: true, force: true });
    }
  });

  it('says when an emptyDir on the disk outgrows its sizeLimit, and evicts nothing (the kubelet evicts no static pod)', async () => {
    const volumesRoot = await mkdtemp(join(tmpdir(), 'kubelet-ts-hk-limit-'));
    try {
      await mkdir(join(volumesRoot, 'web', 'cache'), { recursive: true });
      await mkdir(join(volumesRoot, 'web', 'small'), { recursive: true });
      await writeFile(join(volumesRoot, 'web', 'cache', 'a'), Buffer.alloc(256 * 1024, 1));
      await writeFile(join(volumesRoot, 'web', 'small', 'a'), Buffer.alloc(4 * 1024, 1));
      const web = {
        ...pod('web'),
        volumes: [
          { name: 'cache', emptyDir: { sizeLimit: 100 * 1024 } },
          { name: 'small', emptyDir: { sizeLimit: 1024 * 1024 } },
        ],
      };
      const logger = new RecordingLogger();
      const k = f.kubelet([new ScriptedSource('a', { initial: [web] })], { logger, housekeeping: { volumes: { volumesRoot } } });
      await k.start();
      await settle();
      for (let i = 0; i < 3 && k.resourceUsage().pods.length === 0; i++) await nextSample(k);
      const over = logger.find('exceeds its sizeLimit');
      expect(over.map((e) => e.fields)).toEqual([{ podId: 'web', volume: 'cache', usedBytes: expect.any(Number), sizeLimit: 100 * 1024 }]);
      expect(over[0]!.message).toContain('the pod is not evicted, as the kubelet evicts no static pod: give it medium: Memory');
      expect(f.one('web').state).toBe('running');
    } finally {
      await rm(volumesRoot, { recursive: true, force: true });
    }
  });

  it('answers 1,000 reads from the last sample without one runtime call', async () => {
    const k = await running('web');
    await nextSample(k);
    const calls = f.runtime.callCount();
    for (let i = 0; i < 1_000; i++) expect(k.resourceUsage().pods).toHaveLength(1);
    expect(f.runtime.callCount()).toBe(calls);
  });

  it('samples figures nobody has read for 2 min every 5 min, and a read brings the interval back at once', async () => {
    const samples = () => f.runtime.callCount('statsSample');
    /** Waits until the runtime has been asked for `n` samples in all, and checks it was not asked more. */
    const sampledTimes = async (n: number) => {
      const deadline = Date.now() + 5_000;
      while (samples() < n && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 2));
      await settle();
      expect(samples()).toBe(n);
    };
    const k = await running('web');
    await nextSample(k); // The last read: the figures count as read for 120 s after it.
    const base = samples();
    for (let tick = 1; tick <= 72; tick++) {
      await f.clock.advance(HOUSEKEEPING_MS);
      // Read: every 10 s up to 110 s. Unread from 120 s: a sample 300 s after the last (410 s, 710 s).
      const expected = Math.min(tick, 11) + [41, 71].filter((t) => t <= tick).length;
      await sampledTimes(base + expected);
    }
    const last = f.runtime.callCount('statsSample');
    // The first read in 720 s gets the figures of 710 s, and a sample is taken at once.
    const read = k.resourceUsage();
    expect(read.pods[0]!.timestamp).toBe(f.clock.now() - HOUSEKEEPING_MS);
    await sampledTimes(last + 1);
    await f.clock.advance(HOUSEKEEPING_MS);
    await sampledTimes(last + 2);

    // Without an unread interval above the interval, figures are sampled every interval, read or not.
    await k.close();
    const every = f.kubelet([new ScriptedSource('b', { initial: [pod('db')] })], {
      hostname: 'node-b',
      housekeeping: { unreadIntervalMs: HOUSEKEEPING_MS },
    });
    await every.start();
    await settle();
    while (every.resourceUsage().pods.length === 0) await nextSample(every); // Its last read.
    // The sample made as it started may have ended while the loop waited for the next one, which
    // may then still be taking its figures: one more interval joins it and waits for its end, so
    // that no sample is under way when the count is taken.
    await nextSample(every);
    const from = samples();
    for (let tick = 1; tick <= 20; tick++) {
      await f.clock.advance(HOUSEKEEPING_MS);
      await sampledTimes(from + tick);
    }
  });

  it('leaves out exited containers, and pods with none running', async () => {
    const k = f.kubelet([new ScriptedSource('a', { initial: [pod('web'), { ...pod('db'), restartPolicy: 'Never' }] })]);
    await k.start();
    await settle();
    f.runtime.exit(f.one('db').id, 0);
    await settle();
    await nextSample(k);
    expect(k.resourceUsage().pods.map((p) => p.name)).toEqual(['web']);
  });

  it('says why when the runtime fails the sample (resource_scrape_error), and has the figures again at the next', async () => {
    const k = await running('web');
    f.runtime.setFault('statsSample', () => new KubeletError('Unavailable', 'engine down'));
    await nextSample(k);
    expect(k.resourceUsage()).toMatchObject({ pods: [], error: "the runtime's figures could not be read: engine down" });
    expect(k.resourceUsage().node).toBeDefined();
    f.runtime.setFault('statsSample', undefined);
    await nextSample(k);
    expect(k.resourceUsage().pods).toHaveLength(1);
    expect(k.resourceUsage().error).toBeUndefined();
  });

  it('says the runtime gives no figures when it declares no stats; and nothing is sampled with housekeeping off', async () => {
    const bare = { ...wrapRuntime(f.runtime, {}), capabilities: {} };
    const k = f.kubelet([new ScriptedSource('a', { initial: [pod('web')] })], { runtime: bare });
    await k.start();
    await settle();
    await nextSample(k);
    expect(k.resourceUsage()).toMatchObject({ pods: [], error: 'the memory runtime gives no container figures' });
    const off = f.kubelet([new ScriptedSource('b', { initial: [pod('db')] })], { housekeeping: { intervalMs: 0 }, hostname: 'node-b' });
    await off.start();
    const before = f.runtime.callCount('statsSample');
    await f.clock.advance(SYNC_MS * 3);
    await settle();
    expect(off.resourceUsage()).toMatchObject({ node: undefined, pods: [], error: 'housekeeping is off (housekeeping.intervalMs 0)' });
    expect(f.runtime.callCount('statsSample')).toBe(before);
  });
});

describe('NodeFigures', () => {
  it("reads the node as cAdvisor does: CPU but idle and iowait, memory less free and inactive file, traffic but loopback's", async () => {
    const proc = await mkdtemp(join(tmpdir(), 'proc-'));
    try {
      await mkdir(join(proc, 'net'));
      await mkdir(join(proc, 'sys/kernel'), { recursive: true });
      await writeFile(join(proc, 'stat'), 'cpu  100 20 30 1000 50 5 5 10 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\nbtime 1764835200\n');
      await writeFile(
        join(proc, 'meminfo'),
        'MemTotal:       16000000 kB\nMemFree:         4000000 kB\nMemAvailable:    9000000 kB\nAnonPages:       3000000 kB\nInactive(file):  2000000 kB\n',
      );
      await writeFile(join(proc, 'vmstat'), 'nr_free_pages 1\npgfault 12345\npgmajfault 67\n');
      await writeFile(
        join(proc, 'net/dev'),
        'Inter-|   Receive |  Transmit\n face |bytes packets errs drop fifo frame compressed multicast|bytes packets errs drop fifo colls carrier compressed\n' +
          '    lo: 999 1 0 0 0 0 0 0 999 1 0 0 0 0 0 0\n  eth0: 1000 10 2 0 0 0 0 0 2000 20 3 0 0 0 0 0\n',
      );
      await writeFile(join(proc, 'loadavg'), '0.26 0.25 0.16 1/180 22159\n');
      await writeFile(join(proc, 'sys/kernel/pid_max'), '4194304\n');
      // An image store that cannot be looked at (a NUL in its path) gives no imageFs.
      const reading = await new NodeFigures({ procRoot: proc, fsPath: join(proc, 'not/made/yet') }).read(5_000, { mountpoint: '\0' });
      expect(reading).toMatchObject({
        timestamp: 5_000,
        startTime: 1764835200_000,
        // user + nice + system + irq + softirq + steal = 170 ticks of 10 ms
        cpu: { usageNanoseconds: 1.7e9 },
        memory: {
          usageBytes: 12000000 * 1024,
          limitBytes: 16000000 * 1024,
          workingSetBytes: 10000000 * 1024,
          availableBytes: 9000000 * 1024,
          rssBytes: 3000000 * 1024,
          pageFaults: 12345,
          majorPageFaults: 67,
        },
        network: [{ name: 'eth0', rxBytes: 1000, rxErrors: 2, txBytes: 2000, txErrors: 3 }],
        rlimit: { maxpid: 4194304, curproc: 180 },
      });
      expect(reading.fs!.capacityBytes).toBeGreaterThan(0);
      expect(reading.fs!.usedBytes + reading.fs!.availableBytes).toBeLessThanOrEqual(reading.fs!.capacityBytes);
      expect(reading.imageFs).toBeUndefined();
    } finally {
      await rm(proc, { recursive: true, force: true });
    }
  });

  it("takes the image store's size and space from statfs, and what the images take from the runtime", async () => {
    const figures = new NodeFigures();
    const counted = await figures.read(1_000, { mountpoint: tmpdir(), usedBytes: 123_456, inodesUsed: 78 });
    expect(counted.imageFs).toMatchObject({ timestamp: 1_000, usedBytes: 123_456, inodesUsed: 78 });
    expect(counted.imageFs!.capacityBytes).toBeGreaterThan(counted.imageFs!.availableBytes);
    // Without the runtime's count, the file system's own use stands for it.
    const whole = await figures.read(2_000, { mountpoint: tmpdir() });
    expect(whole.imageFs!.usedBytes).toBeGreaterThan(0);
    expect(whole.imageFs!.usedBytes + whole.imageFs!.availableBytes).toBeLessThanOrEqual(whole.imageFs!.capacityBytes);
    expect((await figures.read(3_000)).imageFs).toBeUndefined();
  });

  it("reads this host's /proc", async () => {
    const reading = await new NodeFigures().read(Date.now());
    expect(reading.cpu.usageNanoseconds).toBeGreaterThan(0);
    expect(reading.memory.workingSetBytes).toBeGreaterThan(0);
    expect(reading.memory.workingSetBytes).toBeLessThanOrEqual(reading.memory.usageBytes);
    expect(reading.rlimit!.curproc).toBeGreaterThan(0);
  });
});
