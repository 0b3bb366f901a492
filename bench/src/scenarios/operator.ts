import { execFile } from 'node:child_process';
import { request } from 'node:http';
import { fileURLToPath } from 'node:url';
import { ms, row, summarise, type Row } from '../stats.js';
import { ask, heapOf, sampleOf, startAgentProcess, stopAgentProcess } from './agent-process.js';
import { within } from './logs-agent.js';

export const OPERATOR_SCENARIO = "13. the operator's command line";

// The command as a person runs it: the launcher, which starts Node as each command needs.
const CLI = fileURLToPath(new URL('../../../packages/cli/bin/kubelet-ts', import.meta.url));
// The agent of these rows, compiled, whether this module runs from dist/ (npm run bench) or src/ (jest).
const AGENT = fileURLToPath(new URL('../../dist/scenarios/operator-agent-child.js', import.meta.url));
// Run in the agent child first, with `--expose-gc`: a full GC when asked (what it retains, told apart from garbage).
const GC_HOOK = new URL('../../dist/scenarios/streams-gc-hook.js', import.meta.url).href;
const pause = (msec: number) => new Promise((r) => setTimeout(r, msec));

/**
 * The least a Node client does with the answer `kubelet-ts get pods` reads (`/pods` as a Table):
 * one GET, the answer parsed whole, a line a row printed. What `kubelet-ts get pods` costs beyond
 * it is the CLI's own (its modules, its flags, its layout); what this costs beyond `node -e 0` is
 * Node's HTTP client and the JSON.
 */
const LEAST_CLIENT = `
const [url] = process.argv.slice(1);
require('node:http').get(url + '/pods', { headers: { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' } }, (res) => {
  const chunks = [];
  res.on('data', (c) => chunks.push(c)).on('end', () => {
    let out = '';
    for (const r of JSON.parse(Buffer.concat(chunks).toString()).rows) out += r.object.metadata.namespace + '   ' + r.cells.join('   ') + '\\n';
    process.stdout.write(out);
  });
});`;

/** This process's environment less NODE_EXTRA_CA_CERTS, which Node 20 reads as it starts: what the launcher gives a client command. */
const { NODE_EXTRA_CA_CERTS: extraCas, ...WITHOUT_EXTRA_CAS } = process.env;

/** Runs `file` with `args` (the CLI as a person runs it: its launcher starts Node), and its output. */
function run(file: string, args: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(file, args, { timeout: 60_000, maxBuffer: 64 * 1024 * 1024, env }, (error, stdout, stderr) =>
      error === null ? resolve(stdout) : reject(new Error(`${file} ${args.join(' ').slice(0, 200)}: ${stderr || error.message}`)),
    ),
  );
}

/** A timed run of `file` with `args` into `samples`, and its output. */
async function timed(file: string, args: readonly string[], samples: number[], env?: NodeJS.ProcessEnv): Promise<string> {
  const t = process.hrtime.bigint();
  const out = await run(file, args, env);
  samples.push(ms(t));
  return out;
}

/**
 * `kubelet-ts get pods -A` with `pods` pods, end to end (a process of its own, run as a person runs
 * it: the launcher, its shebang's Node flags; against the agent in a process of its own), beside: the same CLI printing its help (its start
 * alone), the least Node client of the same answer (LEAST_CLIENT), and Node doing nothing
 * (`node -e 0`); and the runtime calls the reads made.
 */
