import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { row, summarise, type Row } from '../stats.js';
import { within } from './logs-agent.js';
import { sampler, type ProcessSample, type StreamsAgent } from './streams-agent.js';
import { CLOSE_WAIT_MS, directTransfer, forwardDownload, forwardUpload } from './streams-clients.js';

// The do-nothing WebSocket server of the client's ceiling, compiled, from dist/ or src/ (jest).
const CEILING = fileURLToPath(new URL('../../dist/scenarios/streams-ceiling-child.js', import.meta.url));

/** What the port-forward rows are told: the agent, its route, the pod's servers and how to enter the pod's namespace. */
export interface Throughput {
  readonly scenario: string;
  readonly label: string;
  /** How the agent reaches the pod's port on this engine, for the notes. */
  readonly how: string;
  readonly agent: StreamsAgent;
  /** `/portForward` of one of the pod's ports. */
  readonly forwardUrl: (port: number) => string;
  /** The pod's port that sends `megabytes` MB and closes, and the one that reads them and says `ok`. */
  readonly ports: { readonly download: number; readonly upload: number };
  /** A process in the pod's network namespace. */
  readonly podPid: number;
  readonly megabytes: number;
  readonly runs: number;
}

type Mode = 'download' | 'upload';
const MODES: readonly Mode[] = ['download', 'upload'];
const mib = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
const fmt = (n: number) => (n >= 100 ? n.toFixed(0) : n.toFixed(1));
const times = (n: number) => `${n} run${n === 1 ? '' : 's'}`;

