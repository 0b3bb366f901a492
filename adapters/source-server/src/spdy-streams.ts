import type { Duplex, Readable } from 'node:stream';
import type { StreamOptions, StreamSession } from '@kubelet-ts/core';
import { type Forward, endStatus } from './channel-streams.js';
import { type SpdyServerConnection, type SpdyStream, serveSpdy } from './spdy-session.js';

/**
 * Exec, attach and port-forward over SPDY/3.1, as the kubelet serves them (`k8s.io/cri-streaming`
 * `remotecommand/httpstream.go` and `portforward/httpstream.go`): the client opens one stream per
 * purpose, named by its `streamType` header, and the server answers each (SYN_REPLY).
 */

/** The exec/attach protocols served over SPDY, newest first (`X-Stream-Protocol-Version`). */
export const SPDY_EXEC_PROTOCOLS = ['v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io', 'channel.k8s.io'] as const;
/** Port-forward's protocol over SPDY. */
export const SPDY_PORT_FORWARD_PROTOCOLS = ['portforward.k8s.io'] as const;
/** The WebSocket subprotocol of SPDY tunnelled in a WebSocket (client-go's `tunneling_connection.go`). */
export const TUNNELED_PORT_FORWARD_PROTOCOL = 'SPDY/3.1+portforward.k8s.io';

/** The kubelet's wait for a client to open its streams (`streamCreationTimeout`). */
export const STREAM_CREATION_TIMEOUT_MS = 30_000;

export interface SpdyStreamLimits {
  /** How long the client has to open its streams (default 30 s, the kubelet's). */
  readonly streamCreationTimeoutMs?: number;
  /** The most streams of one port-forward connection open at once (default 256: 128 connections). */
  readonly maxStreams?: number;
  /** How many of one port-forward connection's connections are dialled at once (default 4). */
  readonly dialsAtOnce?: number;
}

/** Runs at most `n` of the calls given at once, in the order given. */
function limiter(n: number): <T>(call: () => Promise<T>) => Promise<T> {
  let active = 0;
  const waiting: Array<() => void> = [];
  return async (call) => {
    if (active >= n) await new Promise<void>((resolve) => waiting.push(resolve));
    else active += 1;
    try {
      return await call();
    } finally {
      const next = waiting.shift();
      if (next === undefined) active -= 1;
      else next();
    }
  };
}

/**
 * Writes what `from` gives to `to`, pausing `from` while `to` or the connection has not taken what
 * it was given (a slow client slows the source, never grows the agent's memory); ends `to` (FIN)
 * when `from` ends. Resolves when `from` is over.
 */
function relay(from: Readable | Duplex, to: SpdyStream, connection: SpdyServerConnection): Promise<void> {
  return new Promise((resolve) => {
    const over = () => {
      if (!to.writableEnded && !to.destroyed) to.end();
      resolve();
    };
    from.on('data', (chunk: Buffer | string) => {
      if (to.writableEnded || to.destroyed) return;
      const taken = to.write(chunk);
      const backedUp = connection.backedUp();
      if (taken && backedUp === undefined) return;
      from.pause();
      const drained = taken ? Promise.resolve() : new Promise<void>((r) => to.once('drain', () => r()));
      void Promise.all([drained, backedUp]).then(() => from.resume());
    });
    from.once('end', over).once('close', over).once('error', over);
  });
}

/**
 * What the client sends on `from` written to `to`; while `to` has not taken it the client's
 * connection is not read (all its streams: SPDY's flow control is not used by Go's side).
 */
function relayIn(
  from: SpdyStream,
  to: { write(chunk: Buffer): boolean; once(event: 'drain', f: () => void): unknown },
  connection: SpdyServerConnection,
): void {
  from.on('data', (chunk: Buffer) => {
    if (!to.write(chunk)) {
      const release = connection.hold();
      to.once('drain', release);
      void connection.closed.then(release);
    }
  });
}

