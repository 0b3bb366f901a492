import {
  Tokens,
  backoffDelay,
  silentLogger,
  systemClock,
  type BackoffPolicy,
  type Clock,
  type EventSink,
  type KubeletEvent,
  type Logger,
  type Registry,
  type TimerHandle,
} from '@kubelet-ts/core';
import { EtcdLeaseInvalidError, type Etcd3 } from 'etcd3';
import { createEtcdClient, describeEtcdError, type EtcdAuthOptions, type EtcdTlsOptions } from './etcd-client.js';

interface EtcdEventSinkCommonOptions {
  /** How long an event stays in etcd. Default 172800 (two days). */
  readonly ttlSeconds?: number;
  /** Default `/events`. */
  readonly prefix?: string;
  /** Events kept in memory while etcd cannot take them; beyond it the oldest are dropped. Default 1000. */
  readonly maxQueued?: number;
  /** First delay before writing again after a failure; doubles per failure. Default 500 ms. */
  readonly retryInitialMs?: number;
  /** Default 30 s. */
  readonly retryMaxMs?: number;
  /** The part of each delay taken off at random, as the etcd source's `retryJitter`. Default 0.5. */
  readonly retryJitter?: number;
  /** Deadline of one write. Default 5 s. Used only when the sink makes its own client. */
  readonly requestTimeoutMs?: number;
  /** TLS to etcd (see `EtcdTlsOptions`). Used only when the sink makes its own client. */
  readonly tls?: EtcdTlsOptions;
  /** etcd user and password. Used only when the sink makes its own client. */
  readonly auth?: EtcdAuthOptions;
  readonly logger?: Logger;
  /** Time for retries and lease ages. Default `systemClock`. */
  readonly clock?: Clock;
}

/** Either the etcd endpoints, or a client the caller owns (and closes: `close` leaves it open). */
export type EtcdEventSinkOptions = EtcdEventSinkCommonOptions &
  ({ readonly endpoints: readonly string[]; readonly client?: undefined } | { readonly client: Etcd3; readonly endpoints?: undefined });

/**
 * A lease is shared by the events written while it is young: one grant per event would be an extra
 * round trip per write and thousands of leases for etcd's lessor to track. Its TTL runs from the
 * grant (it is never kept alive), so a lease is only used for the first 5% of its TTL, and every
 * event lives between 95% and 100% of `ttlSeconds`; the Kubernetes API server reuses event leases
 * the same way.
 */
const LEASE_REUSE_FRACTION = 0.05;

interface PendingWrite {
  readonly key: string;
  readonly value: string;
}

/**
 * Records the agent's events in etcd, under `<prefix>/<podId or _agent>/<container or _pod>/<time>-<seq>`
 * as JSON, each attached to a lease that expires after `ttlSeconds`, as the 2014 agent's events did.
 *
 * `emit` never throws and never waits: events go into a bounded queue that one writer drains in
 * order. While etcd is away the writer retries with back-off and the queue keeps the newest events
 * (the oldest are dropped and counted), so a dead etcd costs neither memory nor the agent's time;
 * the outage is logged once, and its end with the number of events lost.
 */
export class EtcdEventSink implements EventSink {
  private readonly client: Etcd3;
  private readonly ownsClient: boolean;
  private readonly endpoints: readonly string[] | undefined;
  private readonly ttlSeconds: number;
  private readonly prefix: string;
  private readonly maxQueued: number;
  private readonly retryBackoff: BackoffPolicy;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly queue: PendingWrite[] = [];
  private lease: { readonly id: string; readonly grantedAt: number } | undefined;
  private seq = 0;
  private draining: Promise<void> | undefined;
  private writing = false;
  private retry: TimerHandle | undefined;
  private failures = 0;
  /** The outage has been logged. */
  private outage = false;
  private droppedInOutage = 0;
  private droppedTotal = 0;
  private closing: Promise<void> | undefined;

  constructor(options: EtcdEventSinkOptions) {
    if (options.client !== undefined) {
      this.client = options.client;
      this.ownsClient = false;
    } else {
      this.client = createEtcdClient({
        endpoints: options.endpoints,
        requestTimeoutMs: options.requestTimeoutMs ?? 5000,
        tls: options.tls,
        auth: options.auth,
      });
      this.ownsClient = true;
      this.endpoints = options.endpoints;
    }
    this.ttlSeconds = options.ttlSeconds ?? 172_800;
    if (!Number.isInteger(this.ttlSeconds) || this.ttlSeconds < 1)
      throw new RangeError(`ttlSeconds must be a whole number of seconds >= 1, got ${this.ttlSeconds}`);
    this.prefix = (options.prefix ?? '/events').replace(/\/+$/, '');
    this.maxQueued = Math.max(1, options.maxQueued ?? 1000);
    this.retryBackoff = {
      initialMs: options.retryInitialMs ?? 500,
      maxMs: options.retryMaxMs ?? 30_000,
      jitter: options.retryJitter ?? 0.5,
    };
    this.logger = options.logger ?? silentLogger;
    this.clock = options.clock ?? systemClock;
  }

  /** Events waiting to be written (the one being written included). */
  get pending(): number {
    return this.queue.length + (this.writing ? 1 : 0);
  }

  /** Events dropped so far because the queue was full. */
  get dropped(): number {
    return this.droppedTotal;
  }

