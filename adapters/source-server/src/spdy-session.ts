import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { HoldableSocket, SPDY_31, spdyConnection, unboundedStream, type SpdyConnection, type SpdyStream } from '@kubelet-ts/spdy';
import { HttpProblem } from './http-kit.js';

export { SPDY_31 } from '@kubelet-ts/spdy';
export type { SpdyStream } from '@kubelet-ts/spdy';

/*
 * SPDY/3.1 as the kubelet serves it (`k8s.io/streaming` `httpstream/spdy`, `moby/spdystream`): an
 * HTTP upgrade naming `SPDY/3.1` and a `X-Stream-Protocol-Version` the two sides agree on, then
 * streams the client opens (SYN_STREAM), each with its `streamType` header, each answered SYN_REPLY.
 * The framing is `spdy-transport`'s, set for Go's spdystream by `@kubelet-ts/spdy` (see its
 * `SPDY_31`); here, besides: what a client may not do (open streams without end: past `maxStreams`
 * open at once a new one is refused with RST_STREAM `REFUSED_STREAM`), the back-pressure of a client
 * that does not read (`backedUp`), and GOAWAY only after the last DATA frames (`end`).
 */

/** Whether a request asks to upgrade to SPDY/3.1 (the kubelet's test: both headers, case aside). */
export function isSpdyUpgrade(req: IncomingMessage): boolean {
  const upgrade = String(req.headers.upgrade ?? '').toLowerCase();
  const connection = String(req.headers.connection ?? '').toLowerCase();
  return upgrade.includes(SPDY_31.toLowerCase()) && connection.includes('upgrade');
}

/**
 * The protocol both sides speak (`httpstream.Handshake`): the first of the client's
 * `X-Stream-Protocol-Version` values the server serves. Throws the kubelet's answers: 400 without
 * the header, 403 naming what is served (also in `X-Accepted-Stream-Protocol-Versions`) when none fits.
 */
export function negotiateStreamProtocol(req: IncomingMessage, served: readonly string[]): string {
  const given = req.headers['x-stream-protocol-version'];
  const offered = (Array.isArray(given) ? given : given === undefined ? [] : [given])
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter((v) => v !== '');
  if (offered.length === 0)
    throw new HttpProblem(400, 'unable to upgrade: give the stream protocol in the header X-Stream-Protocol-Version');
  const protocol = offered.find((p) => served.includes(p));
  if (protocol === undefined)
    throw new HttpProblem(
      403,
      `unable to upgrade: unable to negotiate protocol: client supports ${offered.join(', ')}, server accepts ${served.join(', ')}`,
      [],
      undefined,
      { 'x-accepted-stream-protocol-versions': served.join(', ') },
    );
  return protocol;
}

/** Answers the upgrade: 101, `Upgrade: SPDY/3.1`, the protocol agreed on. */
export function acceptSpdyUpgrade(socket: Duplex, protocol: string): void {
  socket.write(
    `HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: ${SPDY_31}\r\nX-Stream-Protocol-Version: ${protocol}\r\n\r\n`,
  );
}

/** The most bytes framed for a client and not yet taken by it before writers wait (all streams together). */
const MAX_BACKLOG = 1024 * 1024;

/** How long a connection the agent ended (GOAWAY) is kept for its client to close it. */
const CLOSE_GRACE_MS = 5_000;

/** A SPDY connection the agent serves, over a socket it upgraded (or a WebSocket's byte stream). */
export interface SpdyServerConnection {
  /** Resolves when the connection is gone (the client left, or the agent ended it). */
  readonly closed: Promise<void>;
  /** Whether it is gone. */
  readonly isClosed: boolean;
  /** Stops reading the client (every stream) until the returned function is called. */
  hold(): () => void;
  /**
   * Undefined while the frames not yet taken by the client are few; else resolves once they are
   * (or the connection is gone). A writer waits on it: spdy-transport frames what a stream is given
   * whether or not the socket takes it (its scheduler pushes on past its buffer's mark), so a
   * stream's own `write()` would not slow a source for a client that does not read.
   */
  backedUp(): Promise<void> | undefined;
  /**
   * Once every frame queued so far was handed to the socket: GOAWAY (a Go client stops reading at
   * it, so it must not overtake the streams' last DATA frames, which spdy-transport would let it do:
   * control frames go first). The socket is destroyed if the client keeps it past a grace period.
   */
  end(): void;
  /** Drops the connection now. */
  destroy(): void;
}

