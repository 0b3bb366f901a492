import { parseLogTime } from '@kubelet-ts/core';
import { ms, row, summarise, type Row, type Summary } from '../stats.js';
import { LogsAgent, within, type LogsPod } from './logs-agent.js';
import { criLogsEngine, dockerLogsEngine, LOGS_SCENARIO, type LogsEngine, type LogsSizes } from './logs-engines.js';
import { curlRead, openRead, wallMs, type OpenRead } from './logs-readers.js';
import { logsRss } from './logs-rss.js';

const FULL: LogsSizes = {
  throughputLines: 1_000_000,
  throughputRuns: 5,
  followLines: 500,
  followEveryMs: 20,
  readers: 10,
  followSeconds: 60,
  pausedSeconds: 20,
  settleSeconds: 25,
};
const QUICK: LogsSizes = {
  throughputLines: 20_000,
  throughputRuns: 1,
  followLines: 30,
  followEveryMs: 20,
  readers: 10,
  followSeconds: 3,
  pausedSeconds: 2,
  settleSeconds: 2,
};

/** The full or quick sizes, with what `KUBELET_TS_BENCH_LOGS` (a JSON object of `LogsSizes` fields) changes. */
export function logsSizes(quick: boolean): LogsSizes {
  const changes = process.env['KUBELET_TS_BENCH_LOGS'];
  const sizes: LogsSizes = {
    ...(quick ? QUICK : FULL),
    ...(changes === undefined || changes === '' ? {} : (JSON.parse(changes) as Partial<LogsSizes>)),
  };
  for (const [name, value] of Object.entries(sizes))
    if (!Number.isSafeInteger(value) || value <= 0)
      throw new Error(`KUBELET_TS_BENCH_LOGS: ${name} must be a whole number above 0, got ${JSON.stringify(value)}`);
  return sizes;
}

const LINE = 'x'.repeat(99);
/** After its work a container stays, and ends at once on SIGTERM (as the other scenarios' do). */
const STAY = 'trap "exit 0" TERM; sleep 3600 & wait';
const fmt = (n: number) => (n >= 100 ? n.toFixed(0) : n.toFixed(1));

/**
 * Issue 22's figures on one real engine: the agent (in this process, with its own HTTP server on
 * loopback) serving `GET /containerLogs` to real HTTP clients, against the engine's own reading in
 * the same run: a whole 100 MB output read (throughput), a followed container's lines (latency from
 * print to reader), then the agent in a process of its own under 10 followers and one stalled
 * reader (its RSS, logs-rss.ts).
 */
export async function logs(which: 'docker' | 'cri', sizes: LogsSizes): Promise<Row[]> {
  const engine = which === 'docker' ? await dockerLogsEngine() : await criLogsEngine();
  try {
    const agent = new LogsAgent({ runtime: engine.runtime('read'), node: engine.node });
    const rows: Row[] = [];
    try {
      await agent.start();
      rows.push(...(await throughput(agent, engine, sizes)));
      rows.push(...(await followLatency(agent, engine, sizes)));
    } finally {
      await agent.clear().catch(() => undefined);
      await agent.close();
      await engine.removePods();
    }
    rows.push(...(await logsRss(engine, sizes)));
    return rows;
  } finally {
    await engine.dispose();
  }
}

