import { ApiException } from '@kubernetes/client-node';

/** The HTTP status of an API server's refusal (`409` conflict, `404`, `410` gone), or undefined for a failure to reach it. */
export function apiStatus(error: unknown): number | undefined {
  return error instanceof ApiException ? error.code : undefined;
}

/**
 * Back-off between tries of one call to the API server: `initialMs` doubling to `maxMs`, each with up
 * to 20 % of jitter (so a fleet of nodes that lost the API server at once does not come back at
 * once); `wait` ends early when the caller closes.
 */
export class Retry {
  private delay: number;
  private waiting: { timer: NodeJS.Timeout; resolve: () => void } | undefined;

  constructor(
    private readonly initialMs: number,
    private readonly maxMs: number,
  ) {
    this.delay = initialMs;
  }

  /** The next delay, and doubles the one after. */
  next(): number {
    const now = Math.round(this.delay * (1 + Math.random() * 0.2));
    this.delay = Math.min(this.maxMs, this.delay * 2);
    return now;
  }

  reset(): void {
    this.delay = this.initialMs;
  }

  /** Waits `ms`, or less when `cancel` is called. */
  wait(ms: number, closed: () => boolean): Promise<void> {
    if (closed()) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiting = undefined;
        resolve();
      }, ms);
      this.waiting = { timer, resolve };
    });
  }

  cancel(): void {
    if (this.waiting === undefined) return;
    clearTimeout(this.waiting.timer);
    this.waiting.resolve();
    this.waiting = undefined;
  }
}
