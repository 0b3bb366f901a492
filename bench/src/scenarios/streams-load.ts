import { ms, row, summarise, type Row } from '../stats.js';
import { within } from './logs-agent.js';
import { peakOf, sampler, type ProcessSample, type StreamsAgent } from './streams-agent.js';
import type { ExecWay } from './streams-baselines.js';
import { channelSession, EXEC_PROTOCOLS, ForwardedConnection } from './streams-clients.js';

/** What the concurrency rows are told: where the agent is, how to reach its routes, how many sessions, how long to wait after. */
export interface StreamsLoad {
  readonly scenario: string;
  readonly label: string;
  readonly agent: StreamsAgent;
  readonly execUrl: (command: readonly string[]) => string;
  /** `/portForward` of the pod's echo port. */
  readonly echoUrl: string;
  /** How the agent reaches the pod's port on this engine, for the notes. */
  readonly how: string;
  /** The engine's own ways to exec, each given the same sessions at once after the agent's (for the notes). */
  readonly engineWays: readonly ExecWay[];
  readonly sessions: number;
  readonly settleSeconds: number;
}

const pause = (msec: number) => new Promise((r) => setTimeout(r, msec));
const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
/** Descriptors the agent may hold beyond its start once the sessions are over (a pooled engine connection). */
const FD_SLACK = 2;
const RSS_SLACK_MB = 10;
/** What each of the sessions at once runs, and how long it may take (containerd 1.6 has taken 50 s for 50 at once). */
const SLEEP = ['sh', '-c', 'sleep 1; echo done'];
const SESSION_MS = 120_000;

/** Resolves once `connection` echoed `text` back, within `timeoutMs`. */
function echoed(connection: ForwardedConnection, text: string, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let got = '';
    const timer = setTimeout(() => reject(new Error(`no echo within ${timeoutMs / 1000} s`)), timeoutMs);
    connection.listen((chunk) => {
      got += chunk.toString('utf8');
      if (!got.includes(text)) return;
      clearTimeout(timer);
      resolve();
    });
    connection.send(text);
  });
}

/**
 * `sessions` exec sessions at once (`sh -c 'sleep 1; echo done'`), each lost unless it printed
 * `done` and ended with `Success`; then `sessions` forwarded connections at once to the pod's echo
 * port, each lost unless it echoed its line, all held open until every one has, then closed. The
 * agent's RSS and open descriptors before, at the peak (sampled every 100 ms) and `settleSeconds`
 * after the last session ended; its RSS before and at the end also after a full GC (what it retains).
 */
