import { execFile } from 'node:child_process';
import { request } from 'node:http';
import { fileURLToPath } from 'node:url';
import { StaticManifestSource } from '@kubelet-ts/manifest';
import { createKubelet } from '@kubelet-ts/runner';
import { MemoryRuntime } from '@kubelet-ts/runtime-memory';
import { ServerManifestSource, agentApiHandler } from '@kubelet-ts/source-server';
import { ms, row, summarise, type Row } from '../stats.js';
import { manifest } from './fixtures.js';

export const OPERATOR_SCENARIO = "13. the operator's command line";

const CLI = fileURLToPath(new URL('../../../packages/cli/bin/kubelet-ts.js', import.meta.url));
const pause = (msec: number) => new Promise((r) => setTimeout(r, msec));

/** An agent on the in-memory runtime with `pods` pods, its real server, and the pods it runs. */
async function agentWith(pods: number) {
  const runtime = new MemoryRuntime();
  const server = new ServerManifestSource({ port: 0 });
  const kubelet = createKubelet({
    runtime,
    sources: [
      new StaticManifestSource(
        'bench',
        Array.from({ length: pods }, (_, i) => manifest(`op-${i}`, 'busybox:1.36')),
      ),
      server,
    ],
    hostname: 'bench-operator',
    syncFrequencyMs: 3_600_000,
    housekeeping: { intervalMs: 0 },
  });
  server.mount(agentApiHandler(kubelet));
  await kubelet.start();
  await kubelet.sync();
  return {
    runtime,
    url: server.url,
    kubelet,
    close: async () => {
      await kubelet.close();
      await server.close();
    },
  };
}

function run(args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(process.execPath, [CLI, ...args], { timeout: 60_000 }, (error, stdout, stderr) =>
      error === null ? resolve(stdout) : reject(new Error(`kubelet-ts ${args.join(' ')}: ${stderr || error.message}`)),
    ),
  );
}

/**
 * `kubelet-ts get pods -A` with `pods` pods, end to end (a process of its own, as a person runs it),
 * against the same process running `kubelet-ts --version`-like startup alone (`get --help`), and the
 * runtime calls the reads made.
 */
export async function operatorGet(pods: number, runs: number): Promise<Row[]> {
  const agent = await agentWith(pods);
  try {
    const calls = agent.runtime.callCount();
    const get: number[] = [];
    const startup: number[] = [];
    let rows = 0;
    for (let i = 0; i < runs; i++) {
      let t = process.hrtime.bigint();
      const out = await run(['get', 'pods', '-A', '--no-headers', '--server', agent.url]);
      get.push(ms(t));
      rows = out.trim().split('\n').length;
      t = process.hrtime.bigint();
      await run(['get', '--help']);
      startup.push(ms(t));
    }
    if (rows !== pods) throw new Error(`get pods printed ${rows} rows for ${pods} pods`);
    const made = agent.runtime.callCount() - calls;
    const value = summarise(get);
    return [
      row({
        scenario: OPERATOR_SCENARIO,
        metric: `kubelet-ts get pods -A, ${pods} pods, end to end (a process of its own)`,
        unit: 'ms',
        value,
        baseline: { name: 'the same CLI process printing its help (startup alone)', value: summarise(startup) },
        target: { text: '≤ 150 ms (issue 25)', met: value.median <= 150 },
        note: `${runs} runs; the agent on the in-memory runtime, its real HTTP server; the read is /pods (a v1 PodList)`,
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
    await agent.close();
  }
}

/** A watch on `/pods?watch=1`: each pod's changes in the order they came. */
function watcher(url: string) {
  const byPod = new Map<string, string[]>();
  let lines = 0;
  let buffer = '';
  let failed: Error | undefined;
  const req = request(`${url}/pods?watch=1`, (res) => {
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
  return { byPod, lines: () => lines, failed: () => failed, stop: () => req.destroy() };
}

/**
 * `watchers` watchers on `/pods?watch=1` while `pods` pods churn (each removed through the
 * server, then added again, `rounds` times): every watcher must see, for every pod, ADDED and
 * DELETED alternate, ending as the agent ends; the agent's RSS growth over the run.
 */
export async function operatorWatch(watchers: number, pods: number, rounds: number): Promise<Row[]> {
  const agent = await agentWith(0);
  const post = (path: string, body: unknown, method = 'POST') =>
    fetch(`${agent.url}${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? null : JSON.stringify(body),
    });
  const ids = Array.from({ length: pods }, (_, i) => `churn-${i}`);
  const all = () => ids.map((id) => ({ version: 'v1beta1', id, containers: [{ name: 'c0', image: 'busybox:1.36' }] }));
  const ws: ReturnType<typeof watcher>[] = [];
  try {
    global.gc?.();
    const rss0 = process.memoryUsage().rss;
    for (let i = 0; i < watchers; i++) ws.push(watcher(agent.url));
    const t = process.hrtime.bigint();
    for (let round = 0; round < rounds; round++) {
      if ((await post('/containers', all())).status !== 200) throw new Error('could not post the pods');
      await agent.kubelet.sync();
      await pause(200);
      if ((await post('/containers', [])).status !== 200) throw new Error('could not remove the pods');
      await agent.kubelet.sync();
      await pause(200);
    }
    const churnMs = ms(t);
    const deadline = Date.now() + 30_000;
    // Each pod ends removed: its last change DELETED, for every watcher.
    const settled = (w: ReturnType<typeof watcher>) => ids.every((id) => w.byPod.get(id)?.at(-1) === 'DELETED');
    while (!ws.every(settled) && Date.now() < deadline) await pause(100);
    const rss1 = process.memoryUsage().rss;
    const wrong = ws.filter((w) => w.failed() !== undefined || !settled(w) || ids.some((id) => !alternates(w.byPod.get(id) ?? []))).length;
    const lines = ws.map((w) => w.lines());
    const growthMb = (rss1 - rss0) / 1e6;
    return [
      row({
        scenario: OPERATOR_SCENARIO,
        metric: `${watchers} watchers of /pods?watch=1, ${pods} pods added and removed ${rounds} times`,
        unit: 'watchers in order',
        value: summarise([watchers - wrong]),
        target: { text: `all ${watchers}: each pod ADDED, MODIFIED…, DELETED, in turn (issue 25)`, met: wrong === 0 },
        note: `${Math.min(...lines)}–${Math.max(...lines)} lines a watcher over ${(churnMs / 1000).toFixed(1)} s (a change seen by every watcher is rendered once; changes within 50 ms are seen as one)`,
      }),
      row({
        scenario: OPERATOR_SCENARIO,
        metric: `the agent's RSS growth with ${watchers} watchers through the churn`,
        unit: 'MB',
        value: summarise([growthMb]),
        target: { text: '≤ 30 MB (issue 25)', met: growthMb <= 30 },
        note: 'the agent and the watchers share this process: the growth counts both (the watchers keep every change they saw)',
      }),
    ];
  } finally {
    for (const w of ws) w.stop();
    await agent.close();
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