/** Resolves once the last line the container printed is `END` (asked through the agent, every 250 ms). */
async function printedAll(url: string): Promise<void> {
  for (;;) {
    const res = await fetch(url);
    if (res.status === 200 && (await res.text()) === 'END\n') return;
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function throughput(agent: LogsAgent, engine: LogsEngine, sizes: LogsSizes): Promise<Row[]> {
  const pod: LogsPod = {
    id: 'logs-throughput',
    image: engine.image,
    command: ['sh', '-c', `yes ${LINE} | head -n ${sizes.throughputLines}; echo END; ${STAY}`],
  };
  const bytes = sizes.throughputLines * 100 + 'END\n'.length;
  await agent.run(pod);
  const t = process.hrtime.bigint();
  await within(printedAll(agent.logsUrl(pod, 'tailLines=1')), 600_000, 'the container to print its output');
  const printing = ms(t);
  const container = await agent.container(pod);
  const mbps = (took: number) => bytes / 1e6 / (took / 1000);
  const readOurs = async () => {
    const read = await curlRead(agent.logsUrl(pod, ''));
    if (read.bytes !== bytes) throw new Error(`${engine.label}: /containerLogs gave ${read.bytes} bytes, not the ${bytes} printed`);
    return mbps(read.ms);
  };
  const readBase = async () => mbps(await engine.wholeRead.read(container));
  // One read of each first, untimed: the log files in the page cache, the agent's code compiled.
  await readOurs();
  await readBase();
  const ours: number[] = [];
  const base: number[] = [];
  const references = engine.references.map(() => [] as number[]);
  for (let run = 0; run < sizes.throughputRuns; run++) {
    // Who goes first alternates, so that drift over the run favours neither.
    if (run % 2 === 0) {
      ours.push(await readOurs());
      base.push(await readBase());
    } else {
      base.push(await readBase());
      ours.push(await readOurs());
    }
    for (const [i, reference] of engine.references.entries()) references[i]!.push(mbps(await reference.read(container)));
  }
  await agent.clear();
  const value = summarise(ours);
  const baseline = summarise(base);
  const mb = (bytes / 1e6).toFixed(bytes >= 1e7 ? 0 : 1);
  return [
    row({
      scenario: LOGS_SCENARIO,
      metric: `${engine.label}: a ${mb} MB output (lines of 100 bytes) read whole through GET /containerLogs by curl`,
      unit: 'MB/s',
      value,
      baseline: { name: engine.wholeRead.name, value: baseline },
      target: { text: 'ratio ≥ 0.9', met: value.median / baseline.median >= 0.9 },
      note: `MB/s of the container's output (${bytes.toLocaleString('en')} bytes, checked for the agent's reads), from spawning the reader to its exit, the body to /dev/null; the agent's reads (curl, a client in a process of its own, over loopback) and the engine's alternate, after one untimed read of each; ${engine.keeping.read}; the container printed it in ${fmt(printing / 1000)} s`,
    }),
    ...engine.references.map((reference, i) =>
      row({
        scenario: LOGS_SCENARIO,
        metric: `${engine.label}: the same output, ${reference.name}`,
        unit: 'MB/s',
        value: summarise(references[i]!),
        note: 'for reference: where the time goes between the engine and the agent',
      }),
    ),
  ];
}

async function followLatency(agent: LogsAgent, engine: LogsEngine, sizes: LogsSizes): Promise<Row[]> {
  const { followLines: lines, followEveryMs: every } = sizes;
  // busybox sh's $EPOCHREALTIME: the print time to the microsecond, without a process per line.
  const loop = `i=0; while [ $i -lt ${lines} ]; do echo $EPOCHREALTIME; usleep ${every * 1000}; i=$((i+1)); done`;
  const pod: LogsPod = { id: 'logs-follow', image: engine.image, command: ['sh', '-c', `sleep 2; ${loop}; echo END; ${STAY}`] };
  await agent.run(pod);
  const container = await agent.container(pod);
  const ours: number[] = [];
  const stamped: number[] = [];
  const theirs: number[] = [];
  let counted = Number.POSITIVE_INFINITY; // lines printed before both readers were connected are left out
  let early = 0;
  let oursEnded: () => void = () => undefined;
  let theirsEnded: () => void = () => undefined;
  const ends = [new Promise<void>((r) => (oursEnded = r)), new Promise<void>((r) => (theirsEnded = r))];
  const reader = await openRead(agent.logsUrl(pod, 'follow=true&timestamps=true'), {
    onLine: (line, at) => {
      const space = line.indexOf(' ');
      const content = line.slice(space + 1);
      if (content === 'END') return oursEnded();
      const printed = Number(content) * 1000;
      if (printed < counted) return void early++;
      ours.push(at - printed);
      const stamp = parseLogTime(line.slice(0, space));
      if (stamp !== undefined) stamped.push(stamp.time + (stamp.nanos ?? 0) / 1e6 - printed);
    },
  });
  let follower: OpenRead | undefined;
  try {
    follower = engine.follower(container, (content, at) => {
      if (content === 'END') return theirsEnded();
      const printed = Number(content) * 1000;
      if (printed >= counted) theirs.push(at - printed);
    });
    // The engine's follower dials as it starts: a margin for it (the container waits 2 s to print).
    counted = wallMs() + 500;
    await within(Promise.all(ends), lines * (every + 10) + 30_000, `both readers to see the followed container's last line`);
  } finally {
    reader.close();
    follower?.close();
  }
  await agent.clear();
  if (ours.length === 0 || theirs.length === 0) throw new Error(`${engine.label}: no line was counted (${early} came before the readers)`);
  const value = summarise(ours);
  const baseline = summarise(theirs);
  const engineShare: Summary = summarise(stamped.length > 0 ? stamped : [Number.NaN]);
  return [
    row({
      scenario: LOGS_SCENARIO,
      metric: `${engine.label}: follow, a line printed → read through GET /containerLogs?follow=true`,
      unit: 'ms',
      value,
      baseline: { name: `${engine.followerName}, on the same lines`, value: baseline },
      target: { text: 'p99 ≤ 100 ms', met: value.p99 <= 100 },
      note: `p99 ${fmt(value.p99)} ms, max ${fmt(value.max)} ms (the engine's own follower: p99 ${fmt(baseline.p99)} ms, max ${fmt(baseline.max)} ms); of that, print → the engine's stamp on the line (timestamps=true): median ${engineShare.median.toFixed(2)} ms, p99 ${engineShare.p99.toFixed(2)} ms. ${lines} lines, one every ${every} ms; the print time is the container's $EPOCHREALTIME, the receipt the reader's wall clock (both CLOCK_REALTIME of one kernel); the agent's reader is a Node http client in the agent's process${early > 0 ? `; ${early} lines printed before the readers were connected are not counted` : ''}`,
    }),
  ];
}