export async function operatorGet(pods: number, runs: number): Promise<Row[]> {
  const { child, url } = await startAgentProcess(AGENT, { pods });
  try {
    const calls = await ask<number>(child, 'calls', 'calls', 'count its runtime calls');
    const get: number[] = [];
    const startup: number[] = [];
    const least: number[] = [];
    const node: number[] = [];
    const bareNode: number[] = [];
    let rows = 0;
    let leastRows = 0;
    // Taken in turn, so that the machine's moods fall on each alike.
    for (let i = 0; i < runs; i++) {
      rows = (await timed(CLI, ['get', 'pods', '-A', '--no-headers', '--server', url], get)).trim().split('\n').length;
      await timed(CLI, ['get', '--help'], startup);
      leastRows = (await timed(process.execPath, ['-e', LEAST_CLIENT, url], least, WITHOUT_EXTRA_CAS)).trim().split('\n').length;
      await timed(process.execPath, ['-e', '0'], node);
      await timed(process.execPath, ['-e', '0'], bareNode, WITHOUT_EXTRA_CAS);
    }
    if (rows !== pods) throw new Error(`get pods printed ${rows} rows for ${pods} pods`);
    if (leastRows !== pods) throw new Error(`the least client printed ${leastRows} rows for ${pods} pods`);
    const made = (await ask<number>(child, 'calls', 'calls', 'count its runtime calls')) - calls;
    const value = summarise(get);
    const at = (samples: number[]) => `${summarise(samples).median.toFixed(0)} ms`;
    return [
      row({
        scenario: OPERATOR_SCENARIO,
        metric: `kubelet-ts get pods -A, ${pods} pods, end to end (a process of its own)`,
        unit: 'ms',
        value,
        baseline: { name: 'the least Node client of the same Table (one GET, JSON.parse, a line a row)', value: summarise(least) },
        target: { text: '≤ 150 ms (issue 25)', met: value.median <= 150 },
        note: `${runs} runs of each, in turn; the agent on the in-memory runtime in a process of its own, its real HTTP server; the read is /pods as a Table (kubectl's Accept), each row with its pod's metadata. The least client runs without NODE_EXTRA_CA_CERTS, as the launcher runs a client command${extraCas === undefined ? ' (this machine sets none)' : ''}. Medians: the CLI printing its help (its start alone) ${at(startup)}, \`node -e 0\` ${at(node)} (${at(bareNode)} without NODE_EXTRA_CA_CERTS)`,
      }),
      row({
        scenario: OPERATOR_SCENARIO,
        metric: `runtime calls made by ${runs} get pods`,
        unit: 'calls',
        value: summarise([made]),
        target: { text: '0: served from the agent’s state (issue 25)', met: made === 0 },
      }),
    ];
  } finally {
    await stopAgentProcess(child);
  }
}

/** A watch on `/pods?watch=1`: each pod's changes in the order they came. */
function watcher(url: string) {
  const byPod = new Map<string, string[]>();
  let lines = 0;
  let buffer = '';
  let failed: Error | undefined;
  let answered: () => void = () => undefined;
  const connected = new Promise<void>((resolve) => (answered = resolve));
  const req = request(`${url}/pods?watch=1`, (res) => {
    answered();
    res.setEncoding('utf8').on('data', (chunk: string) => {
      buffer += chunk;
      for (let at = buffer.indexOf('\n'); at >= 0; at = buffer.indexOf('\n')) {
        const change = JSON.parse(buffer.slice(0, at)) as { type: string; object: { metadata: { name: string } } };
        buffer = buffer.slice(at + 1);
        lines += 1;
        const seen = byPod.get(change.object.metadata.name) ?? [];
        seen.push(change.type);
        byPod.set(change.object.metadata.name, seen);
      }
    });
    res.on('close', () => (failed ??= new Error('the watch ended')));
  });
  req.on('error', (e) => (failed = e));
  req.end();
  return { byPod, connected, lines: () => lines, failed: () => failed, stop: () => req.destroy() };
}

/**
 * `watchers` watchers on `/pods?watch=1` (in this process) while `pods` pods churn (each added
 * through the agent's server, then removed, `rounds` times): every watcher must see, for every
 * pod, ADDED and DELETED alternate, ending as the agent ends; and the growth of the agent's RSS
 * (the agent in a process of its own, sampled every 100 ms) over the run, after one round of the
 * same churn with no watcher (its first requests' code compiled, as a running agent's is).
 */
