import type { Clock } from '@kubelet-ts/core';

export interface AuthThrottleOptions {
  /** Failures an address may make before it is slowed down at all. Default 10 (typos, a stale token in a script). */
  readonly freeFailures?: number;
  /** The lockout after the first failure past the free ones; doubles with each further one. Default 1 s. */
  readonly firstLockoutMs?: number;
  /** The longest lockout. Default 60 s. */
  readonly maxLockoutMs?: number;
  /** An address that has not failed for this long is forgotten (its count starts again). Default 10 min. */
  readonly forgetAfterMs?: number;
  /** At most this many addresses are remembered; the one that failed longest ago goes first. Default 10,000. */
  readonly maxAddresses?: number;
}

interface Failures {
  count: number;
  last: number;
  lockedUntil: number;
}

/**
 * Slows down guessing of the bearer token, per remote address: after `freeFailures` failed
 * attempts, each further failure locks that address out for a time that doubles per failure up to
 * `maxLockoutMs`; while locked out, its requests that need authentication get 429 with
 * `Retry-After` and the token is not even compared (so a guess made then tells nothing). A success
 * forgets the address, and so does `forgetAfterMs` without failures.
 *
 * 429 rather than a delayed 401: a delay holds a socket open per guess, so a guesser with many
 * connections is barely slowed and the agent pays for it; a 429 costs nothing and bounds the
 * guesses per address to about one a minute. An address shared by many clients (NAT) shares its
 * lockout: a client with a valid certificate is not affected, as it needs no token.
 */
export class AuthThrottle {
  private readonly freeFailures: number;
  private readonly firstLockoutMs: number;
  private readonly maxLockoutMs: number;
  private readonly forgetAfterMs: number;
  private readonly maxAddresses: number;
  /** In order of the last failure (a Map keeps insertion order; a failure re-inserts). */
  private readonly failures = new Map<string, Failures>();

  constructor(
    private readonly clock: Clock,
    options: AuthThrottleOptions = {},
  ) {
    this.freeFailures = options.freeFailures ?? 10;
    this.firstLockoutMs = options.firstLockoutMs ?? 1000;
    this.maxLockoutMs = options.maxLockoutMs ?? 60_000;
    this.forgetAfterMs = options.forgetAfterMs ?? 600_000;
    this.maxAddresses = options.maxAddresses ?? 10_000;
  }

  /** Milliseconds `address` must still wait before it may try again; 0 when it may try now. */
  lockedFor(address: string): number {
    const entry = this.current(address);
    return entry === undefined ? 0 : Math.max(0, entry.lockedUntil - this.clock.now());
  }

  /** Records a failed attempt (a missing or wrong token). */
  failed(address: string): void {
    const now = this.clock.now();
    const entry = this.current(address) ?? { count: 0, last: now, lockedUntil: 0 };
    entry.count += 1;
    entry.last = now;
    const over = entry.count - this.freeFailures;
    if (over > 0) entry.lockedUntil = now + Math.min(this.maxLockoutMs, this.firstLockoutMs * 2 ** Math.min(over - 1, 30));
    this.failures.delete(address);
    this.failures.set(address, entry);
    this.prune(now);
  }

  /** A successful attempt: the address starts afresh. */
  succeeded(address: string): void {
    this.failures.delete(address);
  }

  /** How many addresses are remembered (for tests: it must stay bounded). */
  get size(): number {
    return this.failures.size;
  }

  private current(address: string): Failures | undefined {
    const entry = this.failures.get(address);
    if (entry !== undefined && this.clock.now() - entry.last >= this.forgetAfterMs) {
      this.failures.delete(address);
      return undefined;
    }
    return entry;
  }

  private prune(now: number): void {
    for (const [address, entry] of this.failures) {
      if (this.failures.size <= this.maxAddresses && now - entry.last < this.forgetAfterMs) break;
      this.failures.delete(address);
    }
  }
}
