import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { row, summarise, type Row } from '../stats.js';
import { heapOf, sampleOf, startAgentProcess, stopAgentProcess } from './agent-process.js';
import type { LogsPod } from './logs-agent.js';
import { LOGS_SCENARIO, type LogsEngine, type LogsSizes } from './logs-engines.js';
import { openRead, type OpenRead } from './logs-readers.js';

// The compiled child, whether this module runs from dist/ (npm run bench) or src/ (jest).
const CHILD = fileURLToPath(new URL('../../dist/scenarios/logs-agent-child.js', import.meta.url));
const pause = (msec: number) => new Promise((r) => setTimeout(r, msec));
const mb = (bytes: number) => bytes / 1024 / 1024;

const rss = async (child: ChildProcess) => (await sampleOf(child)).rss;
const cpuSeconds = async (child: ChildProcess) => (await sampleOf(child)).cpu;

/** The child's RSS every 250 ms for `seconds`: the samples, in bytes. */
async function sample(child: ChildProcess, seconds: number): Promise<number[]> {
  const samples: number[] = [];
  const end = Date.now() + seconds * 1000;
  while (Date.now() < end) {
    samples.push(await rss(child));
    await pause(250);
  }
  samples.push(await rss(child));
  return samples;
}

/** The largest of `samples` less `before`, in MB, and the trajectory for the note. */
function growth(before: number, samples: readonly number[]): { growthMb: number; trajectory: string } {
  const peak = Math.max(...samples);
  const at = (q: number) => samples[Math.min(samples.length - 1, Math.floor(q * (samples.length - 1)))]!;
  const trajectory = [0.25, 0.5, 0.75, 1].map((q) => `${mb(at(q)).toFixed(1)}`).join(' → ');
  return {
    growthMb: mb(peak - before),
    trajectory: `${mb(before).toFixed(1)} MB before; at ¼, ½, ¾ and the end: ${trajectory} MB; peak ${mb(peak).toFixed(1)} MB`,
  };
}

/**
 * The agent's RSS while readers follow a container that prints as fast as it can: the agent (the
 * in-process scenario's, with the output kept as `LogsEngine.keeping.flood` says) runs in a
 * child process. After a warm-up follower: the agent with no reader (the control), then one reader
 * that opens the container's whole log, follows, and reads nothing (its socket paused), each for
 * `pausedSeconds`; then `readers` readers follow from the end (`tailLines=0`) and read all they get.
 */
export async function logsRss(engine: LogsEngine, sizes: LogsSizes): Promise<Row[]> {
  const LINE = 'x'.repeat(99);
  const pod: LogsPod = { id: 'logs-rss', image: engine.image, command: ['sh', '-c', `trap "exit 0" TERM; yes ${LINE} & wait`] };
  const { child, url } = await startAgentProcess(CHILD, { agent: { runtime: engine.runtime('flood'), node: engine.node }, pod });
  const readers: OpenRead[] = [];
  try {
    const logs = (query: string) => `${url}/containerLogs/default/${pod.id}/c0?${query}`;
    // Warmed up (the log route's code loaded and compiled by one follower that reads for a second),
    // then settled: what is measured after is what readers cost, not the agent's first request.
    const warm = await openRead(logs('follow=true&tailLines=0'));
    readers.push(warm);
    await pause(1000);
    warm.close();
    await pause(sizes.settleSeconds * 1000);
    // 1. The control: the agent with the pod printing and no reader, as long as the stalled reader below.
    const idle = await rss(child);
    let cpu = await cpuSeconds(child);
    const idleSamples = await sample(child, sizes.pausedSeconds);
    const idleCpu = (await cpuSeconds(child)) - cpu;
    const quiet = growth(idle, idleSamples);

    // 2. One reader that stops reading: the socket's buffers fill, and the agent must stop reading the engine.
    const start = idleSamples.at(-1)!;
    cpu = await cpuSeconds(child);
    const stalled = await openRead(logs('follow=true'), { paused: true });
    readers.push(stalled);
    const stalledSamples = await sample(child, sizes.pausedSeconds);
    const stalledCpu = (await cpuSeconds(child)) - cpu;
    const taken = stalled.bytes();
    stalled.close();
    const paused = growth(start, stalledSamples);

    // 3. `readers` readers that read all they get, from the end on.
    await pause(1000);
    const before = await rss(child);
    const heapBefore = await heapOf(child);
    for (let i = 0; i < sizes.readers; i++) readers.push(await openRead(logs('follow=true&tailLines=0')));
    const following = readers.slice(2);
    const t = Date.now();
    cpu = await cpuSeconds(child);
    const samples = await sample(child, sizes.followSeconds);
    const followCpu = (await cpuSeconds(child)) - cpu;
    const seconds = (Date.now() - t) / 1000;
    const delivered = following.reduce((sum, r) => sum + r.bytes(), 0);
    const heapAfter = await heapOf(child);
    for (const r of following) r.close();
    const followed = growth(before, samples);
    const alive = following.filter((r) => r.bytes() > 0).length;
    return [
      row({
        scenario: LOGS_SCENARIO,
        metric: `${engine.label}: agent RSS growth, ${sizes.readers} readers following a container that prints as fast as it can, ${sizes.followSeconds} s`,
        unit: 'MB',
        value: summarise([followed.growthMb]),
        target: { text: '≤ 20 MB', met: followed.growthMb <= 20 && alive === sizes.readers },
        note: `the agent alone in a process of its own (logs-agent-child.ts: the same agent and server); the output kept as ${engine.keeping.flood}; VmRSS every 250 ms: ${followed.trajectory}; its CPU ${((100 * followCpu) / seconds).toFixed(0)} % of a core; V8 before: ${heapBefore}, at the end: ${heapAfter}; the readers (Node http clients in the bench's process, \`follow=true&tailLines=0\`) got ${(delivered / 1e6).toFixed(0)} MB in ${seconds.toFixed(0)} s, ${(delivered / 1e6 / seconds).toFixed(1)} MB/s in all${alive === sizes.readers ? '' : `; **only ${alive} of the readers got anything**`}`,
      }),
      row({
        scenario: LOGS_SCENARIO,
        metric: `${engine.label}: agent RSS growth, one reader that stopped reading (socket paused), ${sizes.pausedSeconds} s`,
        unit: 'MB',
        value: summarise([paused.growthMb]),
        // What the agent does meanwhile with no reader (on CRI it rotates and gzips the flood) is the control's.
        target: { text: '≤ 5 MB over the control (no reader)', met: paused.growthMb <= quiet.growthMb + 5 },
        note: `the reader asked for the whole log with follow=true and read nothing after the headers, while the container printed on; its process took ${(taken / 1024).toFixed(0)} KiB off the socket (beyond that, loopback's socket buffers hold what the agent wrote) before the agent was held back. ${paused.trajectory}; the agent's CPU meanwhile ${stalledCpu.toFixed(2)} s. The control, the same time just before with no reader (after one follower had read for a second, and ${sizes.settleSeconds} s): growth ${quiet.growthMb.toFixed(1)} MB (${quiet.trajectory}), CPU ${idleCpu.toFixed(2)} s`,
      }),
    ];
  } finally {
    for (const r of readers) r.close();
    await stopAgentProcess(child);
    await engine.removePods();
  }
}
