import { isIPv4, isIPv6 } from 'node:net';
import type { Clock } from '@kubelet-ts/core';

/** How `AuthThrottle` slows an address that keeps failing to authenticate: free failures, then a doubling lockout. */
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
 * Slows down guessing of the bearer token, per network a request comes from (`networkOf`: all of
 * loopback is one, an IPv6 /64 is one, an IPv4 address is one): after `freeFailures` failed
 * attempts, each further failure locks that network out for a time that doubles per failure up to
 * `maxLockoutMs`, and its wrong tokens get 429 with `Retry-After`. Only `forgetAfterMs` without
 * failures forgets a network: a success does not, so a guesser cannot wipe its count by
 * interleaving the requests of a valid caller beside it.
 *
 * A valid token is let in even while its network is locked out: otherwise anyone who shares the
 * network (any process on the host, for loopback) could lock the valid callers out. The price is
 * that a locked-out guesser still learns whether a guess was right, so what makes guessing hopeless
 * is the token's length (the CLI warns below 32 characters); this bounds the work and the noise.
 * A client with a valid certificate is never counted, as it needs no token.
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

  /** Milliseconds the network of `address` must still wait before its wrong tokens get a 401 again; 0 when not locked out. */
  lockedFor(address: string): number {
    const entry = this.current(networkOf(address));
    return entry === undefined ? 0 : Math.max(0, entry.lockedUntil - this.clock.now());
  }

  /** Records a failed attempt (a missing or wrong token) against the network of `address`. */
  failed(address: string): void {
    const network = networkOf(address);
    const now = this.clock.now();
    const entry = this.current(network) ?? { count: 0, last: now, lockedUntil: 0 };
    entry.count += 1;
    entry.last = now;
    const over = entry.count - this.freeFailures;
    if (over > 0) entry.lockedUntil = now + Math.min(this.maxLockoutMs, this.firstLockoutMs * 2 ** Math.min(over - 1, 30));
    this.failures.delete(network);
    this.failures.set(network, entry);
    this.prune(now);
  }

  /** How many networks are remembered (for tests: it must stay bounded). */
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

/**
 * The unit a guesser is counted by: one address of IPv4 (an IPv4-mapped IPv6 address is its IPv4
 * one), one /64 of IPv6 (what one host is usually given), and all of loopback together (127.0.0.0/8
 * and ::1 are the same host, whose 16 million loopback addresses would otherwise each get an
 * allowance of their own). Anything else (a Unix socket's empty address) is itself.
 */
export function networkOf(address: string): string {
  const v4 = address.toLowerCase().startsWith('::ffff:') && isIPv4(address.slice(7)) ? address.slice(7) : address;
  if (isIPv4(v4)) return v4.startsWith('127.') ? 'loopback' : v4;
  if (!isIPv6(v4)) return v4;
  const groups = expandIPv6(v4);
  if (groups.slice(0, 7).every((g) => g === 0) && groups[7] === 1) return 'loopback';
  return `${groups
    .slice(0, 4)
    .map((g) => g.toString(16))
    .join(':')}::/64`;
}

/** The eight 16-bit groups of a valid IPv6 address (a zone index dropped, a trailing IPv4 part read). */
function expandIPv6(address: string): number[] {
  let text = address.split('%')[0]!;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4 !== null) {
    const [a, b, c, d] = v4[1]!.split('.').map(Number) as [number, number, number, number];
    text = `${text.slice(0, -v4[1]!.length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const zeros = tail === undefined ? [] : Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...zeros, ...right].map((g) => Number.parseInt(g, 16));
}
