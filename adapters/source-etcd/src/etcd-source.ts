import {
  KubeletError,
  backoffDelay,
  nodeNameProblem,
  Tokens,
  derivedManifestId,
  silentLogger,
  systemClock,
  type BackoffPolicy,
  type Clock,
  type Logger,
  type ManifestSource,
  type Registry,
  type SourceSink,
  type TimerHandle,
  hostAccessOf,
  type HostAccess,
} from '@kubelet-ts/core';
import { ManifestIntake, type IdFor } from '@kubelet-ts/manifest';
import type { Etcd3, IWatchResponse, Watcher } from 'etcd3';
import { createEtcdClient, describeEtcdError, type EtcdAuthOptions, type EtcdTlsOptions } from './etcd-client.js';

/** With the host access the manifests may take (`HostAccess`: the CLI's `--allow-host-mounts`, `--allow-host-network`). */
export interface EtcdManifestSourceOptions extends HostAccess {
  /** etcd client URLs, e.g. `http://127.0.0.1:2379`. */
  readonly endpoints: readonly string[];
  /** TLS to etcd: its CA, and a client certificate (kube-apiserver's `--etcd-cafile`, `--etcd-certfile`, `--etcd-keyfile`). */
  readonly tls?: EtcdTlsOptions;
  /** etcd user and password, when etcd has authentication enabled. */
  readonly auth?: EtcdAuthOptions;
  /** This host's name; it picks the default key. */
  readonly hostname: string;
  /** The key holding this host's manifests. Default `etcdKeyFor(hostname)`. */
  readonly key?: string;
  /** Default `etcd`. */
  readonly name?: string;
  /** First delay before reading again after etcd failed; doubles per failure. Default 500 ms. */
  readonly retryInitialMs?: number;
  /** Longest delay between two attempts while etcd is down. Default 30 s. */
  readonly retryMaxMs?: number;
  /**
   * The part of each delay taken off at random, 0 to 1 (`BackoffPolicy.jitter`): 10,000 agents that
   * lost etcd at its restart backed off in step without it. Default 0.5: each wait is between half
   * the back-off and all of it. 0: the back-off exactly.
   */
  readonly retryJitter?: number;
  /** Random numbers in [0, 1) for the jitter. Default `Math.random`. */
  readonly random?: () => number;
  /** Deadline of one read, and of a watch being accepted. Default 5 s. */
  readonly requestTimeoutMs?: number;
  readonly logger?: Logger;
  /** Time for retries and watch deadlines. Default `systemClock`. */
  readonly clock?: Clock;
}

const ADAPTER = 'etcd';

/**
 * Where the 2014 agent read a host's manifests: `/registry/hosts/<hostname>/kubelet`. The
 * hostname must be a DNS name, so that no name (`a/b`, `..`) can point at another host's key.
 */
export function etcdKeyFor(hostname: string): string {
  // The key keeps the hostname as given (2014 wrote it so, case and all); only its form is checked,
  // so that no `/` or `..` names another host's key.
  const problem = nodeNameProblem(hostname.toLowerCase());
  if (problem !== undefined) throw new KubeletError('InvalidManifest', problem, { adapter: ADAPTER });
  return `/registry/hosts/${hostname}/kubelet`;
}

/**
 * The `--etcd_servers` source: one key holding a YAML or JSON list of manifests (one manifest is
 * accepted too), read and then watched from the revision after the read.
 *
 * The read is the truth and the watch only carries changes after it. Whenever the watch is lost (etcd
 * went away, the connection dropped, etcd canceled it), the source reads the key again and watches
 * from that read's revision: a change made while it was not watching is in the read, so none is
 * missed, and a compacted revision cannot hurt because the source never resumes from an old one.
 * etcd3's own watch reconnect is not used, so there is only ever one watcher.
 */
export class EtcdManifestSource implements ManifestSource {
  readonly name: string;
  readonly key: string;
  private readonly endpoints: readonly string[];
  /** TLS and user for the client; never logged (the password is a secret). */
  private readonly security: { readonly tls: EtcdTlsOptions | undefined; readonly auth: EtcdAuthOptions | undefined };
  private readonly retryBackoff: BackoffPolicy;
  private readonly random: () => number;
  private readonly requestTimeoutMs: number;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private sink: SourceSink | undefined;
  private client: Etcd3 | undefined;
  private watcher: Watcher | undefined;
  /** Fires when etcd does not accept a watch in time (etcd3 would wait for it forever). */
  private watchdog: TimerHandle | undefined;
  private retry: TimerHandle | undefined;
  private syncing: Promise<void> | undefined;
  /** The key is the source's one document: its last good manifests, problems and warnings. */
  private readonly intake: ManifestIntake;
  /**
   * A manifest without an id is named after the source and its position in the list, hashed with
   * the key (see `derivedManifestId`).
   */
  private readonly idFor: IdFor;
  /** Attempts failed in a row; sets the back-off. */
  private failures = 0;
  /** Unavailable has been reported for the current outage. */
  private outage = false;
  /** Watches etcd canceled in a row, without a change in between. */
  private cancels = 0;
  private closed = false;