/** The do-nothing server of the ceiling, in a process of its own: its URL for a port; `stop` ends it. */
async function startCeiling(bytes: number): Promise<{ url: (port: number) => string; stop: () => void }> {
  const child = fork(CEILING, [String(bytes)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const stop = () => void child.kill();
  try {
    const port = await within(
      new Promise<number>((resolve, reject) => {
        child.once('message', (m) => resolve((m as { port: number }).port));
        child.once('exit', (code) => reject(new Error(`the ceiling's server exited with ${code}`)));
      }),
      10_000,
      "the ceiling's server to listen",
    );
    return { url: (p) => `ws://127.0.0.1:${port}/portForward/default/none?ports=${p}`, stop };
  } catch (error) {
    stop();
    throw error;
  }
}

/**
 * Port-forward throughput both ways: `megabytes` MB through the agent's `/portForward` (the bench's
 * `ws` client) against the same transfer on a TCP connection to the same port in the pod's network
 * namespace (the direct baseline), runs alternating; the agent's RSS and CPU meanwhile; whether the
 * agent closed each download's socket once the pod's server closed; and, for the notes, the same
 * client against a WebSocket server that relays nothing (what the client and `ws` allow at most).
 */
export async function portForwardThroughput(t: Throughput): Promise<Row[]> {
  const bytes = t.megabytes * 1e6;
  const mbps = (ms: number) => bytes / 1e6 / (ms / 1000);
  const once = async (mode: Mode, url: string): Promise<{ ms: number; closedAfterMs?: number | undefined }> =>
    mode === 'upload' ? { ms: await forwardUpload(url, bytes) } : forwardDownload(url, bytes);
  const direct = (mode: Mode) => directTransfer(t.podPid, t.ports[mode], mode, bytes);
  const ceiling = await startCeiling(bytes);
  try {
    // One of each first, untimed (and until the pod's servers listen).
    for (const mode of MODES) {
      await eventually(() => direct(mode), 10);
      await once(mode, t.forwardUrl(t.ports[mode]));
      await once(mode, ceiling.url(t.ports[mode]));
    }
    // RSS is read after a full GC in the agent (what it retains), before and after each transfer,
    // and every 100 ms during one, as it comes (what it holds then, garbage and all).
    const start = await t.agent.collected();
    const heapAtStart = await t.agent.heap();
    const during: ProcessSample[] = [];
    const retained: ProcessSample[] = [];
    const measured = Object.fromEntries(MODES.map((m) => [m, { ours: [] as number[], direct: [] as number[], ceiling: [] as number[] }]));
    let cpu = 0;
    // ms after the last byte at which the agent closed each timed download's socket (undefined: it did not).
    const closes: Array<number | undefined> = [];
    const viaAgent = async (mode: Mode) => {
      const sampling = sampler(t.agent);
      try {
        const done = await once(mode, t.forwardUrl(t.ports[mode]));
        if (mode === 'download') closes.push(done.closedAfterMs);
        return mbps(done.ms);
      } finally {
        const samples = await sampling.stop();
        during.push(...samples);
        cpu += samples.at(-1)!.cpu - samples[0]!.cpu;
        retained.push(await t.agent.collected());
      }
    };
    for (let run = 0; run < t.runs; run++) {
      for (const mode of MODES) {
        const m = measured[mode]!;
        // Who goes first alternates, so that drift over the run favours neither.
        if (run % 2 === 0) {
          m.ours.push(await viaAgent(mode));
          m.direct.push(mbps(await direct(mode)));
        } else {
          m.direct.push(mbps(await direct(mode)));
          m.ours.push(await viaAgent(mode));
        }
        m.ceiling.push(mbps((await once(mode, ceiling.url(t.ports[mode]))).ms));
      }
    }
    const end = retained.at(-1)!;
    const heapAtEnd = await t.agent.heap();
    const peak = Math.max(...during.map((s) => s.rss));
    // Even after a full GC the RSS swings by tens of MB between readings (native memory the
    // allocator keeps; V8's heap and buffers stay flat): what grows with the bytes lifts its floor.
    const floor = Math.min(...retained.slice(Math.floor(retained.length / 2)).map((s) => s.rss));
    const growth = (floor - start.rss) / 1024 / 1024;
    const relayed = 2 * t.runs * bytes;
    const closed = closes.filter((c): c is number => c !== undefined);
    const transfer = (mode: Mode, what: string) => {
      const m = measured[mode]!;
      const value = summarise(m.ours);
      const baseline = summarise(m.direct);
      return row({
        scenario: t.scenario,
        metric: `${t.label}: port-forward ${mode}, ${t.megabytes} MB through the agent's /portForward (WebSocket, v4)`,
        unit: 'MB/s',
        value,
        baseline: {
          name: "a TCP connection to the same port on loopback in the pod's network namespace (nsenter), no hop",
          value: baseline,
        },
        target: { text: 'ratio ≥ 0.8', met: value.median / baseline.median >= 0.8 },
        note: `${what}; timed from opening the socket (the handshake and the agent's connection to the port inside) to the end, the direct client from its connect; ${times(t.runs)} each, alternating, after one untimed of each; ${t.how}; the direct client is Node in a process of its own, in the pod's namespace (this machine's rule: no dialling of a container's bridge address). The same client against a WebSocket server that relays nothing (\`ws\`, a process of its own, 64 KiB messages): ${fmt(summarise(m.ceiling).median)} MB/s, the most this client allows here`,
      });
    };
    return [
      transfer(
        'download',
        `the pod sends ${t.megabytes} MB (busybox \`dd\` from /dev/zero, 1 MB writes) and closes; timed to the last byte`,
      ),
      transfer(
        'upload',
        `the client sends ${t.megabytes} MB (1 MB messages, 8 at most unwritten) and waits for the sink's \`ok\` (busybox \`dd\` reading them all to /dev/null)`,
      ),
      row({
        scenario: t.scenario,
        metric: `${t.label}: port-forward, the pod's server closed the connection → the agent closed the socket, of ${closes.length} timed downloads`,
        unit: 'closed',
        value: summarise([closed.length]),
        target: { text: `every one, within ${CLOSE_WAIT_MS / 1000} s`, met: closed.length === closes.length },
        note:
          closed.length === 0
            ? `none closed within ${CLOSE_WAIT_MS / 1000} s of the last byte (the client then closed it): a client that reads to the end (curl over a forwarded connection) would wait forever`
            : `closed ${closed.map((c) => `${fmt(c)} ms`).join(', ')} after the last byte`,
      }),
      row({
        scenario: t.scenario,
        metric: `${t.label}: agent RSS after relaying ${(relayed / 1e6).toLocaleString('en')} MB through /portForward, over the start (after a full GC, the lowest of the later half of the transfers)`,
        unit: 'MB',
        value: summarise([growth]),
        target: { text: '≤ 5 MB, whatever the bytes', met: growth <= 5 },
        note: `the agent in a process of its own (with --expose-gc, collecting only when the bench asks, between transfers); VmRSS after a full GC: ${mib(start.rss)} MB at the start, then after each transfer (${MODES.join(', ')}, …): ${retained.map((s) => mib(s.rss)).join(' → ')} MB; while relaying (every 100 ms, garbage and all): peak ${mib(peak)} MB, ${mib(peak - start.rss)} MB over the start; open descriptors ${start.fds} → ${end.fds}; its CPU ${cpu.toFixed(1)} s in all, ${((cpu / (relayed / 1e6)) * 1000).toFixed(1)} ms per MB relayed; V8 at the start: ${heapAtStart}, at the end: ${heapAtEnd}. After a GC the RSS still swings by tens of MB between readings (memory the allocator keeps): the value is the floor of the later half, which what grows with the bytes would lift`,
      }),
    ];
  } finally {
    ceiling.stop();
  }
}

/** Retries `work` for up to `seconds` (the pod's servers start just after its container does). */
export async function eventually<T>(work: () => Promise<T>, seconds: number): Promise<T> {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    try {
      return await work();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}
