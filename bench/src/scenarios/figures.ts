import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Labels, type ContainerRuntime } from '@kubelet-ts/core';
import { StaticManifestSource } from '@kubelet-ts/manifest';
import { createKubelet } from '@kubelet-ts/runner';
import { CriRuntime } from '@kubelet-ts/runtime-cri';
import { DockerRuntime } from '@kubelet-ts/runtime-docker';
import { MemoryRuntime } from '@kubelet-ts/runtime-memory';
import { ServerManifestSource, agentApiHandler } from '@kubelet-ts/source-server';
import {
  assertContainerd,
  buildTestImages,
  criCgroupParent,
  criEndpoint,
  enginesEnv,
  independentDocker,
  removeLabelled,
  TEST_IMAGES,
} from '@kubelet-ts/testkit';
import { ms, row, summarise, type Row } from '../stats.js';
import { rawCri } from './cri-raw.js';
import { manifest } from './fixtures.js';

export const FIGURES_SCENARIO = '12. resource figures';

const MIB = 1024 * 1024;
const pause = (msec: number) => new Promise((r) => setTimeout(r, msec));

/**
 * Scrapes of `/metrics/resource` and `/stats/summary` with `pods` pods running (the in-memory
 * runtime, each container with figures), over the agent's real HTTP server, timed against
 * `/healthz` on the same server in the same run, alternating; and the runtime calls the scrapes
 * made (the housekeeping's own samples, one call each, counted apart).
 */
export async function figuresScrape(pods: number, scrapes: number): Promise<Row[]> {
  const runtime = new MemoryRuntime();
  const server = new ServerManifestSource({ port: 0 });
  const manifests = Array.from({ length: pods }, (_, i) => manifest(`figures-${i}`, 'busybox:1.36', 2));
  const kubelet = createKubelet({
    runtime,
    sources: [new StaticManifestSource('bench', manifests), server],
    hostname: 'bench-figures',
    syncFrequencyMs: 3_600_000,
    housekeeping: { intervalMs: 1_000 },
  });
  server.mount(agentApiHandler(kubelet));
  try {
    await kubelet.start();
    await kubelet.sync();
    for (const [i, c] of runtime.snapshot().entries())
      if (c.state === 'running') runtime.setStats(c.id, { cpuNs: (i + 1) * 1e9, memoryBytes: (i + 1) * MIB, rssBytes: MIB });
    const deadline = Date.now() + 30_000;
    while (kubelet.resourceUsage().pods.length < pods || kubelet.resourceUsage().pods[0]!.cpu.usageNanoCores === undefined) {
      if (Date.now() > deadline) throw new Error(`the agent's figures did not cover ${pods} pods within 30 s`);
      await pause(100);
    }
    const get = async (path: string) => {
      const t = process.hrtime.bigint();
      const res = await fetch(`${server.url}${path}`);
      const body = await res.text();
      if (res.status !== 200) throw new Error(`${path}: ${res.status} ${body}`);
      return { ms: ms(t), bytes: body.length };
    };
    // Each route once first: the first answers pay for compiling the renderers.
    for (const path of ['/metrics/resource', '/stats/summary', '/healthz']) await get(path);
    const calls = () => runtime.callCount() - runtime.callCount('statsSample');
    const callsBefore = calls();
    const resource: number[] = [];
    const summary: number[] = [];
    const health: number[] = [];
    let bytes = { resource: 0, summary: 0 };
    for (let i = 0; i < scrapes; i++) {
      const r = await get('/metrics/resource');
      resource.push(r.ms);
      const s = await get('/stats/summary');
      summary.push(s.ms);
      health.push((await get('/healthz')).ms);
      bytes = { resource: r.bytes, summary: s.bytes };
    }
    const made = calls() - callsBefore;
    const baseline = { name: '/healthz on the same server, alternating', value: summarise(health) };
    const resourceSummary = summarise(resource);
    const summarySummary = summarise(summary);
    return [
      row({
        scenario: FIGURES_SCENARIO,
        metric: `scrape of /metrics/resource, ${pods} pods (${pods * 2} containers) running`,
        unit: 'ms',
        value: resourceSummary,
        baseline,
        target: { text: '≤ 50 ms p99 (issue 24)', met: resourceSummary.p99 <= 50 },
        note: `p99 ${resourceSummary.p99.toFixed(1)} ms over ${scrapes} scrapes of ${(bytes.resource / 1024).toFixed(0)} KiB, each rendered from the last housekeeping sample (in-memory runtime, the agent's real HTTP server, fetch in the same process)`,
      }),
      row({
        scenario: FIGURES_SCENARIO,
        metric: `scrape of /stats/summary, ${pods} pods`,
        unit: 'ms',
        value: summarySummary,
        baseline,
        note: `p99 ${summarySummary.p99.toFixed(1)} ms, ${(bytes.summary / 1024).toFixed(0)} KiB of JSON`,
      }),
      row({
        scenario: FIGURES_SCENARIO,
        metric: `runtime calls made by ${scrapes * 2} scrapes`,
        unit: 'calls',
        value: summarise([made]),
        target: { text: '0: a scrape never calls the engine (issue 24)', met: made === 0 },
        note: `every runtime call in the window but the housekeeping's own samples (one call a second, ${runtime.callCount('statsSample')} in all)`,
      }),
    ];
  } finally {
    await kubelet.close();
    await server.close();
  }
}

