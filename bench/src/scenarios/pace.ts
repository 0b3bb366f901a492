import { row, summarise, type Row } from '../stats.js';
import { hogNote } from './hog.js';

/** One throughput run: the agent's times, and the raw times at each concurrency tried in that run. */
export interface PaceRun {
  readonly agentUpMs: number;
  readonly agentDownMs: number;
  /** The agent's start concurrency when all its pods ran (its gauge), when known. */
  readonly agentPace?: number;
  /** How the agent's limit moved while its pods started (`BenchAgent.paceWhile`), when sampled. */
  readonly limits?: readonly number[];
  /** The bench process's CPU (user + system) while the agent, in it, started the pods. */
  readonly agentUpCpuMs?: number;
  /** By concurrency; `upCpuMs` is the bench process's CPU while the raw client started them. */
  readonly raw: ReadonlyMap<number, { readonly upMs: number; readonly downMs: number; readonly upCpuMs?: number }>;
}

/** A `process.cpuUsage(since)` difference in milliseconds. */
export const cpuMs = (usage: NodeJS.CpuUsage): number => (usage.user + usage.system) / 1000;

/**
 * Issue 14's pace: every run published, each against the best raw concurrency of that same run
 * (not the median over runs), so that a single slow run cannot hide behind two good ones.
 */
export function paceRows(engine: string, pods: number, runs: readonly PaceRun[], agentConcurrency: string, hog = false): Row[] {
  const rows: Row[] = [];
  runs.forEach((run, i) => {
    for (const [direction, agentMs, rawOf] of [
      ['up (empty → all running)', run.agentUpMs, (r: { upMs: number }) => r.upMs],
      ['down (all removed)', run.agentDownMs, (r: { downMs: number }) => r.downMs],
    ] as const) {
      const tried = [...run.raw].map(([concurrency, r]) => ({ concurrency, ms: rawOf(r) }));
      const moved = run.limits === undefined ? '' : `; its limit through the run: ${run.limits.join(' → ')}`;
      const pace = direction.startsWith('up') && run.agentPace !== undefined ? ` (${run.agentPace} pods at once when all ran${moved})` : '';
      const cpu =
        direction.startsWith('up') && run.agentUpCpuMs !== undefined
          ? `; the bench process's CPU while the agent started them ${Math.round(run.agentUpCpuMs)} ms, while raw did: ${tried
              .map((t) => `c${t.concurrency} ${Math.round(run.raw.get(t.concurrency)?.upCpuMs ?? Number.NaN)} ms`)
              .join(', ')}`
          : '';
      const best = tried.reduce((a, b) => (b.ms < a.ms ? b : a));
      rows.push(
        row({
          scenario: hog ? '9. pace under a CPU hog' : '9. pace',
          metric: `${engine}: ${pods} pods ${direction}, run ${i + 1} of ${runs.length}`,
          unit: 'ms',
          value: summarise([agentMs]),
          baseline: { name: `best raw of this run (concurrency ${best.concurrency})`, value: summarise([best.ms]) },
          target: { text: 'ratio ≤ 1.10, every run', met: agentMs / best.ms <= 1.1 },
          note: `${hog ? `${hogNote(true)}, agent and raw runs alike; ` : ''}raw by concurrency: ${tried.map((t) => `c${t.concurrency} ${Math.round(t.ms)} ms`).join(', ')}; the agent: ${agentConcurrency}${pace}${cpu}`,
        }),
      );
    }
  });
  return rows;
}