export interface SpdyServerOptions {
  /** The most streams open at once (default 64); more are refused with RST_STREAM `REFUSED_STREAM`. */
  readonly maxStreams?: number;
  /** Each stream the client opens, within the bound: answer it (`stream.respond(200, {})`) or `abort` it. */
  readonly onStream: (stream: SpdyStream) => void;
}

/** Serves SPDY/3.1 on `socket` (what follows the 101, or a tunnel's bytes); `head` is what was read past the request. */
export function serveSpdy(socket: Duplex, head: Buffer | undefined, options: SpdyServerOptions): SpdyServerConnection {
  const held = new HoldableSocket(socket);
  if (head !== undefined && head.length > 0) held.push(head);
  const maxStreams = options.maxStreams ?? 64;
  const connection: SpdyConnection = spdyConnection(held, { isServer: true, maxStreams });
  const state = connection._spdyState;
  let open = 0;
  connection.on('stream', (stream: SpdyStream) => {
    unboundedStream(stream);
    // A stream the client resets, or that fails, is closed like one that ended.
    stream.on('error', () => undefined);
    if (open >= maxStreams) {
      stream.abort('REFUSED_STREAM');
      return;
    }
    open += 1;
    stream.once('close', () => (open -= 1));
    options.onStream(stream);
  });
  connection.on('error', () => held.destroy());
  let isClosed = false;
  const closed = new Promise<void>((resolve) => {
    const done = () => {
      isClosed = true;
      resolve();
    };
    held.once('close', done);
    connection.once('close', () => {
      if (!held.destroyed) held.end();
    });
  });
  // What waits to be written to the client: framed, and handed to the socket but not yet taken.
  const backlog = () => state.framer.readableLength + held.writableLength;
  let waiting: { promise: Promise<void>; check: () => void } | undefined;
  const backedUp = (): Promise<void> | undefined => {
    if (isClosed || backlog() <= MAX_BACKLOG) return undefined;
    if (waiting === undefined) {
      let resolve = () => {};
      const promise = new Promise<void>((r) => (resolve = r));
      const poll = setInterval(() => check(), 20);
      const check = () => {
        if (!isClosed && backlog() > MAX_BACKLOG / 2) return;
        clearInterval(poll);
        held.off('drain', check);
        waiting = undefined;
        resolve();
      };
      held.on('drain', check);
      void closed.then(check);
      waiting = { promise, check };
    }
    return waiting.promise;
  };
  let ending: NodeJS.Timeout | undefined;
  void closed.then(() => clearTimeout(ending));
  return {
    closed,
    get isClosed() {
      return isClosed;
    },
    hold: () => held.hold(),
    backedUp,
    end() {
      if (isClosed || ending !== undefined) return;
      ending = setTimeout(() => held.destroy(), CLOSE_GRACE_MS);
      ending.unref();
      const framer = state.framer;
      const goaway = () => {
        if (isClosed) return;
        if (framer.count > 0 || framer.readableLength > 0) {
          setTimeout(goaway, 5);
          return;
        }
        try {
          connection.end();
        } catch {
          held.destroy();
        }
      };
      // After the writes of this tick were framed (spdy-transport frames on the next ticks).
      setImmediate(goaway);
      // spdy-transport lets go of the socket once every stream has closed; a Go client closes the
      // connection when it reads the GOAWAY (its streams end there), so the timer is for the others.
    },
    destroy: () => held.destroy(),
  };
}