  constructor(options: EtcdManifestSourceOptions) {
    if (options.endpoints.length === 0) throw new KubeletError('Internal', 'etcd source: no endpoints given', { adapter: ADAPTER });
    this.endpoints = options.endpoints;
    this.security = { tls: options.tls, auth: options.auth };
    this.key = options.key ?? etcdKeyFor(options.hostname);
    this.name = options.name ?? ADAPTER;
    this.retryBackoff = {
      initialMs: options.retryInitialMs ?? 500,
      maxMs: options.retryMaxMs ?? 30_000,
      jitter: options.retryJitter ?? 0.5,
    };
    this.random = options.random ?? Math.random;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 5000;
    this.logger = options.logger ?? silentLogger;
    this.clock = options.clock ?? systemClock;
    this.intake = new ManifestIntake({
      adapter: ADAPTER,
      ...hostAccessOf(options),
      describedAs: `${this.key}: the value's manifests`,
    });
    this.idFor = (position) => derivedManifestId(this.name, this.key, position);
  }

  /** Resolves after the first attempt, read or not: an etcd that is down is retried, not fatal. */
  async start(sink: SourceSink): Promise<void> {
    this.sink = sink;
    this.closed = false;
    this.intake.start(sink); // a (re)started source delivers its first read and says what stands
    this.failures = 0;
    this.outage = false;
    this.cancels = 0;
    this.client = createEtcdClient({ endpoints: this.endpoints, requestTimeoutMs: this.requestTimeoutMs, ...this.security });
    await this.sync();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.intake.close();
    this.cancelRetry();
    await this.stopWatching();
    // Ends a read in flight (etcd3 gives a channel that is still connecting 1 s), and nothing
    // is delivered from it: `closed` is checked after every wait.
    this.client?.close();
    this.client = undefined;
    await this.syncing;
  }

  /** Reads the key and watches from there; one at a time. */
  private sync(): Promise<void> {
    this.syncing ??= this.readAndWatch().finally(() => {
      this.syncing = undefined;
    });
    return this.syncing;
  }

  private async readAndWatch(): Promise<void> {
    const client = this.client;
    if (this.closed || client === undefined) return;
    await this.stopWatching();
    let response: Awaited<ReturnType<ReturnType<Etcd3['get']>['exec']>>;
    try {
      response = await client.get(this.key).exec();
    } catch (error) {
      if (!this.closed) this.fail(error);
      return;
    }
    if (this.closed) return;
    this.apply(response.kvs[0]?.value);
    this.watchFrom(client, BigInt(response.header.revision) + 1n);
  }

  private watchFrom(client: Etcd3, revision: bigint): void {
    // A namespace of its own gives the watch a stream of its own: etcd3 shares one stream between
    // the watchers of a namespace, and a new watch must not be attached to the stream that etcd3 is
    // still tearing down after etcd canceled the previous one. `create()` would only settle once
    // etcd accepts the watch (etcd3 retries disconnects inside it), so a watch made just as etcd dies
    // would hang out of reach; `watcher()` hands the watcher over at once, so that it can be cancelled.
    const watcher = client.namespace('').watch().key(this.key).startRevision(String(revision)).watcher();
    this.watcher = watcher;
    const current = () => watcher === this.watcher && !this.closed;
    this.watchdog = this.clock.setTimeout(() => {
      if (current()) this.lost(new Error(`etcd did not accept a watch within ${this.requestTimeoutMs} ms`));
    }, this.requestTimeoutMs);
    watcher.on('connected', () => {
      if (!current()) return;
      this.cancelWatchdog();
      this.healthy(revision);
    });
    watcher.on('data', (response: IWatchResponse) => {
      if (!current()) return;
      this.cancels = 0;
      this.receive(response);
    });
    // etcd3 emits `disconnected` twice for one drop (stream error, then end); `current` keeps the
    // second from counting.
    watcher.on('disconnected', (error: Error) => {
      if (current()) this.lost(error);
    });
    watcher.on('end', () => {
      if (current()) this.lost(new Error('the watch ended'));
    });
    watcher.on('error', (error: Error) => {
      if (current()) this.canceled(error);
    });
  }

  /** The read and the watch both worked: etcd is back (if it was away), and the back-off restarts. */
  private healthy(revision: bigint): void {
    this.failures = 0;
    if (this.outage) {
      this.outage = false;
      this.logger.info({ source: this.name, key: this.key, endpoints: this.endpoints }, 'etcd reachable again');
    }
    this.logger.debug({ source: this.name, key: this.key, fromRevision: String(revision) }, 'watching');
  }

  /** The watch is gone with the connection: read again, with back-off. */
  private lost(error: unknown): void {
    void this.stopWatching();
    this.fail(error);
  }

