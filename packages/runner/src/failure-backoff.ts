import { backoffDelay, type BackoffPolicy } from '@kubelet-ts/core';

interface Entry {
  readonly failures: number;
  /** When the failure was recorded. */
  readonly at: number;
  readonly until: number;
  readonly detail?: string;
  reported: boolean;
}

/**
 * Per-key back-off after failures (an image whose pull fails, a container the engine refuses to
 * start): the next try waits `policy.initialMs`, doubling per consecutive failure up to the cap,
 * and a success forgets the key.
 */
export class FailureBackoff {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly policy: BackoffPolicy) {}

  /**
   * While `key` backs off: how long is left, and whether this is the first time anyone asked since
   * the failure (so the back-off is reported once). Undefined when a try may go ahead.
   */
  waiting(key: string, now: number): { readonly leftMs: number; readonly first: boolean } | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined || now >= entry.until) return undefined;
    const first = !entry.reported;
    entry.reported = true;
    return { leftMs: entry.until - now, first };
  }

  /**
   * While `key` backs off: until when, what the failure said, and whether a try has since been
   * held back by it (`waiting` said so) at least `heldAfterMs` after the failure; read only (it
   * reports nothing).
   */
  peek(
    key: string,
    now: number,
    heldAfterMs = 0,
  ): { readonly until: number; readonly detail?: string; readonly heldBack: boolean } | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined || now >= entry.until) return undefined;
    return {
      until: entry.until,
      ...(entry.detail === undefined ? {} : { detail: entry.detail }),
      heldBack: entry.reported && now >= entry.at + heldAfterMs,
    };
  }

  /** The state a try began from; pass it to `failed` so that concurrent tries count one failure. */
  snapshot(key: string): object | undefined {
    return this.entries.get(key);
  }

  /** Records a failed try that began from `since` (and what it said); returns the delay before the next one. */
  failed(key: string, now: number, since: object | undefined = this.entries.get(key), detail?: string): number {
    const current = this.entries.get(key);
    const failures = ((since as Entry | undefined)?.failures ?? 0) + 1;
    const delay = backoffDelay(failures, this.policy);
    if (current === since)
      this.entries.set(key, { failures, at: now, until: now + delay, ...(detail === undefined ? {} : { detail }), reported: false });
    return delay;
  }

  succeeded(key: string): void {
    this.entries.delete(key);
  }
}