export async function streamsLoad(load: StreamsLoad): Promise<Row[]> {
  const { agent, sessions } = load;
  const firstError = (settled: ReadonlyArray<PromiseSettledResult<unknown>>) => {
    const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    return failed === undefined ? '' : `; the first lost: ${String((failed.reason as Error).message ?? failed.reason).slice(0, 200)}`;
  };

  // 1. exec sessions at once; each ends by itself (the server closes it).
  await pause(1000);
  const execBefore = await agent.collected();
  let sampling = sampler(agent);
  let t = process.hrtime.bigint();
  const execs = await Promise.allSettled(
    Array.from({ length: sessions }, () => channelSession(load.execUrl(SLEEP), EXEC_PROTOCOLS, SESSION_MS)),
  );
  const execWall = ms(t);
  const execPeak = peakOf(await sampling.stop());
  const execLost = execs.filter((r) => r.status === 'rejected' || r.value.stdout !== 'done\n' || r.value.status !== 'Success');
  await pause(load.settleSeconds * 1000);
  const execSettled = await agent.sample();
  const execAfter = await agent.collected();
  const theirs: string[] = [];
  for (const way of load.engineWays) {
    t = process.hrtime.bigint();
    const done = await Promise.allSettled(Array.from({ length: sessions }, () => within(way.run(SLEEP), SESSION_MS, way.name)));
    const lost = done.filter((r) => r.status === 'rejected').length;
    theirs.push(`${way.name}: all over in ${(ms(t) / 1000).toFixed(1)} s, ${lost} lost${firstError(done)}`);
  }

  // 2. forwarded connections at once, all open together, then closed.
  const forwardBefore = await agent.collected();
  sampling = sampler(agent);
  t = process.hrtime.bigint();
  const forwards = await Promise.allSettled(
    Array.from({ length: sessions }, async (_, i) => {
      const connection = await ForwardedConnection.open(load.echoUrl, 60_000);
      try {
        await echoed(connection, `connection ${i}\n`, 60_000);
      } catch (error) {
        await connection.close();
        throw error;
      }
      return connection;
    }),
  );
  const forwardWall = ms(t);
  const held = await agent.sample();
  const processesHeld = await agent.children();
  const open = forwards.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  await Promise.all(open.map((c) => c.close()));
  const forwardPeak = peakOf([...(await sampling.stop()), held]);
  const forwardLost = forwards.filter((r) => r.status === 'rejected');
  await pause(load.settleSeconds * 1000);
  const forwardSettled = await agent.sample();
  const forwardAfter = await agent.collected();

  const back = (before: ProcessSample, settled: ProcessSample, after: ProcessSample) =>
    settled.fds <= before.fds + FD_SLACK && after.rss <= before.rss + RSS_SLACK_MB * 1024 * 1024;
  const trail = (before: ProcessSample, peak: ProcessSample, settled: ProcessSample, after: ProcessSample) =>
    `the agent's RSS ${mb(before.rss)} MB before (after a full GC), ${mb(peak.rss)} MB at the peak, ${mb(settled.rss)} MB ${load.settleSeconds} s after the last ended and ${mb(after.rss)} MB after a full GC then; open descriptors ${before.fds} → ${peak.fds} → ${settled.fds}`;
  const target = `0 lost; ${load.settleSeconds} s after: descriptors back (±${FD_SLACK}), RSS after a full GC ≤ before + ${RSS_SLACK_MB} MB`;
  return [
    row({
      scenario: load.scenario,
      metric: `${load.label}: ${sessions} exec sessions at once (\`sh -c 'sleep 1; echo done'\`), lost`,
      unit: 'sessions',
      value: summarise([execLost.length]),
      target: { text: target, met: execLost.length === 0 && back(execBefore, execSettled, execAfter) },
      note: `all over in ${(execWall / 1000).toFixed(1)} s (each sleeps 1 s); ${trail(execBefore, execPeak, execSettled, execAfter)}; a session is lost unless it printed \`done\` and its status was Success${firstError(execs)}. The same ${sessions} at once, then, through the engine's own: ${theirs.join('; ')}`,
    }),
    row({
      scenario: load.scenario,
      metric: `${load.label}: ${sessions} port-forward connections at once to an echo in the pod, lost`,
      unit: 'connections',
      value: summarise([forwardLost.length]),
      target: { text: target, met: forwardLost.length === 0 && back(forwardBefore, forwardSettled, forwardAfter) },
      note: `all ${open.length} echoed within ${(forwardWall / 1000).toFixed(1)} s and were held open together, then closed; ${trail(forwardBefore, forwardPeak, forwardSettled, forwardAfter)}; the echo is busybox \`nc -ll -e cat\` (a process per connection in the pod); ${load.how}${firstError(forwards)}`,
    }),
    row({
      scenario: load.scenario,
      metric: `${load.label}: processes the agent runs while ${open.length} port-forward connections to one pod are held open`,
      unit: 'processes',
      value: summarise([processesHeld]),
      // Issue 48: a process per connection let one request exhaust the host's memory.
      target: { text: 'at most 1 (one helper per pod, not one per connection)', met: processesHeld <= 1 },
      note: `the agent's children, from /proc, once all ${open.length} had echoed; ${load.how}`,
    }),
  ];
}