/** Two containers of the engine's own: one burns a core, one holds 100 MiB. */
interface Agreement {
  readonly label: string;
  readonly runtime: ContainerRuntime;
  readonly burn: string;
  readonly hold: string;
  /** The engine's own reading: CPU as cores over its own window, memory in bytes. */
  engineReading(): Promise<{ cores: number; memoryBytes: number }>;
  readonly engineName: string;
  cleanup(): Promise<void>;
}

const BURN = ['sh', '-c', 'trap "exit 0" TERM; while :; do :; done'];
const HOLD = ['sh', '-c', 'dd if=/dev/zero bs=100M count=1 2>/dev/null | sleep 3600'];

/** Our figures over `windowMs` (two samples) against the engine's own reading taken in that window. */
async function agree(a: Agreement, windowMs: number): Promise<Row[]> {
  const stats = a.runtime.capabilities.stats!;
  // The holder needs a moment to have its buffer filled.
  await pause(3_000);
  const first = await stats.sample({ containers: [a.burn, a.hold], sandboxes: [] });
  const engine = a.engineReading();
  await pause(windowMs);
  const second = await stats.sample({ containers: [a.burn, a.hold], sandboxes: [] });
  const theirs = await engine;
  const [b1, b2] = [first.containers.get(a.burn)!, second.containers.get(a.burn)!];
  const ours = (b2.cpu.usageNanoseconds - b1.cpu.usageNanoseconds) / ((b2.timestamp - b1.timestamp) * 1e6);
  const memory = second.containers.get(a.hold)!.memory.workingSetBytes;
  const cpuRatio = ours / theirs.cores;
  const memoryRatio = memory / theirs.memoryBytes;
  return [
    row({
      scenario: FIGURES_SCENARIO,
      metric: `${a.label}: CPU of a container burning a core, ours against ${a.engineName}`,
      unit: 'cores',
      value: summarise([ours]),
      baseline: { name: a.engineName, value: summarise([theirs.cores]) },
      target: { text: 'within 5 % (issue 24)', met: Math.abs(cpuRatio - 1) <= 0.05 },
      note: `ours: the change of CPU time between two samples ${(windowMs / 1000).toFixed(0)} s apart (the housekeeping's rate); the engine's over its own window inside ours`,
    }),
    row({
      scenario: FIGURES_SCENARIO,
      metric: `${a.label}: working set of a container holding 100 MiB, ours against ${a.engineName}`,
      unit: 'MiB',
      value: summarise([memory / MIB]),
      baseline: { name: a.engineName, value: summarise([theirs.memoryBytes / MIB]) },
      target: { text: 'within 5 % (issue 24)', met: Math.abs(memoryRatio - 1) <= 0.05 },
    }),
  ];
}

function run(program: string, args: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(program, [...args], { env, timeout: 60_000 }, (error, stdout, stderr) =>
      error === null ? resolve(stdout) : reject(new Error(`${program} ${args.join(' ')}: ${stderr || error.message}`)),
    ),
  );
}

/** A size as the docker CLI prints one (`100.3MiB`, `1.2GiB`, `512KiB`, `900B`), in bytes. */
function dockerSize(text: string): number {
  const m = /^([\d.]+)([KMGT]?i?B)$/.exec(text.trim());
  if (m === null) throw new Error(`not a docker size: ${text}`);
  const unit = { B: 1, KiB: 1024, MiB: MIB, GiB: 1024 * MIB, TiB: 1024 * 1024 * MIB, kB: 1e3, MB: 1e6, GB: 1e9 }[m[2]!] ?? Number.NaN;
  return Number(m[1]) * unit;
}

