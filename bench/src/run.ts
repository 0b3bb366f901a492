/**
 * `npm run bench`: every scenario, several runs each, ratios against baselines measured in the
 * same run. Writes bench/out/results.json and bench/out/RESULTS.md (copy the latter to
 * bench/RESULTS.md to publish it). `--quick` is the small run the test suite uses; `--no-engine`
 * leaves out both real engines (Docker and containerd), `--no-cri` containerd alone, and
 * `--only=<scenario>,…` runs only those (SCENARIOS below; e.g. `--only=engine,cri,steady` for the
 * start, throughput and no-op rows, `--only=logs-engine,logs-cri` for the container-logs rows;
 * `KUBELET_TS_BENCH_LOGS='{"followSeconds":20}'` changes some of their sizes, see `LogsSizes`).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { independentDocker } from '@kubelet-ts/testkit';
import { describeMachine, markdown } from './report.js';
import { clusterStartup } from './scenarios/cluster.js';
import { clusterStreams, clusterStreamsSizes } from './scenarios/cluster-streams.js';
import { containerdVersion, criEngine } from './scenarios/cri-engine.js';
import { engine } from './scenarios/engine.js';
import { engineReaction } from './scenarios/engine-reaction.js';
import { fleet } from './scenarios/fleet.js';
import { hollow, hollowSteps } from './scenarios/hollow.js';
import { kubeletSideBySide, sideBySideSizes } from './scenarios/kubelet-side-by-side.js';
import { logs, logsSizes } from './scenarios/logs.js';
import { memory } from './scenarios/memory.js';
import { reaction } from './scenarios/reaction.js';
import { steadyEngine } from './scenarios/steady-engine.js';
import { steadyState } from './scenarios/steady-state.js';
import { figuresAgreement, figuresScrape } from './scenarios/figures.js';
import { operatorGet, operatorWatch } from './scenarios/operator.js';
import { streams, streamsSizes } from './scenarios/streams.js';
import type { Row } from './stats.js';

export interface BenchOptions {
  readonly quick: boolean;
  readonly engine: boolean;
  /** The same two scenarios on the private containerd over CRI. Default: as `engine`. */
  readonly cri?: boolean;
  readonly out: string;
  /** Only these scenarios; default every one. */
  readonly only?: ReadonlySet<Scenario>;
}

/** The fleet's agents: 1,000 (20 in the quick run); `KUBELET_TS_BENCH_FLEET=10000` for issue 27's ten thousand. */
export function fleetSize(quick: boolean): number {
  const given = process.env['KUBELET_TS_BENCH_FLEET'];
  if (given === undefined || given === '') return quick ? 20 : 1_000;
  const size = Number(given);
  if (!Number.isInteger(size) || size < 1)
    throw new Error(`KUBELET_TS_BENCH_FLEET must be a whole number of agents, got ${JSON.stringify(given)}`);
  return size;
}

/**
 * What the steady state on the engines measures: both engines, the passes and the idle CLI;
 * `KUBELET_TS_BENCH_STEADY='{"docker":false,"idleSeconds":0}'` measures containerd's passes only.
 */
function steadyChanges(): { docker: boolean; cri: boolean; sizes: { idleSeconds?: number; passes?: number } } {
  const given = JSON.parse(process.env['KUBELET_TS_BENCH_STEADY'] ?? '{}') as {
    docker?: boolean;
    cri?: boolean;
    idleSeconds?: number;
    passes?: number;
  };
  const { docker = true, cri = true, ...sizes } = given;
  return { docker, cri, sizes };
}

/** The pace runs' sizes: issue 27 asks for five runs beside a CPU hog; `KUBELET_TS_BENCH_PACE='{"pods":100}'` changes them. */
export function paceSizes(quick: boolean): {
  readonly pods: number;
  readonly runs: number;
  readonly hog: boolean;
  readonly rawConcurrency: readonly number[];
} {
  const given = JSON.parse(process.env['KUBELET_TS_BENCH_PACE'] ?? '{}') as { pods?: number; runs?: number; hog?: boolean };
  // The quick run (npm test's smoke test) keeps its hog to a few seconds: the other suites share the cores.
  return {
    pods: given.pods ?? (quick ? 2 : 50),
    runs: given.runs ?? (quick ? 1 : 5),
    hog: given.hog ?? true,
    rawConcurrency: quick ? [2] : [1, 2, 4, 8, 16],
  };
}

