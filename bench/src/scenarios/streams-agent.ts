import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { ask, heapOf, sampleOf, startAgentProcess, stopAgentProcess, type ProcessSample } from './agent-process.js';
import type { LogsPod } from './logs-agent.js';
import type { LogsEngine } from './logs-engines.js';

export type { ProcessSample } from './agent-process.js';

// The agent in a process of its own: logs-agent-child.ts (the agent with its runtime and its real
// HTTP server, which serves /exec and /portForward too), compiled, whether this module runs from
// dist/ (npm run bench) or src/ (jest).
const CHILD = fileURLToPath(new URL('../../dist/scenarios/logs-agent-child.js', import.meta.url));
// Run in the child first, with `--expose-gc`: a full GC when asked (streams-gc-hook.ts).
const GC_HOOK = new URL('../../dist/scenarios/streams-gc-hook.js', import.meta.url).href;

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
  /** How many processes it runs now (its children: on Docker, its port-forward helpers). */
  children(): Promise<number>;
  /** Asks it to remove its pod and exit (60 s at most), then kills it; safe to call twice. */
  stop(): Promise<void>;
}

/** Starts the agent child on `pod` with the engine's runtime (the agent's defaults); resolves once the pod runs. */
export async function startStreamsAgent(engine: LogsEngine, pod: LogsPod): Promise<StreamsAgent> {
  // `flood` is the logs scenario's name for the runtime at the agent's defaults (Docker's log rotation as shipped).
  const { child, url } = await startAgentProcess(
    CHILD,
    { agent: { runtime: engine.runtime('flood'), node: engine.node }, pod },
    { detached: true, execArgv: ['--expose-gc', '--import', GC_HOOK] },
  );
  return {
    url,
    sample: () => sampleOf(child),
    heap: () => heapOf(child),
    children: () => childrenOf(child.pid ?? 0),
    collected: async () => {
      await ask(child, 'gc', 'gc', 'collect its garbage');
      return sampleOf(child);
    },
    stop: () => stopAgentProcess(child),
  };
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

/** How many processes have `pid` as their parent now. */
export async function childrenOf(pid: number): Promise<number> {
  let found = 0;
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    // pid (comm) state ppid …: comm may hold spaces, so read after its closing parenthesis.
    if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) found++;
  }
  return found;
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
