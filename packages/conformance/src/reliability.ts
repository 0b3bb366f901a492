import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The knobs shared by the fuzz and chaos suites. CI runs them short with a seed of the day's
 * choosing; `npm run reliability` runs them long and collects their figures for docs/RELIABILITY.md.
 *
 * - `KUBELET_TS_RELIABILITY=long` selects the long run counts.
 * - `KUBELET_TS_SEED=<n>` replays one seed (every suite prints the seed it used).
 * - `KUBELET_TS_RELIABILITY_OUT=<dir>` makes suites write their figures there as `<suite>.json`.
 */
export interface ReliabilityCounts {
  /** Runs in CI and in a plain `npm test`. */
  readonly short: number;
  /** Runs under `npm run reliability`. */
  readonly long: number;
}

/** Whether this is the long reliability run (`KUBELET_TS_RELIABILITY=long`, `npm run reliability`) rather than CI's short one. */
export function isLongRun(): boolean {
  return process.env['KUBELET_TS_RELIABILITY'] === 'long';
}

/** How many inputs (or seeds) a suite tries in this run. */
export function reliabilityRuns(counts: ReliabilityCounts): number {
  return isLongRun() ? counts.long : counts.short;
}

/** The seed to use: `KUBELET_TS_SEED` when given (to replay a failure), else a fresh one. */
export function reliabilitySeed(): number {
  const given = process.env['KUBELET_TS_SEED'];
  if (given !== undefined && given !== '') {
    const seed = Number(given);
    if (!Number.isInteger(seed)) throw new Error(`KUBELET_TS_SEED must be an integer, got ${JSON.stringify(given)}`);
    return seed;
  }
  return Math.floor(Math.random() * 0x7fffffff);
}

/** Writes a suite's figures to `$KUBELET_TS_RELIABILITY_OUT/<suite>.json`; does nothing without it. */
export function recordFigures(suite: string, figures: Record<string, unknown>): void {
  const dir = process.env['KUBELET_TS_RELIABILITY_OUT'];
  if (dir === undefined || dir === '') return;
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${suite}.json`), `${JSON.stringify({ suite, long: isLongRun(), ...figures }, null, 2)}\n`);
}
