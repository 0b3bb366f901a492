import { fork, type ChildProcess } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { AGENT_NODE_FLAGS } from './fixtures.js';
import { within, type LogsPod } from './logs-agent.js';
import type { LogsEngine } from './logs-engines.js';

// The agent in a process of its own: logs-agent-child.ts (the agent with its runtime and its real
// HTTP server, which serves /exec and /portForward too), compiled, whether this module runs from
// dist/ (npm run bench) or src/ (jest).
const CHILD = fileURLToPath(new URL('../../dist/scenarios/logs-agent-child.js', import.meta.url));
// Run in the child first, with `--expose-gc`: a full GC when asked (streams-gc-hook.ts).
const GC_HOOK = new URL('../../dist/scenarios/streams-gc-hook.js', import.meta.url).href;

/** What the agent's process holds at one moment: resident memory (bytes), open file descriptors, CPU used so far (s). */
export interface ProcessSample {
  readonly rss: number;
  readonly fds: number;
  readonly cpu: number;
}

/** The agent, running one pod, in a child process whose RSS and descriptors can be read. */
export interface StreamsAgent {
  /** Its server's base URL. */
  readonly url: string;
  /** Its RSS and open descriptors now (from /proc). */
  sample(): Promise<ProcessSample>;
  /** What V8 holds in it now, as a note shows it: heap used and buffers, in MB. */
  heap(): Promise<string>;
  /** A full GC in it, then its RSS and descriptors: what it retains. */
  collected(): Promise<ProcessSample>;
  /** Asks it to remove its pod and exit (60 s at most), then kills it; safe to call twice. */
  stop(): Promise<void>;
}

/** Starts the agent child on `pod` with the engine's runtime (the agent's defaults); resolves once the pod runs. */
export async function startStreamsAgent(engine: LogsEngine, pod: LogsPod): Promise<StreamsAgent> {
  // `flood` is the logs scenario's name for the runtime at the agent's defaults (Docker's log rotation as shipped).
  const config = JSON.stringify({ agent: { runtime: engine.runtime('flood'), node: engine.node }, pod });
  // A process group of its own: a Ctrl-C of the bench reaches the bench alone, and the child, seeing
  // its parent gone, removes its pod before it exits (logs-agent-child.ts).
  const child = fork(CHILD, [config], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    detached: true,
    execArgv: [...AGENT_NODE_FLAGS, '--expose-gc', '--import', GC_HOOK],
  });
  const stop = () => stopChild(child);
  try {
    const url = await within(
      new Promise<string>((resolve, reject) => {
        child.on('message', (m) => {
          if (typeof m === 'object' && m !== null && 'url' in m) resolve(String(m.url));
        });
        child.on('error', reject);
        child.on('exit', (code) => reject(new Error(`the agent child exited with ${code} before its pod ran`)));
      }),
      150_000,
      'the agent child to run its pod',
    );
    return { url, sample: () => sampleOf(child), heap: () => heapOf(child), collected: () => collectedOf(child), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  if (child.connected) child.send('stop');
  await within(exited, 60_000, 'the agent child to stop').catch(() => {
    child.kill('SIGKILL');
  });
}

/** Sends `message` to the child and resolves with the `key` of its first answer that has one (10 s at most). */
function ask<T>(child: ChildProcess, message: string, key: string, what: string): Promise<T> {
  return within(
    new Promise<T>((resolve) => {
      const answer = (m: unknown) => {
        if (typeof m !== 'object' || m === null || !(key in m)) return;
        child.off('message', answer);
        resolve((m as Record<string, T>)[key]!);
      };
      child.on('message', answer);
      child.send(message);
    }),
    10_000,
    `the agent child to ${what}`,
  );
}

/** Asks the child for a full GC (streams-gc-hook.ts), then samples it. */
async function collectedOf(child: ChildProcess): Promise<ProcessSample> {
  await ask(child, 'gc', 'gc', 'collect its garbage');
  return sampleOf(child);
}

/** The child's `process.memoryUsage()` (logs-agent-child.ts answers `memory`), as a note shows it. */
async function heapOf(child: ChildProcess): Promise<string> {
  const memory = await ask<NodeJS.MemoryUsage>(child, 'memory', 'memory', 'say its memory');
  const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
  return `heap ${mb(memory.heapUsed)} of ${mb(memory.heapTotal)} MB, buffers ${mb(memory.arrayBuffers)} MB`;
}

async function sampleOf(child: ChildProcess): Promise<ProcessSample> {
  if (child.exitCode !== null || child.signalCode !== null)
    throw new Error(`the agent child ended (${child.exitCode ?? child.signalCode}) while it was measured`);
  const [status, stat, fds] = await Promise.all([
    readFile(`/proc/${child.pid}/status`, 'utf8'),
    readFile(`/proc/${child.pid}/stat`, 'utf8'),
    readdir(`/proc/${child.pid}/fd`),
  ]);
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(status);
  if (kb === null) throw new Error(`no VmRSS in /proc/${child.pid}/status`);
  // After the command (which may hold spaces), utime and stime are fields 14 and 15, in USER_HZ (100).
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { rss: Number(kb[1]) * 1024, fds: fds.length, cpu: (Number(fields[11]) + Number(fields[12])) / 100 };
}

/** Samples the agent every `everyMs` until `stop()`, which gives the samples, the last taken then. */
export function sampler(agent: StreamsAgent, everyMs = 100): { stop(): Promise<ProcessSample[]> } {
  const samples: ProcessSample[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      samples.push(await agent.sample());
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      samples.push(await agent.sample());
      return samples;
    },
  };
}

/** The highest RSS and the most descriptors among `samples` (not necessarily of one sample), with the last one's CPU. */
export function peakOf(samples: readonly ProcessSample[]): ProcessSample {
  return { rss: Math.max(...samples.map((s) => s.rss)), fds: Math.max(...samples.map((s) => s.fds)), cpu: samples.at(-1)?.cpu ?? 0 };
}

/**
 * The host pid of the process a container runs as `sh -c '<script>'` whose script holds `marker`:
 * a way into the pod's network namespace (`nsenter --target`) on either engine. (The agent child's
 * own command line holds the marker too, in its JSON: it is not an `sh`.)
 */
export async function podProcess(marker: string): Promise<number> {
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const argv = await readFile(`/proc/${entry}/cmdline`, 'utf8').then(
      (s) => s.split('\0'),
      () => [],
    );
    if (argv[0] === 'sh' && argv[1] === '-c' && argv[2]?.includes(marker) === true) return Number(entry);
  }
  throw new Error(`no process runs the pod's script (marked ${marker})`);
}
