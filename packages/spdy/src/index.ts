/// <reference path="./spdy-transport.d.ts" />
import { connect as connectTcp, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import transport from 'spdy-transport';
import { HoldableSocket } from './holdable-socket.js';
import type { ConnectionOptions, SpdyConnection, SpdyStream } from './spdy-types.js';

export type { ConnectionOptions, SpdyConnection, SpdyStream, SpdyWindowSide } from './spdy-types.js';
export { HoldableSocket } from './holdable-socket.js';

/**
 * SPDY/3.1 as Kubernetes streams speak it: an HTTP upgrade naming `SPDY/3.1` and a
 * `X-Stream-Protocol-Version` both sides agree on, then streams the client opens (SYN_STREAM), each
 * with a `streamType` header, each answered SYN_REPLY (`k8s.io/streaming` `httpstream/spdy` over
 * Go's `moby/spdystream`, which kube-apiserver, client-go and the CRI streaming servers speak).
 *
 * The framing is `spdy-transport`'s, with settings around it so that Go's side can talk to it; each
 * reaches into the library's state, there being no option for it:
 * - spdystream never sends WINDOW_UPDATE (it ignores flow control both ways), so a sender keeping to
 *   SPDY/3's 64 KiB initial window would stall after 64 KiB: the send windows never run out. What
 *   bounds memory is the socket: write with back-pressure (a stream's `write` returns false).
 * - spdystream's SYN_STREAMs carry only Kubernetes headers (`streamtype`, `port`, `requestid`), no
 *   `:method` or `:path`, which spdy-transport's parser refuses as a broken HTTP request and then
 *   drops the connection: a stream without them is given placeholder ones.
 */
export const SPDY_31 = 'SPDY/3.1';

/** A client's receive window: 1 GiB, never drained in practice (see `SpdyConnectionOptions.receiveWindow`). */
const CLIENT_RECEIVE_WINDOW = 2 ** 30;

/** The never-empty send window (see `SPDY_31`). */
function unbounded(side: { isEmpty(): boolean }): void {
  side.isEmpty = () => false;
}

/** Makes a stream's send window never run out (see `SPDY_31`); for streams either side opened. */
export function unboundedStream(stream: SpdyStream): SpdyStream {
  unbounded(stream._spdyState.window.send);
  return stream;
}

/** What `spdyConnection` takes: which side this is, how many streams, and the receive window. */
export interface SpdyConnectionOptions {
  readonly isServer: boolean;
  /** The most streams open at once (spdy-transport's own bound). */
  readonly maxStreams?: number;
  /**
   * The receive window announced, and after which a WINDOW_UPDATE is sent: spdy-transport's 64 KiB
   * unless given. A peer that keeps to it (another spdy-transport) stops when a stream is not read;
   * a Go peer ignores it. `dialSpdy` gives 1 GiB, so that none is ever sent to a Go server: each
   * would be bytes it may leave unread, and closing with them unread resets the connection (the
   * kernel then drops what it had not yet handed over).
   */
  readonly receiveWindow?: number;
}

/** A SPDY/3.1 connection over `socket` (what follows a 101, or a tunnel's bytes), set for Go's spdystream. */
export function spdyConnection(socket: Duplex, options: SpdyConnectionOptions): SpdyConnection {
  // SPDY/3.1 frames say version 3: `autoSpdy31` keeps the receive window open for a peer that keeps
  // to SPDY/3.1's flow control (spdystream does not care either way).
  const settings: ConnectionOptions = {
    protocol: 'spdy',
    isServer: options.isServer,
    ...(options.receiveWindow === undefined ? {} : { windowSize: options.receiveWindow }),
    ...(options.maxStreams === undefined ? {} : { maxStreams: options.maxStreams }),
    autoSpdy31: true,
  };
  const connection = transport.connection.create(socket, settings) as SpdyConnection;
  const state = connection._spdyState;
  if (socket instanceof HoldableSocket) socket.closeAfter(new Promise((resolve) => state.parser.once('finish', () => resolve())));
  unbounded(state.window.send);
  unbounded(state.streamWindow.send);
  const parser = state.parser;
  const parseKVs = parser.parseKVs.bind(parser);
  parser.parseKVs = (buffer, callback) =>
    parseKVs(buffer, (error, headers) =>
      callback(error, headers === undefined ? headers : { ':method': 'POST', ':path': '/', ...headers }),
    );
  if (!options.isServer) connection.start(3.1);
  return connection;
}

/** Why a dial failed: the server's answer (status and body), or that it could not be reached. */
export class SpdyDialError extends Error {
  constructor(
    message: string,
    /** The HTTP status the server answered with instead of 101; undefined when it did not answer. */
    readonly status?: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** A SPDY connection a client dialled: the connection, the protocol the server chose, and the socket under it. */
export interface DialledSpdy {
  readonly connection: SpdyConnection;
  readonly protocol: string;
  readonly socket: Socket;
  /** Stops reading the connection (every stream) until the returned function is called. */
  hold(): () => void;
  /**
   * Opens a stream with these headers (`streamType`, …), its send window unbounded; resolves once
   * the SYN_STREAM was sent (data the server writes to it can come before its SYN_REPLY).
   */
  open(headers: Record<string, string>): Promise<SpdyStream>;
}

/** The most bytes of an answer's head read before it is given up on. */
const MAX_HEAD = 64 * 1024;

/**
 * Dials `url` (`http://`; what a CRI runtime's `Exec`/`Attach`/`PortForward` gives), upgrades to
 * SPDY/3.1 offering `protocols` (`X-Stream-Protocol-Version`, in order), and starts a client
 * connection. Rejects with a `SpdyDialError` when the server cannot be reached, does not answer
 * within `timeoutMs`, or answers anything but 101 (with its status and body).
 */
export function dialSpdy(url: string, protocols: readonly string[], timeoutMs: number): Promise<DialledSpdy> {
  const target = new URL(url);
  if (target.protocol !== 'http:') return Promise.reject(new SpdyDialError(`cannot dial ${url}: only http:// is dialled`));
  return new Promise((resolve, reject) => {
    const socket = connectTcp({ host: target.hostname.replace(/^\[|\]$/g, ''), port: Number(target.port || 80) });
    let head = Buffer.alloc(0);
    const timer = setTimeout(() => fail(new SpdyDialError(`${url} did not answer the upgrade within ${timeoutMs} ms`)), timeoutMs);
    const fail = (error: SpdyDialError) => {
      clearTimeout(timer);
      socket.off('data', onData);
      socket.destroy();
      reject(error);
    };
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end === -1) {
        if (head.length > MAX_HEAD) fail(new SpdyDialError(`${url} answered a head longer than ${MAX_HEAD} bytes`));
        return;
      }
      clearTimeout(timer);
      socket.off('data', onData);
      socket.pause();
      const lines = head.subarray(0, end).toString('latin1').split('\r\n');
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '')?.[1] ?? 0);
      const rest = head.subarray(end + 4);
      if (status !== 101) {
        // The body says why (a 404 for an unknown or used token, a 400 for bad options).
        const body = rest.toString('utf8').trim().slice(0, 300);
        fail(new SpdyDialError(`${url} answered ${lines[0] ?? '?'}${body === '' ? '' : `: ${body}`}`, status || undefined));
        return;
      }
      const header = (name: string) =>
        lines
          .slice(1)
          .find((l) => l.toLowerCase().startsWith(`${name}:`))
          ?.slice(name.length + 1)
          .trim();
      const protocol = header('x-stream-protocol-version') ?? '';
      socket.setNoDelay(true);
      if (rest.length > 0) socket.unshift(rest);
      const held = new HoldableSocket(socket);
      const connection = spdyConnection(held, { isServer: false, receiveWindow: CLIENT_RECEIVE_WINDOW });
      connection.on('error', () => held.destroy());
      socket.on('error', () => undefined);
      socket.resume();
      resolve({
        connection,
        protocol,
        socket,
        hold: () => held.hold(),
        open: (headers) =>
          new Promise<SpdyStream>((done, refused) => {
            const stream = connection.request(
              // Both ways: spdy-transport's default is a stream it neither reads nor writes.
              { method: 'POST', path: '/', headers, readable: true, writable: true },
              (error, opened) => (error === null ? done(opened) : refused(error)),
            );
            unboundedStream(stream);
            // spdystream's SYN_REPLY has no `:status`, which spdy-transport would take for a broken
            // HTTP answer and reset the stream: the reply is taken as headers instead.
            stream._spdyState.needResponse = false;
          }),
      });
    };
    socket.on('data', onData);
    socket.once('error', (error) => fail(new SpdyDialError(`${url} cannot be reached (${error.message})`, undefined, { cause: error })));
    socket.once('connect', () =>
      socket.write(
        [
          `POST ${target.pathname}${target.search} HTTP/1.1`,
          `Host: ${target.host}`,
          'Connection: Upgrade',
          `Upgrade: ${SPDY_31}`,
          ...protocols.map((p) => `X-Stream-Protocol-Version: ${p}`),
          'Content-Length: 0',
          '',
          '',
        ].join('\r\n'),
      ),
    );
  });
}
