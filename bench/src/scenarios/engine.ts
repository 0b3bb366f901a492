import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Labels } from '@kubelet-ts/core';
import { DockerRuntime } from '@kubelet-ts/runtime-docker';
import { buildTestImages, independentDocker, removeLabelled, type TestImages } from '@kubelet-ts/testkit';
import { ms, row, summarise, type Row } from '../stats.js';
import { BenchAgent, manifest } from './fixtures.js';
import { withCpuHog } from './hog.js';
import { cpuMs, paceRows, type PaceRun } from './pace.js';

// Ends at once on SIGTERM (`wait` is interrupted by a trapped signal), so stops measure the engine.
const COMMAND = ['sh', '-c', 'trap "exit 0" TERM; sleep 3600 & wait'];
const RAW_LABEL = 'io.kubelet-ts.bench-raw';

/**
 * The physical limit: what dockerode alone does for the same spec. A pod on the engine is an
 * infrastructure container holding the network namespace plus the app container joined to it.
 */
async function rawPod(images: TestImages, name: string, podNetwork: boolean): Promise<string[]> {
  const docker = independentDocker();
  const ids: string[] = [];
  let network: string | undefined;
  if (podNetwork) {
    const infra = await docker.createContainer({ name: `${name}-infra`, Image: images.pause, Labels: { [RAW_LABEL]: '1' } });
    await infra.start();
    ids.push(infra.id);
    network = `container:${infra.id}`;
  }
  const app = await docker.createContainer({
    name,
    Image: images.busybox,
    Cmd: COMMAND,
    Labels: { [RAW_LABEL]: '1' },
    HostConfig: network === undefined ? {} : { NetworkMode: network },
  });
  await app.start();
  ids.push(app.id);
  return ids;
}

async function rawRemove(ids: readonly string[]): Promise<void> {
  const docker = independentDocker();
  for (const id of [...ids].reverse()) {
    await docker
      .getContainer(id)
      .stop({ t: 10 })
      .catch(() => undefined);
    await docker.getContainer(id).remove({ v: true });
  }
}

async function pool<T>(items: readonly T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  const queue = [...items];
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let item = queue.shift(); item !== undefined; item = queue.shift()) await work(item);
    }),
  );
}