export const SCENARIOS = [
  'engine',
  'cri',
  'steady-engine',
  'reaction-engine',
  'pace-engine',
  'pace-cri',
  'logs-engine',
  'logs-cri',
  'streams-engine',
  'streams-cri',
  'figures',
  'figures-engine',
  'figures-cri',
  'operator',
  'steady',
  'reaction',
  'memory',
  'fleet',
  'cluster',
  'cluster-streams',
  'kubelet-side-by-side',
  'hollow',
] as const;
export type Scenario = (typeof SCENARIOS)[number];

export async function runBench(options: BenchOptions): Promise<Row[]> {
  const q = options.quick;
  const rows: Row[] = [];
  // What is measured is written after every scenario, so a run that is cut short (a timeout, an
  // engine that wedges) keeps the rows it had (a 40-minute run once lost them all at its last step).
  const version = options.engine ? ((await independentDocker().version()) as { Version?: string }).Version : undefined;
  const machine = describeMachine(version, (options.cri ?? options.engine) ? await containerdVersion() : undefined);
  await mkdir(options.out, { recursive: true });
  const when = new Date();
  const save = async () => {
    await writeFile(`${options.out}/results.json`, `${JSON.stringify({ when, machine, rows }, null, 2)}\n`);
    await writeFile(`${options.out}/RESULTS.md`, markdown(rows, machine, when));
  };
  const step = async (name: string) => {
    if (rows.length > 0) await save();
    process.stderr.write(`bench: ${name}\n`);
  };
  const wanted = (scenario: Scenario) => options.only === undefined || options.only.has(scenario);
  if (options.engine && wanted('engine')) {
    await step('start latency and throughput on the engine');
    rows.push(...(await engine(q ? 2 : 10, q ? 5 : 100, q ? 1 : 3)));
  }
  const cri = options.cri ?? options.engine;
  if (cri && wanted('cri')) {
    await step('start latency and throughput on containerd (CRI)');
    // The quick run stays a few seconds: one pod, then three.
    const sizes = q
      ? { latencyRuns: 1, throughputPods: 3, throughputRuns: 1, rawConcurrency: [4] }
      : { latencyRuns: 10, throughputPods: 100, throughputRuns: 3, rawConcurrency: [1, 2, 4, 8, 16] };
    rows.push(...(await criEngine(sizes)));
  }
  if (options.engine && wanted('steady-engine')) {
    const steady = steadyChanges();
    await step(`steady state on Docker${cri ? ' and containerd' : ''}, and the idle CLI's CPU`);
    rows.push(
      ...(await steadyEngine(
        { ...(q ? { pods: 3, passes: 3, idleSeconds: 3 } : { pods: 200, passes: 20, idleSeconds: 60 }), ...steady.sizes },
        { docker: steady.docker, cri: cri && steady.cri },
      )),
    );
  }
  if (options.engine && wanted('reaction-engine')) {
    await step(`reaction to a killed container on Docker${cri ? ' and containerd' : ''}`);
    rows.push(...(await engineReaction(q ? 2 : 10, { docker: true, cri })));
  }
  // The pace under a competing load (issue 27): throughput runs beside a CPU hog; KUBELET_TS_BENCH_PACE changes the sizes.
  const pace = paceSizes(q);
  if (options.engine && wanted('pace-engine')) {
    await step(`the pace on the engine, ${pace.runs} runs of ${pace.pods} pods${pace.hog ? ' beside a CPU hog' : ''}`);
    rows.push(...(await engine(0, pace.pods, pace.runs, { hog: pace.hog, rawConcurrency: pace.rawConcurrency })));
  }
  if (cri && wanted('pace-cri')) {
    await step(`the pace on containerd (CRI), ${pace.runs} runs of ${pace.pods} pods${pace.hog ? ' beside a CPU hog' : ''}`);
    rows.push(
      ...(await criEngine({
        latencyRuns: 0,
        throughputPods: pace.pods,
        throughputRuns: pace.runs,
        rawConcurrency: pace.rawConcurrency,
        hog: pace.hog,
      })),
    );
  }
  // Container logs (issue 22): throughput, follow latency and the agent's RSS, on Docker then on containerd.
  if (options.engine && wanted('logs-engine')) {
    await step('container logs on the engine');
    rows.push(...(await logs('docker', logsSizes(q))));
  }
  if (cri && wanted('logs-cri')) {
    await step('container logs on containerd (CRI)');
    rows.push(...(await logs('cri', logsSizes(q))));
  }
  // Exec and port-forward (issue 23): round trips, throughput, sessions at once; KUBELET_TS_BENCH_STREAMS changes the sizes.
  if (options.engine && wanted('streams-engine')) {
    await step('exec and port-forward on the engine');
    rows.push(...(await streams('docker', streamsSizes(q))));
  }
  if (cri && wanted('streams-cri')) {
    await step('exec and port-forward on containerd (CRI)');
    rows.push(...(await streams('cri', streamsSizes(q))));
  }
  // Resource figures (issue 24): scrapes with 200 pods (in memory), and our figures against the engines' own.
  if (wanted('figures')) {
    await step('resource figures: scrapes');
    rows.push(...(await figuresScrape(q ? 20 : 200, q ? 20 : 300)));
  }
  if (options.engine && wanted('figures-engine')) {
    await step('resource figures against docker stats');
    rows.push(...(await figuresAgreement('docker', q)));
  }
  if (cri && wanted('figures-cri')) {
    await step('resource figures against ctr task metrics');
    rows.push(...(await figuresAgreement('cri', q)));
  }
  // The operator's command line (issue 25): get pods with 1,000 pods, and watchers through a churn.
  if (wanted('operator')) {
    await step("the operator's command line");
    rows.push(...(await operatorGet(q ? 50 : 1_000, q ? 2 : 10)));
    rows.push(...(await operatorWatch(q ? 10 : 100, q ? 10 : 100, q ? 2 : 5)));
  }
  if (wanted('steady')) {
    await step('steady state');
    rows.push(...(await steadyState(q ? 100 : 1_000, q ? 3 : 20, Infinity)));
    rows.push(...(await steadyState(q ? 500 : 10_000, q ? 3 : 20, q ? 50 : 200)));
  }
  if (wanted('reaction')) {
    await step('reaction');
    rows.push(...(await reaction(q ? 3 : 15)));
  }
  if (wanted('memory')) {
    await step('memory');
    rows.push(...(await memory(q ? 500 : 10_000)));
  }
  if (wanted('fleet')) {
    await step('fleet: agents on one etcd');
    rows.push(...(await fleet(fleetSize(q))));
  }

  // A node of a cluster (issue 43): pod startup through the API server, and the idle node.
  if (options.engine && wanted('cluster')) {
    await step('a node of a cluster');
    rows.push(...(await clusterStartup(q ? 3 : 15, q ? 5 : 30, q ? 5 : 20, q ? 5 : 30)));
  }
  // Streams through the API server (issue 44): kubectl exec and port-forward, both ways the API server takes them.
  if (options.engine && wanted('cluster-streams')) {
    await step('exec and port-forward through the API server');
    rows.push(...(await clusterStreams(clusterStreamsSizes(q))));
  }
  // The real kubelet beside kubelet-ts (issue 46): both on the private containerd, one control plane.
  if (cri && wanted('kubelet-side-by-side')) {
    await step('the real kubelet beside kubelet-ts, on containerd');
    rows.push(...(await kubeletSideBySide(sideBySideSizes(q))));
  }
  // Hollow nodes (issue 46): N nodes in one process on the in-memory runtime; KUBELET_TS_BENCH_HOLLOW changes the steps.
  if (wanted('hollow')) {
    await step('hollow nodes on the control plane');
    rows.push(...(await hollow(hollowSteps(q))));
  }

  await save();
  return rows;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = new Set(process.argv.slice(2));
  const out = fileURLToPath(new URL('../out', import.meta.url));
  const only = [...args]
    .find((a) => a.startsWith('--only='))
    ?.slice('--only='.length)
    .split(',');
  const unknown = only?.filter((name) => !(SCENARIOS as readonly string[]).includes(name)) ?? [];
  if (unknown.length > 0) {
    process.stderr.write(`bench: no scenario ${unknown.join(', ')}; the scenarios are ${SCENARIOS.join(', ')}\n`);
    process.exit(2);
  }
  const rows = await runBench({
    quick: args.has('--quick'),
    engine: !args.has('--no-engine'),
    cri: !args.has('--no-engine') && !args.has('--no-cri'),
    out,
    ...(only === undefined ? {} : { only: new Set(only as Scenario[]) }),
  });
  process.stdout.write(markdown(rows, describeMachine(), new Date()));
  process.stderr.write(`bench: wrote ${out}/results.json and ${out}/RESULTS.md\n`);
}