async function dockerAgreement(windowMs: number): Promise<Row[]> {
  const images = await buildTestImages();
  const docker = independentDocker();
  const label = `kubelet-ts-bench-figures=${process.pid}`;
  const start = async (command: readonly string[]) => {
    const c = await docker.createContainer({
      Image: images.busybox,
      Cmd: [...command],
      Labels: { 'kubelet-ts-bench-figures': String(process.pid) },
    });
    await c.start();
    return c.id;
  };
  const a: Agreement = {
    label: 'Docker',
    runtime: new DockerRuntime({ podInfraImage: images.pause }),
    burn: await start(BURN),
    hold: await start(HOLD),
    engineName: 'docker stats --no-stream',
    async engineReading() {
      const out = await run('docker', ['stats', '--no-stream', '--format', '{{.ID}} {{.CPUPerc}} {{.MemUsage}}', this.burn, this.hold]);
      const lines = out
        .trim()
        .split('\n')
        .map((l) => l.split(' '));
      const of = (id: string) => lines.find((l) => id.startsWith(l[0]!))!;
      return { cores: Number(of(this.burn)[1]!.replace('%', '')) / 100, memoryBytes: dockerSize(of(this.hold)[2]!) };
    },
    cleanup: async () => void (await removeLabelled(label)),
  };
  try {
    return await agree(a, windowMs);
  } finally {
    await a.cleanup();
  }
}

/**
 * `ctr task metrics` (containerd's own reading of the cgroup): `ID TIMESTAMP`, then a table of
 * `NAME VALUE` lines; the time it was read is kept as `time` (ms).
 */
async function ctrMetrics(id: string): Promise<Map<string, number>> {
  const socket = enginesEnv()['CRI_SOCKET']!;
  const out = await run('ctr', ['--address', socket, '--namespace', 'k8s.io', 'task', 'metrics', id]);
  const figures = new Map<string, number>();
  const stamp = /(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d\.\d{3})\d* \+0000 UTC/.exec(out);
  if (stamp !== null) figures.set('time', Date.parse(`${stamp[1]}T${stamp[2]}Z`));
  for (const line of out.split('\n')) {
    const [name, value] = line.trim().split(/\s+/);
    if (name !== undefined && value !== undefined && /^\d+$/.test(value)) figures.set(name, Number(value));
  }
  return figures;
}

async function criAgreement(windowMs: number): Promise<Row[]> {
  const endpoint = criEndpoint();
  await assertContainerd(endpoint);
  const work = await mkdtemp(join(tmpdir(), 'kubelet-ts-bench-figures-'));
  const raw = rawCri(endpoint);
  const pod = {
    name: `bench-figures-${process.pid}`,
    image: TEST_IMAGES.busybox,
    command: BURN,
    labels: { [Labels.node]: `bench-figures-${process.pid}` },
    logsRoot: work,
    cgroupParent: criCgroupParent(),
  };
  const sandbox = await raw.runPod(pod);
  const [burn] = await raw.running(pod.labels);
  const hold: string = await raw.createStart(sandbox, { ...pod, command: HOLD }, 'hold');
  const runtime = new CriRuntime({ endpoint, logsRoot: join(work, 'logs'), containerLogLinksDir: false, cgroupParent: criCgroupParent() });
  const a: Agreement = {
    label: 'containerd (CRI)',
    runtime,
    burn: burn!.id,
    hold,
    engineName: 'ctr task metrics',
    async engineReading() {
      // CPU: two readings of the cgroup's usage a second apart; memory: its usage less page cache (what
      // `docker stats` shows on cgroup v1; ctr shows no inactive-file figure for the kubelet's working set).
      const before = await ctrMetrics(this.burn);
      await pause(1_000);
      const after = await ctrMetrics(this.burn);
      // Over containerd's own times of the two readings.
      const wall = (after.get('time')! - before.get('time')!) * 1e6;
      // cgroup v1 (cpuacct.usage, ns) or v2 (cpu.usage_usec).
      const cpu = (m: Map<string, number>) => m.get('cpuacct.usage') ?? m.get('cpu.usage_usec')! * 1e3;
      const held = await ctrMetrics(this.hold);
      const usage = held.get('memory.usage_in_bytes') ?? held.get('memory.usage')!;
      const cache = held.get('memory.stat.cache') ?? held.get('memory.stat.file') ?? 0;
      return { cores: (cpu(after) - cpu(before)) / wall, memoryBytes: usage - cache };
    },
    async cleanup() {
      await raw.removePod(sandbox).catch(() => undefined);
      raw.close();
      runtime.close();
      await rm(work, { recursive: true, force: true });
    },
  };
  try {
    return await agree(a, windowMs);
  } finally {
    await a.cleanup();
  }
}

/** Issue 24's agreement rows on Docker or on containerd. */
export function figuresAgreement(which: 'docker' | 'cri', quick: boolean): Promise<Row[]> {
  const windowMs = quick ? 2_000 : 5_000;
  return which === 'docker' ? dockerAgreement(windowMs) : criAgreement(windowMs);
}