/** Terminal sizes from the resize stream: JSON objects `{"Width":..,"Height":..}`, one a line (Go's json.Encoder). */
function resizes(stream: SpdyStream, session: StreamSession): void {
  let pending = '';
  stream.on('data', (chunk: Buffer) => {
    pending += chunk.toString('utf8');
    // A size is a few bytes: a client sending without end-of-line is cut off.
    if (pending.length > 4096) pending = '';
    let at = pending.indexOf('\n');
    for (; at >= 0; at = pending.indexOf('\n')) {
      const line = pending.slice(0, at).trim();
      pending = pending.slice(at + 1);
      if (line === '') continue;
      try {
        const size = JSON.parse(line) as { Width?: unknown; Height?: unknown };
        if (typeof size.Width === 'number' && typeof size.Height === 'number')
          void session.resize({ width: size.Width, height: size.Height }).catch(() => undefined);
      } catch {
        // A size that is not JSON is dropped, as the kubelet drops it.
      }
    }
  });
}

/**
 * Joins an exec or attach session to a SPDY connection on `socket` (the 101 already written):
 * waits for the client's streams (`error`, and `stdin`, `stdout`, `stderr`, `resize` as asked;
 * `resize` from v3 on) for `streamCreationTimeoutMs`, answers each, then relays. Once the session is
 * over and its output sent, its status goes on the error stream (v4: a metav1.Status as JSON; before:
 * the failure's message as text, nothing on success), then GOAWAY. The connection dropping, or the
 * client not opening its streams in time, closes the session. Resolves when the connection is gone.
 */
export function joinSpdySession(
  socket: Duplex,
  head: Buffer | undefined,
  session: StreamSession,
  protocol: string,
  command: readonly string[] | undefined,
  options: StreamOptions,
  limits: SpdyStreamLimits = {},
): Promise<void> {
  const wanted = new Set<string>(['error']);
  if (options.stdin) wanted.add('stdin');
  if (options.stdout) wanted.add('stdout');
  if (options.stderr) wanted.add('stderr');
  if (options.tty && (protocol === 'v4.channel.k8s.io' || protocol === 'v3.channel.k8s.io')) wanted.add('resize');
  const streams = new Map<string, SpdyStream>();
  let replied = 0;
  const connection = serveSpdy(socket, head, {
    maxStreams: wanted.size,
    onStream(stream) {
      const type = stream.headers.streamtype ?? '';
      if (!wanted.has(type) || streams.has(type)) {
        stream.abort('PROTOCOL_ERROR');
        return;
      }
      streams.set(type, stream);
      // Relayed once every stream was answered: the answers are framed in turn, and a stream's
      // output or the GOAWAY must not reach the client before the answer to a stream it waits on.
      stream.respond(200, {}, () => {
        replied += 1;
        if (replied === wanted.size) {
          clearTimeout(timer);
          void run();
        }
      });
    },
  });
  const timer = setTimeout(() => connection.destroy(), limits.streamCreationTimeoutMs ?? STREAM_CREATION_TIMEOUT_MS);
  void connection.closed.then(() => {
    clearTimeout(timer);
    session.close();
  });
  const run = async () => {
    const stdin = streams.get('stdin');
    if (stdin !== undefined) {
      if (session.stdin === undefined) stdin.resume();
      else {
        const into = session.stdin;
        relayIn(stdin, into, connection);
        stdin.once('end', () => into.end());
      }
    }
    const resize = streams.get('resize');
    if (resize !== undefined) resizes(resize, session);
    const stdout = streams.get('stdout');
    const stderr = streams.get('stderr');
    // What a client sends on a stream the agent only writes is dropped, not kept.
    for (const s of [stdout, stderr, streams.get('error')]) s?.resume();
    const outputs = [
      session.stdout === undefined || stdout === undefined ? Promise.resolve() : relay(session.stdout, stdout, connection),
      session.stderr === undefined || stderr === undefined ? Promise.resolve() : relay(session.stderr, stderr, connection),
    ];
    const end = await session.done;
    await Promise.all(outputs);
    if (connection.isClosed) return;
    for (const s of [stdout, stderr]) if (s !== undefined && !s.writableEnded) s.end();
    const error = streams.get('error')!;
    const status = endStatus(end, command);
    if (protocol === 'v4.channel.k8s.io') error.end(JSON.stringify(status));
    else if (status.status !== 'Success') error.end(String(status.message));
    else error.end();
    connection.end();
  };
  return connection.closed;
}

