import type { EventEmitter } from 'node:events';
import type { Duplex } from 'node:stream';

// The part of `spdy-transport` (3.x, which publishes no types) that is used here: a SPDY connection
// over a byte stream, and its streams as Duplexes; its private state where @kubelet-ts/spdy sets it.

/** One side of spdy-transport's flow-control window (its private state, which `spdyConnection` sets). */
export interface SpdyWindowSide {
  isEmpty(): boolean;
  setMax(max: number): void;
  current: number;
}

/** A SPDY stream of spdy-transport: a Duplex with its id, its headers and the frames that answer or reset it. */
export interface SpdyStream extends Duplex {
  readonly id: number;
  /** The SYN_STREAM's headers, names lower-cased. */
  readonly headers: Record<string, string>;
  /** SYN_REPLY (a server's answer to a stream the client opened). */
  respond(status: number, headers: Record<string, string>, callback?: (error?: Error) => void): void;
  /** RST_STREAM with `code` (`CANCEL` by default: `REFUSED_STREAM`, `PROTOCOL_ERROR`, …). */
  abort(code?: string, callback?: () => void): void;
  _spdyState: { window: { send: SpdyWindowSide }; needResponse?: boolean };
}

/** A SPDY connection of spdy-transport over one socket: streams opened and accepted, then GOAWAY. */
export interface SpdyConnection extends EventEmitter {
  /** GOAWAY, then the socket is let go once the streams are closed. */
  end(callback?: () => void): void;
  /** Client side: opens a stream (SYN_STREAM). */
  request(
    options: { method: string; path: string; host?: string; headers: Record<string, string>; readable?: boolean; writable?: boolean },
    callback: (error: Error | null, stream: SpdyStream) => void,
  ): SpdyStream;
  start(version: number): void;
  ping(callback: (error: Error | null) => void): void;
  _spdyState: {
    window: { send: SpdyWindowSide };
    streamWindow: { send: SpdyWindowSide };
    parser: {
      parseKVs(buffer: unknown, callback: (error: Error | null, headers?: Record<string, string>) => void): void;
      /** The parser is a Writable: `finish` once every byte written to it was handled. */
      once(event: 'finish', listener: () => void): void;
    };
    stream: { count: number };
    /** Frames queued (`count`), and written out but not yet taken by the socket (`readableLength`). */
    framer: { count: number; readableLength: number };
  };
}

/** What spdy-transport's `connection.create` takes, as `spdyConnection` fills it. */
export interface ConnectionOptions {
  protocol: 'spdy';
  isServer: boolean;
  maxStreams?: number;
  /** A server also sends connection-level WINDOW_UPDATEs (SPDY/3.1's) to a client that said it was 3 (as Go's framer does). */
  autoSpdy31?: boolean;
  windowSize?: number;
  headerCompression?: boolean;
}
