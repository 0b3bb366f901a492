import {
  Backoff,
  toKubeletError,
  type Clock,
  type ContainerEvent,
  type ContainerEventSource,
  type Logger,
  type TimerHandle,
} from '@kubelet-ts/core';
import type { Inbox } from './inbox.js';

export interface RuntimeWatchOptions {
  readonly runtime: ContainerEventSource & { readonly name: string };
  readonly clock: Clock;
  readonly logger: Logger;
  /** The agent's pod an event is about, or undefined when the container is not the agent's. */
  readonly podOf: (event: ContainerEvent) => string | undefined;
  /**
   * Told each event with its pod (`runtime-event`), each break of the stream (`event-stream-lost`)
   * and each reconnection after one (`event-stream-reconnected`: events may have been missed).
   */
  readonly inbox: Inbox;
  /** Reconnection back-off. Default 100 ms doubling to 10 s. */
  readonly backoff?: { readonly initialMs: number; readonly maxMs: number };
  /** A connection that lasted this long resets the back-off. Default 10 s. */
  readonly healthyAfterMs?: number;
}

/**
 * Follows the runtime's container events, so the agent reacts to an exit in milliseconds rather
 * than at its next relist (the modern kubelet's evented PLEG). Each event goes to the inbox with
 * the agent's pod it is about (the inbox asks for a pass of that pod on an exit or a removal). The
 * stream is reconnected with back-off when it ends or fails, and every reconnection is told, since
 * events were missed in between; the periodic full pass stays the safety net.
 */
export class RuntimeWatch {
  private readonly abort = new AbortController();
  private readonly backoff: Backoff;
  private timer: TimerHandle | undefined;
  private wake: (() => void) | undefined;
  private loop: Promise<void> | undefined;
  private since: number | undefined;

  constructor(private readonly options: RuntimeWatchOptions) {
    const policy = options.backoff ?? { initialMs: 100, maxMs: 10_000 };
    this.backoff = new Backoff(policy.initialMs, policy.maxMs);
  }

  start(): void {
    this.loop ??= this.run();
  }

  /**
   * When the stream now flowing was opened; undefined while there is none (not yet, or lost and
   * waiting to reconnect). A relist that began after it, followed by this stream's events, sees
   * every change: the agent may then plan from its pod cache without listing the host again.
   */
  get streamingSince(): number | undefined {
    return this.since;
  }

  /** Aborts the stream and any pending reconnection; resolves once the watch has let go. */
  async close(): Promise<void> {
    this.abort.abort();
    if (this.timer !== undefined) this.options.clock.clearTimeout(this.timer);
    this.wake?.();
    await this.loop;
  }

  private async run(): Promise<void> {
    const { clock, logger, runtime } = this.options;
    const signal = this.abort.signal;
    let first = true;
    while (!signal.aborted) {
      const connectedAt = clock.now();
      if (!first) {
        logger.info({ runtime: runtime.name, attempt: this.backoff.attempts }, 'runtime event stream reconnected; relisting once');
        this.options.inbox.post({ type: 'event-stream-reconnected' });
      }
      first = false;
      let failure: unknown;
      this.since = connectedAt;
      try {
        for await (const event of runtime.events(signal)) this.handle(event);
      } catch (error) {
        failure = error;
      }
      this.since = undefined;
      if (signal.aborted) return;
      if (clock.now() - connectedAt >= (this.options.healthyAfterMs ?? 10_000)) this.backoff.reset();
      // Warned once per outage: the retries of an engine that stays away are debug lines.
      const level = this.backoff.attempts === 0 ? 'warn' : 'debug';
      const delay = this.backoff.next();
      const e = failure === undefined ? undefined : toKubeletError(failure, runtime.name);
      logger[level](
        { runtime: runtime.name, ...(e === undefined ? {} : { code: e.code, err: e }), retryInMs: delay },
        `runtime event stream ${e === undefined ? 'ended' : `failed: ${e.message}`}; reconnecting`,
      );
      this.options.inbox.post({ type: 'event-stream-lost' });
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        this.timer = clock.setTimeout(resolve, delay);
      });
      this.timer = undefined;
      this.wake = undefined;
    }
  }

  /** Places the event (undefined for a foreign, another node's or unknown container) and tells it. */
  private handle(event: ContainerEvent): void {
    this.options.inbox.post({ type: 'runtime-event', event, podId: event.type === 'started' ? undefined : this.options.podOf(event) });
  }
}

/** The kubelet's evented PLEG relists every 300 s while the runtime's events flow. */
export const DEFAULT_EVENTED_RELIST_MS = 300_000;

/**
 * Whether the next full pass lists the host: yes unless the event stream has flowed since before
 * the last relist began (`streamingSince` ≤ `relistedAt`) and that relist is younger than
 * `eventedRelistMs` (the evented PLEG); always with `eventedRelistMs` 0.
 */
export function relistDue(
  streamingSince: number | undefined,
  relistedAt: number | undefined,
  now: number,
  eventedRelistMs: number,
): boolean {
  if (eventedRelistMs <= 0 || streamingSince === undefined || relistedAt === undefined || relistedAt < streamingSince) return true;
  return now - relistedAt >= eventedRelistMs;
}