export async function operatorWatch(watchers: number, pods: number, rounds: number): Promise<Row[]> {
  const { child, url } = await startAgentProcess(AGENT, { pods: 0 }, { execArgv: ['--expose-gc', '--import', GC_HOOK] });
  const post = async (body: unknown) => {
    const res = await fetch(`${url}/containers`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (res.status !== 200) throw new Error(`the agent answered POST /containers with ${res.status}: ${await res.text()}`);
  };
  const sync = () => ask(child, 'sync', 'synced', 'run a pass');
  const ids = Array.from({ length: pods }, (_, i) => `churn-${i}`);
  const all = ids.map((id) => ({ version: 'v1beta1', id, containers: [{ name: 'c0', image: 'busybox:1.36' }] }));
  const round = async () => {
    await post(all);
    await sync();
    await pause(200);
    await post([]);
    await sync();
    await pause(200);
  };
  const ws: ReturnType<typeof watcher>[] = [];
  const samples: number[] = [];
  let sampling = true;
  try {
    await round();
    await pause(1000);
    const before = (await sampleOf(child)).rss;
    const heapBefore = await heapOf(child);
    const sampler = (async () => {
      while (sampling) {
        samples.push((await sampleOf(child)).rss);
        await pause(100);
      }
    })();
    for (let i = 0; i < watchers; i++) ws.push(watcher(url));
    // Every watcher is answered before the churn, so each must see all of it.
    await within(Promise.all(ws.map((w) => w.connected)), 30_000, `${watchers} watchers to be answered`);
    const t = process.hrtime.bigint();
    for (let r = 0; r < rounds; r++) await round();
    const churnMs = ms(t);
    const deadline = Date.now() + 30_000;
    // Each pod ends removed: its last change DELETED, for every watcher.
    const settled = (w: ReturnType<typeof watcher>) => ids.every((id) => w.byPod.get(id)?.at(-1) === 'DELETED');
    while (!ws.every(settled) && Date.now() < deadline) await pause(100);
    sampling = false;
    await sampler;
    const after = (await sampleOf(child)).rss;
    const heapAfter = await heapOf(child);
    await ask(child, 'gc', 'gc', 'collect its garbage');
    const retained = (await sampleOf(child)).rss;
    const heapRetained = await heapOf(child);
    const sawAll = (w: ReturnType<typeof watcher>) =>
      ids.every((id) => (['ADDED', 'DELETED'] as const).every((type) => w.byPod.get(id)?.filter((c) => c === type).length === rounds));
    const wrong = ws.filter(
      (w) => w.failed() !== undefined || !settled(w) || !sawAll(w) || ids.some((id) => !alternates(w.byPod.get(id) ?? [])),
    ).length;
    const lines = ws.map((w) => w.lines());
    const mb = (bytes: number) => bytes / 1024 / 1024;
    const growthMb = mb(Math.max(after, ...samples) - before);
    return [
      row({
        scenario: OPERATOR_SCENARIO,
        metric: `${watchers} watchers of /pods?watch=1, ${pods} pods added and removed ${rounds} times`,
        unit: 'watchers in order',
        value: summarise([watchers - wrong]),
        target: { text: `all ${watchers}: each pod ADDED, MODIFIED…, DELETED, in turn, ${rounds} times (issue 25)`, met: wrong === 0 },
        note: `${Math.min(...lines)}–${Math.max(...lines)} lines a watcher over ${(churnMs / 1000).toFixed(1)} s (a change seen by every watcher is rendered once; changes within 50 ms are seen as one)`,
      }),
      row({
        scenario: OPERATOR_SCENARIO,
        metric: `the agent's RSS growth with ${watchers} watchers through the churn (its peak)`,
        unit: 'MB',
        value: summarise([growthMb]),
        target: { text: '≤ 30 MB (issue 25)', met: growthMb <= 30 },
        note: `the agent alone in a process of its own (operator-agent-child.ts, the launcher's Node flags), VmRSS every 100 ms: ${mb(before).toFixed(1)} MB before, peak ${mb(Math.max(after, ...samples)).toFixed(1)} MB, ${mb(after).toFixed(1)} MB at the end, ${mb(retained).toFixed(1)} MB after a full GC; V8 before: ${heapBefore}, at the end: ${heapAfter}, after the full GC: ${heapRetained}; the watchers are Node http clients in the bench's process`,
      }),
    ];
  } finally {
    sampling = false;
    for (const w of ws) w.stop();
    await stopAgentProcess(child);
  }
}

/** ADDED, then any MODIFIED, then DELETED, then ADDED again…: never two adds or two deletes in a row. */
function alternates(changes: readonly string[]): boolean {
  let present = false;
  for (const c of changes) {
    if (c === 'ADDED' && present) return false;
    if (c === 'DELETED' && !present) return false;
    if (c === 'MODIFIED' && !present) return false;
    present = c !== 'DELETED';
  }
  return true;
}