export async function engine(
  latencyRuns: number,
  throughputPods: number,
  throughputRuns: number,
  options: { readonly hog?: boolean; readonly rawConcurrency?: readonly number[] } = {},
): Promise<Row[]> {
  const rawConcurrency = options.rawConcurrency ?? [1, 2, 4, 8, 16];
  const images = await buildTestImages();
  const volumes = await mkdtemp(join(tmpdir(), 'kubelet-ts-bench-volumes-'));
  const node = `bench-${process.pid}`;
  const agent = new BenchAgent({
    runtime: new DockerRuntime({ podInfraImage: images.pause, hostIp: '127.0.0.1', volumesRoot: volumes }),
    hostname: node,
    syncFrequencyMs: 3_600_000,
  });
  const rows: Row[] = [];
  try {
    await agent.kubelet.start();

    // 1. Start latency: one manifest accepted → its container running.
    const agentTimes: number[] = [];
    const rawPodTimes: number[] = [];
    const rawOneTimes: number[] = [];
    for (let i = 0; i < latencyRuns; i++) {
      const started = agent.expect('ContainerStarted', 1);
      const t = process.hrtime.bigint();
      agent.source.set([manifest(`lat-${i}`, images.busybox, 1, COMMAND, 10)]);
      await started;
      agentTimes.push(ms(t));
      const removed = agent.expect('ContainerRemoved', 1);
      agent.source.set([]);
      await removed;

      let r = process.hrtime.bigint();
      const pod = await rawPod(images, `bench-raw-pod-${process.pid}-${i}`, true);
      rawPodTimes.push(ms(r));
      await rawRemove(pod);
      r = process.hrtime.bigint();
      const one = await rawPod(images, `bench-raw-one-${process.pid}-${i}`, false);
      rawOneTimes.push(ms(r));
      await rawRemove(one);
    }
    if (latencyRuns > 0) {
      const agentLatency = summarise(agentTimes);
      const podLatency = summarise(rawPodTimes);
      rows.push(
        row({
          scenario: '1. start latency',
          metric: 'manifest accepted → container running',
          unit: 'ms',
          value: agentLatency,
          baseline: { name: 'raw dockerode create+start, same pod (infra + app)', value: podLatency },
          target: { text: 'ratio ≤ 1.10', met: agentLatency.median / podLatency.median <= 1.1 },
        }),
        row({
          scenario: '1. start latency',
          metric: 'raw dockerode create+start, one container alone',
          unit: 'ms',
          value: summarise(rawOneTimes),
          note: 'for reference: a pod is two containers on the engine (the namespace holder and the app)',
        }),
      );
    }

    // 2. Throughput: N single-container manifests from empty to all running, and back. Agent and
    // raw runs alternate, so that drift of the engine over the run hits both alike.
    const ids = Array.from({ length: throughputPods }, (_, i) => `tp-${i}`);
    const upTimes: number[] = [];
    const downTimes: number[] = [];
    const rawUp = new Map<number, number[]>();
    const rawDown = new Map<number, number[]>();
    const paceRuns: PaceRun[] = [];
    await withCpuHog(options.hog === true, async () => {
      for (let run = 0; run < throughputRuns; run++) {
        const rawOfRun = new Map<number, { upMs: number; downMs: number; upCpuMs: number }>();
        const started = agent.expect('ContainerStarted', throughputPods);
        let t = process.hrtime.bigint();
        let cpu = process.cpuUsage();
        agent.source.set(ids.map((id) => manifest(id, images.busybox, 1, COMMAND, 10)));
        const limits = await agent.paceWhile(started);
        upTimes.push(ms(t));
        const agentUpCpuMs = cpuMs(process.cpuUsage(cpu));
        const agentPace = limits.at(-1);
        const removed = agent.expect('ContainerRemoved', throughputPods);
        t = process.hrtime.bigint();
        agent.source.set([]);
        await removed;
        downTimes.push(ms(t));
        // Concurrency 1 is far behind (never the best); once is enough to show it.
        for (const concurrency of rawConcurrency.filter((c) => c > 1 || run === 0)) {
          const made: string[][] = [];
          t = process.hrtime.bigint();
          cpu = process.cpuUsage();
          await pool(ids, concurrency, async (id) => {
            made.push(await rawPod(images, `bench-raw-${process.pid}-${run}-${concurrency}-${id}`, true));
          });
          const upMs = ms(t);
          const upCpuMs = cpuMs(process.cpuUsage(cpu));
          rawUp.set(concurrency, [...(rawUp.get(concurrency) ?? []), upMs]);
          t = process.hrtime.bigint();
          await pool(made, concurrency, rawRemove);
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
        scenario: options.hog === true ? '2. throughput under a CPU hog' : '2. throughput',
        metric: `${throughputPods} manifests, empty → all running`,
        unit: 'ms',
        value: up,
        baseline: { name: `best raw concurrent create+start (concurrency ${bestUp.concurrency})`, value: bestUp.value },
        target: { text: 'ratio ≤ 1.10', met: up.median / bestUp.value.median <= 1.1 },
        note: `raw up/down medians by concurrency: ${perConcurrency.join(', ')}; the agent finds its pace while it works (from 4 pods at once, within 4-32: steps of a quarter, on while completions per second rise, back when they fall)`,
      }),
      row({
        scenario: options.hog === true ? '2. throughput under a CPU hog' : '2. throughput',
        metric: `${throughputPods} manifests, all removed`,
        unit: 'ms',
        value: down,
        baseline: { name: `best raw concurrent stop+remove (concurrency ${bestDown.concurrency})`, value: bestDown.value },
      }),
      ...paceRows('Docker', throughputPods, paceRuns, 'its own pace (starts adaptive from 4, within 4-32; stops unbounded)', options.hog),
    );
  } finally {
    await agent.kubelet.close();
    await removeLabelled(`${Labels.node}=${node}`);
    await removeLabelled(RAW_LABEL);
    await rm(volumes, { recursive: true, force: true });
  }
  return rows;
}
