import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Labels } from '@kubelet-ts/core';
import { CriRuntime } from '@kubelet-ts/runtime-cri';
import { assertContainerd, criCgroupParent, criEndpoint, TEST_IMAGES } from '@kubelet-ts/testkit';
import { ms, row, summarise, type Row } from '../stats.js';
import { rawCri, type RawCri } from './cri-raw.js';
import { BenchAgent, manifest } from './fixtures.js';
import { withCpuHog } from './hog.js';
import { cpuMs, paceRows, type PaceRun } from './pace.js';

// Ends at once on SIGTERM (`wait` is interrupted by a trapped signal), as on the Docker engine.
const COMMAND = ['sh', '-c', 'trap "exit 0" TERM; sleep 3600 & wait'];
const RAW_LABEL = 'io.kubelet-ts.bench-raw';

export interface CriBenchSizes {
  readonly latencyRuns: number;
  readonly throughputPods: number;
  readonly throughputRuns: number;
  /** Concurrencies of the raw baseline; the best one is the baseline. */
  readonly rawConcurrency: readonly number[];
  /** The throughput runs beside a CPU hog on one core (issue 27's pace under a competing load). */
  readonly hog?: boolean;
}

async function pool<T>(items: readonly T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  const queue = [...items];
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let item = queue.shift(); item !== undefined; item = queue.shift()) await work(item);
    }),
  );
}

/** The containerd version the rows were measured on, e.g. `containerd 1.6.20~ds1`. */
export async function containerdVersion(): Promise<string> {
  const raw = rawCri(criEndpoint());
  try {
    const v = await raw.version();
    return `${v.runtimeName} ${v.runtimeVersion}`;
  } finally {
    raw.close();
  }
}

/**
 * Start latency and throughput of pods on containerd through CRI, against the same pods made with
 * raw CRI calls (RunPodSandbox + CreateContainer + StartContainer) in the same run. A pod on CRI
 * is a sandbox (its own pause process, network namespace through CNI) plus the app container.
 */
