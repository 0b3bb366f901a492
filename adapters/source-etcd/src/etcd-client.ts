import { readFileSync } from 'node:fs';
import { Etcd3, type IOptions } from 'etcd3';
import { sharedChannelOptions } from './shared-channel.js';

type FaultHandling = NonNullable<IOptions['faultHandling']>;

/**
 * Runs each call once. etcd3's defaults retry three times and then open a per-host circuit breaker
 * for 5 s: against a dead etcd that turns one failed read into four, and after etcd is back it
 * refuses calls for up to 5 s more. The source and the event sink retry with back-offs of their
 * own, so the client must not add one. (Structural, because cockatiel is etcd3's dependency, not ours.)
 */
const once = {
  execute: <T>(fn: (context: { signal: AbortSignal }) => PromiseLike<T> | T) =>
    Promise.resolve().then(() => fn({ signal: new AbortController().signal })),
} as unknown as FaultHandling['global'] & object;

/**
 * etcd3 reconnects a watch stream by itself while a watcher is attached. The source cancels its
 * watcher on the first disconnect and reconnects by reading the key again, so this only bounds the
 * one timer etcd3 leaves behind after a disconnect (its default grows to 30 s and would outlive
 * `close`).
 */
const shortWatchBackoff: NonNullable<FaultHandling['watchBackoff']> = { duration: 100, next: () => shortWatchBackoff };

/**
 * TLS to etcd, by the names kube-apiserver gives them (`--etcd-cafile`, `--etcd-certfile`,
 * `--etcd-keyfile`). PEM files, read each time a client is made (at the source's or sink's
 * `start`/construction): a rotated certificate is taken on the next restart of the agent.
 * With any of them set, or an `https://` endpoint, the client speaks TLS.
 */
export interface EtcdTlsOptions {
  /** The CA etcd's certificate must chain to. Default: the system's roots. */
  readonly caFile?: string;
  /** A client certificate (for etcd's `--client-cert-auth`); needs `keyFile`. */
  readonly certFile?: string;
  readonly keyFile?: string;
}

/** etcd's own users (`etcdctl auth enable`): the password is exchanged for a token, never logged. */
export interface EtcdAuthOptions {
  readonly username: string;
  readonly password: string;
}

export interface EtcdClientOptions {
  readonly endpoints: readonly string[];
  /** Deadline of each unary call (get, put, lease grant). */
  readonly requestTimeoutMs: number;
  readonly tls?: EtcdTlsOptions | undefined;
  readonly auth?: EtcdAuthOptions | undefined;
}

/**
 * An etcd3 client tuned for an agent that outlives etcd outages: calls fail fast and once, and a
 * restarted etcd is reached again within about a second.
 */
export function createEtcdClient(options: EtcdClientOptions): Etcd3 {
  const credentials = tlsCredentials(options.tls);
  return new Etcd3({
    hosts: [...options.endpoints],
    ...(credentials === undefined ? {} : { credentials }),
    ...(options.auth === undefined ? {} : { auth: { username: options.auth.username, password: options.auth.password } }),
    // etcd3 1.1.2 declares `dialTimeout` but never reads it; a deadline per call is what bounds a
    // call to an etcd that accepts connections but does not answer. Streams (watch) have none:
    // they are meant to stay open, and keepalive pings find a dead peer instead.
    // Date.now, not an injected Clock: grpc compares the deadline with the wall clock itself.
    defaultCallOptions: (context) => (context.isStream ? {} : { deadline: Date.now() + options.requestTimeoutMs }),
    faultHandling: { host: () => once, global: once, watchBackoff: shortWatchBackoff },
    // One channel for the client's services (KV, Watch...): one connection to etcd, not one a service.
    grpcOptions: sharedChannelOptions({
      // A channel of its own, so that a reconnect is not held back by the back-off of a shared
      // subchannel that failed while etcd was down (grpc's default grows to 120 s).
      'grpc.use_local_subchannel_pool': 1,
      'grpc.initial_reconnect_backoff_ms': 200,
      'grpc.max_reconnect_backoff_ms': 2000,
      // A watch on a connection whose peer vanished (no FIN, no RST) would otherwise wait forever.
      // etcd refuses pings more often than every 5 s (--grpc-keepalive-min-time).
      'grpc.keepalive_time_ms': 30_000,
      'grpc.keepalive_timeout_ms': 10_000,
    }),
  });
}

/** Throws, naming the flag and file, when a file cannot be read or a pair is half given. */
function tlsCredentials(tls: EtcdTlsOptions | undefined): IOptions['credentials'] {
  if (tls === undefined || (tls.caFile === undefined && tls.certFile === undefined && tls.keyFile === undefined)) return undefined;
  if ((tls.certFile === undefined) !== (tls.keyFile === undefined)) {
    throw new Error('etcd TLS: a client certificate needs its key and the key its certificate (--etcd-certfile with --etcd-keyfile)');
  }
  const read = (path: string | undefined, flag: string) => {
    if (path === undefined) return undefined;
    try {
      return readFileSync(path);
    } catch (error) {
      throw new Error(`etcd TLS: cannot read ${flag} ${path}: ${(error as Error).message}`, { cause: error });
    }
  };
  const certChain = read(tls.certFile, '--etcd-certfile');
  const privateKey = read(tls.keyFile, '--etcd-keyfile');
  return {
    // grpc takes a missing root certificate as "the system's roots"; etcd3's type insists on one.
    rootCertificate: read(tls.caFile, '--etcd-cafile') as Buffer,
    ...(certChain === undefined ? {} : { certChain }),
    ...(privateKey === undefined ? {} : { privateKey }),
  };
}

/** The first line of a client error, which is all a reader needs (grpc appends resolution notes). */
export function describeEtcdError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return (message.split('\n')[0] ?? message).replace(/\s*Resolution note:.*$/, '').replace(/\.$/, '');
}
