import { type ChildProcess, fork, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { etcdKeyFor } from '@kubelet-ts/source-etcd';
import { EtcdServer } from '@kubelet-ts/testkit';
import { row, summarise, type Row } from '../stats.js';
import { CONTAINERS_PER_POD, type FleetAnswer, type FleetAsk, GENERATION } from './fleet-protocol.js';

/** The most agents one process holds: each holds descriptors (its gRPC channel), and a process has 20,000 here. */
const PER_PROCESS = 2_500;
const CHILD = fileURLToPath(new URL('../../dist/scenarios/fleet-child.js', import.meta.url));
const pause = (msec: number) => new Promise((r) => setTimeout(r, msec));

/** One process of hosts (`fleet-child.ts`), asked one thing at a time. */
class FleetProcess {
  private readonly child: ChildProcess;
  private pending: { resolve: (a: FleetAnswer) => void; reject: (e: Error) => void } | undefined;
  private exited: Error | undefined;

  constructor(readonly hosts: number) {
    // `advanced`: the asks carry a bigint (the send time).
    this.child = fork(CHILD, [], { execArgv: ['--expose-gc'], serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    this.child.on('message', (answer: FleetAnswer) => {
      const p = this.pending;
      this.pending = undefined;
      if (answer.type === 'failed') p?.reject(new Error(`fleet process: ${answer.message}`));
      else p?.resolve(answer);
    });
    this.child.once('exit', (code, signal) => {
      this.exited = new Error(`fleet process exited (${signal ?? code})`);
      this.pending?.reject(this.exited);
      this.pending = undefined;
    });
  }

  ask<T extends FleetAnswer['type']>(ask: FleetAsk, expect: T): Promise<Extract<FleetAnswer, { type: T }>> {
    if (this.exited !== undefined) return Promise.reject(this.exited);
    return new Promise<FleetAnswer>((resolve, reject) => {
      this.pending = { resolve, reject };
      this.child.send(ask);
    }).then((a) => {
      if (a.type !== expect) throw new Error(`fleet process: ${a.type}, where ${expect} was asked`);
      return a as Extract<FleetAnswer, { type: T }>;
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Its agents closed, then the process gone. */
  async close(): Promise<void> {
    if (this.exited === undefined) await this.ask({ type: 'close' }, 'closed').catch(() => undefined);
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const gone = once(this.child, 'exit');
      this.child.disconnect();
      await gone;
    }
  }
}

const podFor = (host: string, generation: string) =>
  JSON.stringify([
    {
      id: `web-${host}`,
      containers: Array.from({ length: CONTAINERS_PER_POD }, (_, c) => ({
        name: `c${c}`,
        image: 'app:1',
        env: [{ name: GENERATION, value: generation }],
      })),
    },
  ]);

/**
 * The most hosts one transaction puts: etcd (on this machine) answered a transaction of 2,000 puts
 * in 2.6 s and timed one of 5,000 out (its request limit, 5.5 s with the test etcd's election timeout).
 */
const TXN_HOSTS = 1_000;

/** The gateway's bodies of the transactions putting every host's key, TXN_HOSTS at most each. */
function rolloutTxns(hosts: readonly string[], generation: string): object[] {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  const bodies: object[] = [];
  for (let i = 0; i < hosts.length; i += TXN_HOSTS) {
    const some = hosts.slice(i, i + TXN_HOSTS);
    bodies.push({ success: some.map((h) => ({ requestPut: { key: b64(etcdKeyFor(h)), value: b64(podFor(h, generation)) } })) });
  }
  return bodies;
}

/** Every host's key, in transactions sent at once; resolves with the time they were sent. */
async function rollout(etcd: EtcdServer, hosts: readonly string[], generation: string): Promise<{ sent: bigint; roundTripMs: number }> {
  const bodies = rolloutTxns(hosts, generation);
  const sent = process.hrtime.bigint();
  await Promise.all(bodies.map((body) => etcd.gateway('/v3/kv/txn', body)));
  return { sent, roundTripMs: Number(process.hrtime.bigint() - sent) / 1e6 };
}

/**
 * The transactions, one after another, and SIGKILL to etcd the instant the last answer is in. A
 * shell does it all, outside any Node event loop: the kill comes as soon as etcd has answered.
 */
async function rolloutThenKill(etcd: EtcdServer, hosts: readonly string[], generation: string): Promise<{ sent: bigint }> {
  const pid = etcd.pid;
  if (pid === undefined) throw new Error('fleet: etcd is not running');
  const dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-fleet-'));
  try {
    const bodies = rolloutTxns(hosts, generation);
    for (const [i, body] of bodies.entries()) await writeFile(join(dir, `txn-${String(i).padStart(4, '0')}.json`), JSON.stringify(body));
    const sent = process.hrtime.bigint();
    const script = `for f in "$1"/txn-*.json; do curl -sf -o /dev/null --data-binary @"$f" "$2/v3/kv/txn" || exit 1; done; kill -KILL "$3"`;
    const status = await new Promise<number | null>((resolve, reject) => {
      const child = spawn('sh', ['-c', script, 'sh', dir, etcd.endpoint, String(pid)], { stdio: 'inherit' });
      child.once('error', reject);
      child.once('exit', resolve);
    });
    if (status !== 0)
      throw new Error(`fleet: curl (a transaction) or kill failed (exit ${status}); the fleet's restart needs curl on PATH`);
    await etcd.stop('SIGKILL'); // already dead: waits for the exit to be seen
    return { sent };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** CPU seconds (user + system) a process has used, from /proc/<pid>/stat; NaN when it is gone. */
async function cpuSeconds(pid: number | undefined): Promise<number> {
  const stat = pid === undefined ? '' : await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  // The fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return fields.length < 13 ? Number.NaN : (Number(fields[11]) + Number(fields[12])) / 100; // USER_HZ
}

/** etcd's own gauges of its watchers and watch streams (`etcd_debugging_mvcc_*`). */
async function watchGauges(etcd: EtcdServer): Promise<{ watchers: number; streams: number | undefined }> {
  // 10 s at most: etcd 3.4 left /metrics unanswered for minutes while 10,000 watches were being made.
  const text = await (await fetch(`${etcd.endpoint}/metrics`, { signal: AbortSignal.timeout(10_000) })).text();
  const gauge = (name: string) => {
    const m = new RegExp(`^${name} (\\S+)`, 'm').exec(text);
    return m === null ? undefined : Number(m[1]);
  };
  const watchers = gauge('etcd_debugging_mvcc_watcher_total');
  if (watchers === undefined) throw new Error('etcd metrics: no etcd_debugging_mvcc_watcher_total');
  return { watchers, streams: gauge('etcd_debugging_mvcc_watch_stream_total') };
}

async function until(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`fleet: ${what} not reached within ${timeoutMs} ms`);
    await pause(100);
  }
}

/** Every process's hosts' times of convergence to `generation`, from `sent`, in ms; hosts not there by `timeoutMs` are left out. */
async function convergence(processes: readonly FleetProcess[], generation: string, sent: bigint, timeoutMs: number): Promise<number[]> {
  const answers = await Promise.all(processes.map((p) => p.ask({ type: 'converge', generation, sent, timeoutMs }, 'converged')));
  return answers.flatMap((a) => a.times);
}

/**
 * A fleet of `size` agents, as `size` hosts would be, in processes of PER_PROCESS at most
 * (`fleet-child.ts`): each its own in-memory engine, its own etcd source with its own etcd3 client
 * (its own gRPC channel and watch stream),
 * watching `/registry/hosts/<host>/kubelet` on one real etcd. One transaction writes every key
 * (past TXN_HOSTS hosts, one transaction a TXN_HOSTS); each agent's time is from the transactions
 * being sent to both its containers running. Then a second rollout, and etcd is killed (SIGKILL, a
 * crash) the moment the transactions have committed and restarted on the same data dir and port:
 * no agent may miss it.
 */
export async function fleet(size: number): Promise<Row[]> {
  // Transactions of TXN_HOSTS keys: as many operations, and about 300 bytes a host (etcd's default limit is 1.5 MiB).
  const perTxn = Math.min(size, TXN_HOSTS);
  const etcd = await EtcdServer.launch({ maxTxnOps: Math.max(128, perTxn), maxRequestBytes: Math.max(1.5 * 1024 * 1024, perTxn * 512) });
  // A fleet's agents share this machine's cores: each needs about 1-2 ms of CPU for a rollout.
  const convergeMs = Math.max(60_000, size * 20);
  const names = Array.from({ length: size }, (_, i) => `host-${i}`);
  const processes: FleetProcess[] = [];
  try {
    for (let from = 0; from < size; from += PER_PROCESS) processes.push(new FleetProcess(Math.min(PER_PROCESS, size - from)));
    await Promise.all(
      processes.map((p, i) =>
        p.ask({ type: 'start', endpoint: etcd.endpoint, from: i * PER_PROCESS, to: i * PER_PROCESS + p.hosts }, 'started'),
      ),
    );
    // Every agent's watch made before the rollout, or as many as etcd made in the time: the rows say how many.
    const watching = Date.now();
    await until(
      `${size} watchers on etcd`,
      convergeMs,
      async () => ((await watchGauges(etcd).catch(() => undefined))?.watchers ?? 0) >= size,
    ).catch(() => undefined);
    const watchersMs = Date.now() - watching;
    const watchersBefore = (await watchGauges(etcd).catch(() => undefined))?.watchers ?? 'an unknown number of';

    // Where the machine's CPU went while the fleet converged: etcd's, and the agents' processes'.
    const agentsCpu = async () => (await Promise.all(processes.map((p) => cpuSeconds(p.pid)))).reduce((a, b) => a + b, 0);
    const cpuBefore = { etcd: await cpuSeconds(etcd.pid), agents: await agentsCpu() };
    const first = await rollout(etcd, names, '1');
    const firstTimes = await convergence(processes, '1', first.sent, convergeMs);
    const cpu = { etcd: (await cpuSeconds(etcd.pid)) - cpuBefore.etcd, agents: (await agentsCpu()) - cpuBefore.agents };
    const gauges = (await watchGauges(etcd).catch(() => undefined)) ?? { watchers: Number.NaN, streams: undefined };
    const memory = await Promise.all(processes.map((p) => p.ask({ type: 'memory' }, 'memory')));
    const after = { rss: memory.reduce((n, m) => n + m.rss, 0), heap: memory.reduce((n, m) => n + m.heap, 0) };
    const s = summarise(firstTimes.length > 0 ? firstTimes : [Number.NaN]);
    const perAgentKb = (bytes: number) => bytes / size / 1024;

    // Two restarts. (a) SIGKILL as soon as the transaction's answer is in, down for a second, then
    // the same data dir and port: a watch event etcd had not sent yet is lost with it. (b) The
    // harder one: SIGKILL, restart, and the transaction written the moment etcd answers /health,
    // while every agent is between its lost watch and its re-read: none can get it from the watch
    // it had, each must find it by reading again or on its new watch.
    const second = await rolloutThenKill(etcd, names, '2');
    const killedMs = Number(process.hrtime.bigint() - second.sent) / 1e6;
    await pause(1000);
    await etcd.start();
    const backMs = Number(process.hrtime.bigint() - second.sent) / 1e6;
    const secondTimes = await convergence(processes, '2', second.sent, convergeMs);
    // An agent that converged before etcd came back had the event from the watch etcd died with.
    const beforeBack = secondTimes.filter((t) => t < backMs).length;
    const r = summarise(secondTimes.length > 0 ? secondTimes : [Number.NaN]);

    await etcd.stop('SIGKILL');
    await etcd.start();
    const third = await rollout(etcd, names, '3');
    const thirdTimes = await convergence(processes, '3', third.sent, convergeMs);
    const w = summarise(thirdTimes.length > 0 ? thirdTimes : [Number.NaN]);
    const fleetLabel = `${size.toLocaleString('en')} agents`;
    return [
      row({
        scenario: '6. fleet',
        metric: `${fleetLabel}: ${size <= TXN_HOSTS ? 'one etcd txn of every key' : `every key, in etcd txns of ${TXN_HOSTS.toLocaleString('en')} sent at once`} → the agent's 2 containers running`,
        unit: 'ms',
        value: s,
        target: { text: 'p99 ≤ 2 s, every agent', met: s.p99 <= 2000 && firstTimes.length === size },
        note: `p50 ${s.median.toFixed(0)} ms, p99 ${s.p99.toFixed(0)} ms, max ${s.max.toFixed(0)} ms; ${firstTimes.length} of ${size} agents converged; timed from the txn being sent (its round trip, ${first.roundTripMs.toFixed(0)} ms, is inside); CPU from the rollout to the last agent's convergence: etcd ${cpu.etcd.toFixed(1)} s, the agents' processes ${cpu.agents.toFixed(1)} s (${((cpu.agents * 1000) / size).toFixed(2)} ms an agent); each agent has its own etcd3 client (gRPC channel) and MemoryRuntime, in ${processes.length} Node process${processes.length === 1 ? '' : 'es'} (${PER_PROCESS.toLocaleString('en')} agents at most each), on this machine's ${availableParallelism()} cores, shared with etcd`,
      }),
      row({
        scenario: '6. fleet',
        metric: `${fleetLabel}: etcd's watchers (etcd_debugging_mvcc_watcher_total)`,
        unit: 'watchers',
        value: summarise([gauges.watchers]),
        target: { text: `= ${size} (one per agent)`, met: gauges.watchers === size },
        note: `${gauges.streams === undefined ? '' : `watch streams (etcd_debugging_mvcc_watch_stream_total): ${gauges.streams}; `}after the first rollout; the rollout was sent once etcd had ${watchersBefore} watchers, ${(watchersMs / 1000).toFixed(1)} s after the last agent started (it waits for all of them, at most ${(convergeMs / 1000).toFixed(0)} s)`,
      }),
      row({
        scenario: '6. fleet',
        metric: `${fleetLabel}: memory per agent, RSS`,
        unit: 'KB',
        value: summarise([perAgentKb(after.rss)]),
        note: `(RSS once every agent ran its pods − RSS before the first agent was made, summed over the ${processes.length} process${processes.length === 1 ? '' : 'es'}) / ${size}, after full GCs; heap alone ${perAgentKb(after.heap).toFixed(0)} KB per agent. Includes each agent's etcd3 client and its in-memory engine holding 2 containers and a sandbox`,
      }),
      row({
        scenario: '6. fleet',
        metric: `${fleetLabel}: rollout written as etcd comes back from a SIGKILL → the agent's containers running`,
        unit: 'ms',
        value: w,
        target: { text: `every agent converges (${size} of ${size})`, met: thirdTimes.length === size },
        note: `${thirdTimes.length} of ${size} agents converged (p50 ${w.median.toFixed(0)} ms, p99 ${w.p99.toFixed(0)} ms, max ${w.max.toFixed(0)} ms from the txn being sent, the moment the restarted etcd answered /health); every agent had lost its watch to the kill and was backing off (from 500 ms, doubling) before reading the key again`,
      }),
      row({
        scenario: '6. fleet',
        metric: `${fleetLabel}: etcd SIGKILLed as the rollout txn commits, then restarted → the agent's containers running`,
        unit: 'ms',
        value: r,
        target: { text: `every agent converges (${size} of ${size})`, met: secondTimes.length === size },
        note: `${secondTimes.length} of ${size} agents converged (max ${r.max.toFixed(0)} ms from the txn being sent, p99 ${r.p99.toFixed(0)} ms); ${beforeBack} had it before etcd came back (from the watch etcd died with), ${secondTimes.length - beforeBack} only after (by reading the key again). A shell ran the txn with curl and \`kill -KILL\` at once when it answered (seen by the bench ${killedMs.toFixed(0)} ms after sending); etcd was back (same data dir and port, /health answering) ${backMs.toFixed(0)} ms after sending. The agents re-read the key after losing the watch (back-off from 500 ms, doubling)`,
      }),
    ];
  } finally {
    await Promise.all(processes.map((p) => p.close()));
    await etcd.destroy();
  }
}