  /**
   * etcd canceled the watch. In etcd 3.4 that is what a compacted start revision does, with an
   * empty `cancel_reason`, so etcd3's error cannot say why: read again at once, and watch from the
   * new read, which is never compacted. A second cancel right after a fresh read is something else
   * (a permission, say), and is reported and retried with back-off rather than in a tight loop.
   */
  private canceled(error: Error): void {
    void this.stopWatching({ detached: true });
    this.cancels += 1;
    if (this.cancels === 1) {
      this.logger.info(
        { source: this.name, key: this.key, error: describeEtcdError(error) },
        'etcd canceled the watch (a compacted revision); reading the key again',
      );
      this.retryLater(0);
      return;
    }
    if (this.cancels === 2) {
      this.sink?.error(
        new KubeletError(
          'Unavailable',
          `etcd at ${this.endpoints.join(', ')} keeps canceling the watch of ${this.key}: ${describeEtcdError(error)}; retrying with back-off`,
          { adapter: ADAPTER, cause: error },
        ),
      );
    }
    this.retryLater(backoffDelay(this.cancels - 1, this.retryBackoff, this.random));
  }

  /** A failed read or a lost watch: report once per outage, and try again later. */
  private fail(error: unknown): void {
    this.failures += 1;
    const delay = backoffDelay(this.failures, this.retryBackoff, this.random);
    this.logger.debug({ source: this.name, key: this.key, error: describeEtcdError(error), retryInMs: delay }, 'etcd attempt failed');
    if (!this.outage) {
      this.outage = true;
      // The last good set stays in force: an unreachable etcd is never an empty set.
      this.sink?.error(
        new KubeletError(
          'Unavailable',
          `etcd at ${this.endpoints.join(', ')} is unreachable (key ${this.key}): ${describeEtcdError(error)}; retrying with back-off`,
          { adapter: ADAPTER, cause: error },
        ),
      );
    }
    this.retryLater(delay);
  }

  private retryLater(delayMs: number): void {
    if (this.closed) return;
    this.cancelRetry();
    this.retry = this.clock.setTimeout(() => {
      this.retry = undefined;
      void this.sync();
    }, delayMs);
  }

  private cancelRetry(): void {
    if (this.retry !== undefined) this.clock.clearTimeout(this.retry);
    this.retry = undefined;
  }

  private cancelWatchdog(): void {
    if (this.watchdog !== undefined) this.clock.clearTimeout(this.watchdog);
    this.watchdog = undefined;
  }

  /**
   * Drops the current watcher. `detached`: etcd3 has already let go of it (etcd canceled it), and a
   * cancel request for it would wait for an answer that never comes.
   */
  private async stopWatching(options: { detached?: boolean } = {}): Promise<void> {
    const watcher = this.watcher;
    this.watcher = undefined;
    this.cancelWatchdog();
    if (watcher === undefined) return;
    watcher.removeAllListeners();
    watcher.on('error', () => {}); // an `error` with no listener would throw inside etcd3's stream handler
    if (options.detached === true) return;
    // Detaching happens at once while disconnected, which keeps etcd3 from re-attaching this
    // watcher when its stream comes back; while connected it waits for etcd's answer, bounded.
    let timer: TimerHandle | undefined;
    await Promise.race([
      watcher.cancel().catch(() => {}),
      new Promise<void>((resolve) => (timer = this.clock.setTimeout(resolve, this.requestTimeoutMs))),
    ]);
    if (timer !== undefined) this.clock.clearTimeout(timer);
  }

  /** Applies the key's value (`undefined`: no key) and delivers the set if it changed. */
  /**
   * One watch response. It may carry several revisions of the key: each is taken in, in order, and
   * the set is delivered once, so an invalid last one reports its problem while the last valid one
   * before it runs (issue 27: applying the last alone left the agent on an earlier batch's version).
   * @internal (public for the test that hands it a batch etcd would have to be raced into sending)
   */
  receive(response: Pick<IWatchResponse, 'events'>): void {
    if (response.events.length === 0) return;
    for (const event of response.events) this.take(event.type === 'Delete' ? undefined : event.kv.value);
    this.intake.commit();
  }

  private apply(value: Buffer | undefined): void {
    this.take(value);
    this.intake.commit();
  }

  /** One version of the key, taken into the intake (delivered at the next commit). */
  private take(value: Buffer | undefined): void {
    if (value === undefined) {
      // A missing or deleted key is "nothing to run", like a missing --config path.
      this.intake.keep([]);
    } else if (value.toString('utf8').trim() === '') {
      // An empty value is not "run nothing": a cut-short write or a wrong `etcdctl put` must not stop
      // every container on the host. It is unreadable, and the last good set stays.
      const problem = `${this.key}: the value is empty, which is unreadable (not "run nothing"); the last good set stays. To run nothing, delete the key or put "[]"`;
      this.intake.fail(this.key, new KubeletError('InvalidManifest', problem, { adapter: ADAPTER }));
    } else {
      this.intake.read(this.key, value, this.idFor); // bytes: a value that is not UTF-8 is unreadable
    }
  }
}

/** Registers an etcd source (`--etcd_servers`) and returns it. */
export function registerEtcdSource(registry: Registry, options: EtcdManifestSourceOptions): EtcdManifestSource {
  const source = new EtcdManifestSource(options);
  registry.register(Tokens.Source, { useValue: source });
  return source;
}