export async function criEngine(sizes: CriBenchSizes): Promise<Row[]> {
  const endpoint = criEndpoint();
  await assertContainerd(endpoint);
  const volumes = await mkdtemp(join(tmpdir(), 'kubelet-ts-bench-cri-volumes-'));
  const logs = await mkdtemp(join(tmpdir(), 'kubelet-ts-bench-cri-logs-'));
  const cgroupParent = criCgroupParent();
  const node = `bench-cri-${process.pid}`;
  const runtime = new CriRuntime({
    endpoint,
    hostIp: '127.0.0.1',
    volumesRoot: volumes,
    logsRoot: logs,
    containerLogLinksDir: join(logs, 'links'),
    cgroupParent,
  });
  const raw: RawCri = rawCri(endpoint);
  const agent = new BenchAgent({ runtime, hostname: node, syncFrequencyMs: 3_600_000 });
  const rawPod = (name: string) =>
    raw.runPod({
      name,
      image: TEST_IMAGES.busybox,
      command: COMMAND,
      labels: { [RAW_LABEL]: String(process.pid) },
      logsRoot: logs,
      cgroupParent,
    });
  const rows: Row[] = [];
  try {
    // An image missing here would send the agent to a registry this machine cannot reach.
    if (!(await runtime.images.hasImage(TEST_IMAGES.busybox))) {
      throw new Error(
        `containerd at ${endpoint} lacks ${TEST_IMAGES.busybox}: \`bash scripts/containerd.sh start\` imports it (npm run bench does)`,
      );
    }
    // Both channels connected before the first measurement (the agent's by the check above).
    await raw.version();
    await agent.kubelet.start();

    // 1. Start latency: one manifest accepted → its container running. Each pod is gone, sandbox
    // and all, before the next measurement starts.
    const agentTimes: number[] = [];
    const rawTimes: number[] = [];
    for (let i = 0; i < sizes.latencyRuns; i++) {
      const started = agent.expect('ContainerStarted', 1);
      let t = process.hrtime.bigint();
      agent.source.set([manifest(`lat-${i}`, TEST_IMAGES.busybox, 1, COMMAND, 10)]);
      await started;
      agentTimes.push(ms(t));
      const removed = agent.expect('SandboxRemoved', 1);
      agent.source.set([]);
      await removed;

      t = process.hrtime.bigint();
      const pod = await rawPod(`bench-raw-lat-${process.pid}-${i}`);
      rawTimes.push(ms(t));
      await raw.removePod(pod);
    }
    if (sizes.latencyRuns > 0) {
      const latency = summarise(agentTimes);
      const rawLatency = summarise(rawTimes);
      rows.push(
        row({
          scenario: '1. start latency',
          metric: 'containerd (CRI): manifest accepted → container running',
          unit: 'ms',
          value: latency,
          baseline: { name: 'raw CRI RunPodSandbox + CreateContainer + StartContainer, same pod', value: rawLatency },
          target: { text: 'ratio ≤ 1.10', met: latency.median / rawLatency.median <= 1.1 },
        }),
      );
    }

    // 2. Throughput: N single-container manifests from empty to all running, and back to no
    // container and no sandbox. Agent and raw runs alternate, so that drift hits both alike.
    const ids = Array.from({ length: sizes.throughputPods }, (_, i) => `tp-${i}`);
    const upTimes: number[] = [];
    const downTimes: number[] = [];
    const rawUp = new Map<number, number[]>();
    const rawDown = new Map<number, number[]>();
    const paceRuns: PaceRun[] = [];
    await withCpuHog(sizes.hog === true, async () => {
      for (let run = 0; run < sizes.throughputRuns; run++) {
        const rawOfRun = new Map<number, { upMs: number; downMs: number; upCpuMs: number }>();
        const started = agent.expect('ContainerStarted', sizes.throughputPods);
        let t = process.hrtime.bigint();
        let cpu = process.cpuUsage();
        agent.source.set(ids.map((id) => manifest(id, TEST_IMAGES.busybox, 1, COMMAND, 10)));
        const limits = await agent.paceWhile(started);
        upTimes.push(ms(t));
        const agentUpCpuMs = cpuMs(process.cpuUsage(cpu));
        const agentPace = limits.at(-1);
        const removed = agent.expect('SandboxRemoved', sizes.throughputPods);
        t = process.hrtime.bigint();
        agent.source.set([]);
        await removed;
        downTimes.push(ms(t));
        // Concurrency 1 is far behind; once is enough to show it.
        for (const concurrency of sizes.rawConcurrency.filter((c) => c > 1 || run === 0)) {
          const made: string[] = [];
          t = process.hrtime.bigint();
          cpu = process.cpuUsage();
          await pool(ids, concurrency, async (id) => {
            made.push(await rawPod(`bench-raw-${process.pid}-${run}-${concurrency}-${id}`));
          });
          const upMs = ms(t);
          const upCpuMs = cpuMs(process.cpuUsage(cpu));
          rawUp.set(concurrency, [...(rawUp.get(concurrency) ?? []), upMs]);
          t = process.hrtime.bigint();
          await pool(made, concurrency, (id) => raw.removePod(id));
          const downMs = ms(t);
          rawDown.set(concurrency, [...(rawDown.get(concurrency) ?? []), downMs]);
          rawOfRun.set(concurrency, { upMs, downMs, upCpuMs });
        }
        paceRuns.push({
          agentUpMs: upTimes.at(-1)!,
          agentDownMs: downTimes.at(-1)!,
          agentUpCpuMs,
          ...(agentPace === undefined ? {} : { agentPace }),
          limits,
          raw: rawOfRun,
        });
      }
    });
    const best = (runs: Map<number, number[]>) =>
      [...runs]
        .map(([concurrency, samples]) => ({ concurrency, value: summarise(samples) }))
        .sort((a, b) => a.value.median - b.value.median)[0]!;
    const bestUp = best(rawUp);
    const bestDown = best(rawDown);
    const perConcurrency = [...rawUp.keys()].map(
      (c) => `c${c}: ${Math.round(summarise(rawUp.get(c)!).median)}/${Math.round(summarise(rawDown.get(c)!).median)} ms`,
    );
    const up = summarise(upTimes);
    const down = summarise(downTimes);
    rows.push(
      row({
        scenario: sizes.hog === true ? '2. throughput under a CPU hog' : '2. throughput',
        metric: `containerd (CRI): ${sizes.throughputPods} manifests, empty → all running`,
        unit: 'ms',
        value: up,
        baseline: {
          name: `best raw concurrent RunPodSandbox + CreateContainer + StartContainer (concurrency ${bestUp.concurrency})`,
          value: bestUp.value,
        },
        target: { text: 'ratio ≤ 1.10', met: up.median / bestUp.value.median <= 1.1 },
        note: `raw up/down medians by concurrency: ${perConcurrency.join(', ')}; the agent finds its pace while it works (from 4 pods at once, within 4-32: steps of a quarter, on while completions per second rise, back when they fall)`,
      }),
      row({
        scenario: sizes.hog === true ? '2. throughput under a CPU hog' : '2. throughput',
        metric: `containerd (CRI): ${sizes.throughputPods} manifests, all removed (containers and sandboxes)`,
        unit: 'ms',
        value: down,
        baseline: {
          name: `best raw concurrent StopPodSandbox + RemovePodSandbox (concurrency ${bestDown.concurrency})`,
          value: bestDown.value,
        },
      }),
      ...paceRows(
        'containerd (CRI)',
        sizes.throughputPods,
        paceRuns,
        'its own pace (starts adaptive from 4, within 4-32; stops unbounded)',
        sizes.hog,
      ),
    );
  } finally {
    await agent.kubelet.close();
    // What a failed run left: ours by node, the baseline's by its label.
    const selectors: Array<Record<string, string>> = [{ [Labels.node]: node }, { [RAW_LABEL]: String(process.pid) }];
    for (const selector of selectors) {
      for (const id of await raw.sandboxes(selector).catch(() => [])) await raw.removePod(id).catch(() => undefined);
    }
    raw.close();
    runtime.close();
    await rm(volumes, { recursive: true, force: true });
    await rm(logs, { recursive: true, force: true });
  }
  return rows;
}
