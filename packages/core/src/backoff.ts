/** An exponential back-off: the first delay, doubled per attempt, never more than the cap. */
export interface BackoffPolicy {
  readonly initialMs: number;
  readonly maxMs: number;
  /**
   * The part of each delay taken off at random, 0 to 1 (default 0, the delay exactly): clients that
   * failed at the same moment (their server restarted) come back spread out, not in step. 0.5:
   * each wait is between half the delay and all of it; the cap stays the cap.
   */
  readonly jitter?: number;
}

/**
 * Doubling stops here: `initialMs × 2^30` outgrows any sensible cap, and a bounded exponent keeps
 * a long outage's thousandth attempt from computing `Infinity` (or `0 × Infinity`, NaN).
 */
const MAX_DOUBLINGS = 30;

/**
 * The delay before try number `attempt` after failures: attempt 1 waits `initialMs`, each further
 * attempt twice the one before, capped at `maxMs`. An attempt below 1 counts as the first. The one
 * formula behind every back-off of the agent (crash restarts, image pulls, source restarts, etcd
 * retries). With a `jitter`, `random` (numbers in [0, 1)) takes part of it off.
 */
export function backoffDelay(attempt: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  const doublings = Math.min(Math.max(attempt, 1) - 1, MAX_DOUBLINGS);
  const delay = Math.min(policy.maxMs, policy.initialMs * 2 ** doublings);
  const jitter = Math.min(1, Math.max(0, policy.jitter ?? 0));
  return jitter === 0 ? delay : Math.round(delay * (1 - jitter * random()));
}

/** `backoffDelay` with the attempts counted: for a loop that retries until something works. */
export class Backoff {
  private attempt = 0;
  private readonly policy: BackoffPolicy;

  constructor(initialMs: number, maxMs: number) {
    this.policy = { initialMs, maxMs };
  }

  /** The delay before the next try, and counts the try. */
  next(): number {
    this.attempt += 1;
    return backoffDelay(this.attempt, this.policy);
  }

  /** After a success: the next failure waits `initialMs` again. */
  reset(): void {
    this.attempt = 0;
  }

  /** Tries counted since the last reset. */
  get attempts(): number {
    return this.attempt;
  }
}