  /** The key an event is written under; unique per sink. */
  private keyOf(event: KubeletEvent): string {
    const pod = segment(event.podId, '_agent');
    const container = segment(event.container, '_pod');
    // Zero-padded, so that the keys of one container list in time order.
    const time = String(Math.max(0, Math.trunc(event.time))).padStart(13, '0');
    return `${this.prefix}/${pod}/${container}/${time}-${String(this.seq++).padStart(6, '0')}`;
  }

  emit(event: KubeletEvent): void {
    if (this.closing !== undefined) return;
    let value: string;
    try {
      value = JSON.stringify(event);
    } catch (error) {
      // Only an event carrying something JSON cannot hold (a bigint, a cycle) gets here.
      this.logger.error({ type: event.type, error: String(error) }, 'etcd event sink: event not serialisable; dropped');
      return;
    }
    this.queue.push({ key: this.keyOf(event), value });
    if (this.queue.length > this.maxQueued) {
      this.queue.shift();
      this.countDrop();
    }
    // While a retry is pending, a new event waits for it rather than hammering a dead etcd.
    if (this.retry === undefined) void this.drain();
  }

  /**
   * Writes what is queued now, without waiting for a pending retry. Resolves when the queue is
   * empty, or when etcd refuses a write (what is left stays queued, and the retry goes on); it never
   * rejects.
   */
  async flush(): Promise<void> {
    this.cancelRetry();
    do await this.drain();
    while (this.queue.length > 0 && this.failures === 0);
  }

  /** Makes a last attempt at what is queued, then stops; events emitted later are ignored. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.flush();
      this.cancelRetry();
      if (this.queue.length > 0) this.logger.warn({ unwritten: this.queue.length }, 'closing the etcd event sink with events not written');
      if (this.ownsClient) this.client.close();
    })();
    return this.closing;
  }

  /** For tsyringe's `container.dispose()`. */
  dispose(): Promise<void> {
    return this.close();
  }

  /** One writer at a time, in order; a call during a drain joins it. */
  private drain(): Promise<void> {
    this.draining ??= this.writeQueued().finally(() => {
      this.draining = undefined;
      // An event queued after the writer found the queue empty, but before it let go.
      if (this.queue.length > 0 && this.failures === 0 && this.closing === undefined) void this.drain();
    });
    return this.draining;
  }

  private async writeQueued(): Promise<void> {
    for (let next = this.queue.shift(); next !== undefined; next = this.queue.shift()) {
      this.writing = true;
      try {
        await this.write(next);
      } catch (error) {
        this.writing = false;
        // Back at the front, unless newer events filled the queue meanwhile.
        if (this.queue.length < this.maxQueued) this.queue.unshift(next);
        else this.countDrop();
        this.failed(error);
        return;
      }
      this.writing = false;
      this.succeeded();
    }
  }

  private async write(item: PendingWrite, again = true): Promise<void> {
    try {
      const lease = await this.leaseId();
      await this.client.put(item.key).value(item.value).lease(lease);
    } catch (error) {
      if (error instanceof EtcdLeaseInvalidError) {
        // etcd no longer knows the lease (it expired, or etcd lost it): a new one, and once more.
        this.lease = undefined;
        if (again) return this.write(item, false);
      }
      throw error;
    }
  }

  private async leaseId(): Promise<string> {
    const now = this.clock.now();
    if (this.lease !== undefined && now - this.lease.grantedAt < this.ttlSeconds * 1000 * LEASE_REUSE_FRACTION) return this.lease.id;
    this.lease = undefined;
    // autoKeepAlive off: the lease must expire, taking its events with it.
    const id = await this.client.lease(this.ttlSeconds, { autoKeepAlive: false }).grant();
    this.lease = { id, grantedAt: now };
    return id;
  }

  private countDrop(): void {
    this.droppedTotal += 1;
    this.droppedInOutage += 1;
    if (this.droppedInOutage === 1) this.logger.warn({ maxQueued: this.maxQueued }, 'etcd event queue full; dropping the oldest events');
  }

  private succeeded(): void {
    this.failures = 0;
    if (!this.outage) return;
    this.outage = false;
    this.logger.info({ dropped: this.droppedInOutage }, 'writing events to etcd again');
    this.droppedInOutage = 0;
  }

  private failed(error: unknown): void {
    this.failures += 1;
    const delay = backoffDelay(this.failures, this.retryBackoff);
    if (this.outage) {
      this.logger.debug({ error: describeEtcdError(error), retryInMs: delay }, 'etcd event write failed');
    } else {
      this.outage = true;
      this.logger.warn(
        { endpoints: this.endpoints, error: describeEtcdError(error), queued: this.queue.length, maxQueued: this.maxQueued },
        'cannot write events to etcd; keeping the newest in memory and retrying with back-off',
      );
    }
    if (this.closing !== undefined) return;
    this.cancelRetry();
    this.retry = this.clock.setTimeout(() => {
      this.retry = undefined;
      void this.drain();
    }, delay);
  }

  private cancelRetry(): void {
    if (this.retry !== undefined) this.clock.clearTimeout(this.retry);
    this.retry = undefined;
  }
}

/** A key segment from a name: absent or empty is `fallback`, and `/` cannot make extra levels. */
function segment(name: string | undefined, fallback: string): string {
  if (name === undefined || name === '') return fallback;
  return name.replace(/[/%]/g, (c) => encodeURIComponent(c));
}

/** Registers an etcd event sink and returns it (close it with `close`, or `container.dispose()`). */
export function registerEtcdEventSink(registry: Registry, options: EtcdEventSinkOptions): EtcdEventSink {
  const sink = new EtcdEventSink(options);
  registry.register(Tokens.EventSink, { useValue: sink });
  return sink;
}