/** A port-forward request's pair of streams, as they come. */
interface StreamPair {
  data?: SpdyStream;
  error?: SpdyStream;
  readonly timer: NodeJS.Timeout;
}

/**
 * Port-forward over a SPDY connection on `socket` (the 101 already written, or a WebSocket tunnel's
 * bytes): the client opens an `error` and a `data` stream per connection, with the same `requestID`
 * and the `port` to reach; once both are there, `dial` makes the connection (or says why not, which
 * goes on the error stream as text) and the bytes are relayed. A pair not complete within
 * `streamCreationTimeoutMs` is told so and reset. `dial` is given the connection's end, so nothing is
 * dialled once the client left; the client leaving closes every forwarded connection.
 */
export function serveSpdyPortForward(
  socket: Duplex,
  head: Buffer | undefined,
  dial: (port: number, gone: Promise<void>) => Promise<Forward | undefined>,
  limits: SpdyStreamLimits = {},
): SpdyServerConnection {
  const pairs = new Map<string, StreamPair>();
  const made = new Set<Duplex>();
  const dialing = limiter(Math.max(1, limits.dialsAtOnce ?? 4));
  const connection = serveSpdy(socket, head, {
    maxStreams: limits.maxStreams ?? 256,
    onStream(stream) {
      const type = stream.headers.streamtype;
      const portText = stream.headers.port ?? '';
      const port = Number(portText);
      // The kubelet resets a stream without a port it can use, or of another type.
      if ((type !== 'error' && type !== 'data') || !/^\d+$/.test(portText) || port < 1 || port > 65535) {
        stream.abort('PROTOCOL_ERROR');
        return;
      }
      const given = stream.headers.requestid;
      const id = given !== undefined && given !== '' ? given : String(type === 'error' ? stream.id : stream.id - 2);
      let pair = pairs.get(id);
      if (pair === undefined) {
        const timer = setTimeout(() => {
          pairs.delete(id);
          pair?.error?.end(`(request=${id}) timed out waiting for streams`);
          pair?.data?.abort();
        }, limits.streamCreationTimeoutMs ?? STREAM_CREATION_TIMEOUT_MS);
        timer.unref();
        pair = { timer };
        pairs.set(id, pair);
      }
      stream.respond(200, {});
      if (pair[type] !== undefined) {
        pair.error?.write(`error processing stream for request ${id}: ${type} stream already assigned`);
        stream.abort();
        return;
      }
      pair[type] = stream;
      if (pair.data === undefined || pair.error === undefined) return;
      clearTimeout(pair.timer);
      pairs.delete(id);
      void forward(pair.data, pair.error, port);
    },
  });
  const forward = async (data: SpdyStream, error: SpdyStream, port: number) => {
    // What the client writes on the error stream is nothing the kubelet reads.
    error.resume();
    // Dialled a few at a time, and not at all once the client left (issue 48).
    const result = await dialing(async () => (connection.isClosed ? undefined : dial(port, connection.closed)));
    if (result === undefined || connection.isClosed) return;
    if ('error' in result) {
      // Ends, not resets: a reset would overtake the message (control frames go first).
      error.end(result.error);
      data.end();
      data.resume();
      return;
    }
    const c = result.connection;
    made.add(c);
    c.once('close', () => {
      made.delete(c);
      if (!error.writableEnded && !error.destroyed) error.end();
    });
    c.on('error', (e: Error) => {
      if (!error.writableEnded && !error.destroyed) error.write(`error forwarding port ${port}: ${e.message}`);
    });
    relayIn(data, c, connection);
    data.once('end', () => c.end());
    data.once('close', () => c.destroy());
    void relay(c, data, connection);
  };
  void connection.closed.then(() => {
    for (const pair of pairs.values()) clearTimeout(pair.timer);
    for (const c of made) c.destroy();
  });
  return connection;
}
