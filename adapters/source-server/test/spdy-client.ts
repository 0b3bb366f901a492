/// <reference path="../../../packages/spdy/src/spdy-transport.d.ts" />
import { connect } from 'node:net';
import { Duplex, Transform, type TransformCallback } from 'node:stream';
import type { SpdyConnection, SpdyStream } from '@kubelet-ts/spdy';
import transport from 'spdy-transport';

/** What the server answered to an upgrade that it refused. */
export interface Refusal {
  readonly status: number;
  readonly headers: string;
  readonly body: string;
}

/** A SPDY client connection (spdy-transport in client mode), and the protocol the server chose. */
export interface SpdyClient {
  readonly connection: SpdyConnection;
  readonly socket: Duplex;
  readonly protocol: string | undefined;
  /** Resolves when the socket closed. */
  readonly closed: Promise<void>;
  /** How many WINDOW_UPDATE frames the client did not send (with `dropWindowUpdates`). */
  windowUpdatesDropped(): number;
  /** Opens a stream with these headers and waits for its SYN_REPLY (rejects on RST_STREAM or 5 s). */
  open(headers: Record<string, string>): Promise<SpdyStream>;
}

/**
 * Drops the WINDOW_UPDATE frames a client sends, as Go's spdystream never sends any: what the
 * server sends must then not wait for one.
 */
class DropWindowUpdates extends Transform {
  private pending = Buffer.alloc(0);
  dropped = 0;
  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.pending = Buffer.concat([this.pending, chunk]);
    while (this.pending.length >= 8) {
      const length = this.pending.readUIntBE(5, 3);
      if (this.pending.length < 8 + length) break;
      const frame = this.pending.subarray(0, 8 + length);
      this.pending = this.pending.subarray(8 + length);
      const control = (frame[0]! & 0x80) !== 0;
      if (control && frame.readUInt16BE(2) === 9) this.dropped += 1;
      else this.push(frame);
    }
    callback();
  }
}

/** The client's side of a socket, its writes through `filter`. */
function filtered(socket: Duplex, filter: Transform): Duplex {
  filter.pipe(socket);
  const duplex = new Duplex({
    read() {
      socket.resume();
    },
    write(chunk: Buffer, _encoding, callback) {
      filter.write(chunk, () => callback());
    },
    final(callback) {
      filter.end();
      callback();
    },
    destroy(error, callback) {
      socket.destroy();
      callback(error);
    },
  });
  socket.on('data', (chunk: Buffer) => {
    if (!duplex.push(chunk)) socket.pause();
  });
  socket.once('end', () => duplex.push(null));
  socket.once('close', () => duplex.destroy());
  return duplex;
}

/** Speaks SPDY (client side) over `socket`; `head` is what came past the 101. */
export function spdyOver(socket: Duplex, protocol: string | undefined, options: { dropWindowUpdates?: boolean } = {}): SpdyClient {
  const drop = new DropWindowUpdates();
  const wire = options.dropWindowUpdates === true ? filtered(socket, drop) : socket;
  const connection = transport.connection.create(wire, { protocol: 'spdy', isServer: false }) as SpdyConnection;
  connection.on('error', () => undefined);
  connection.start(3.1);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return {
    connection,
    socket,
    protocol,
    closed,
    windowUpdatesDropped: () => drop.dropped,
    open: (headers) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no SYN_REPLY to ${JSON.stringify(headers)} within 5 s`)), 5_000);
        const stream = connection.request({ method: 'POST', path: '/', headers }, (error) => {
          if (error !== null) {
            clearTimeout(timer);
            reject(error);
          }
        });
        stream.once('response', () => {
          clearTimeout(timer);
          resolve(stream);
        });
        stream.once('close', () => {
          clearTimeout(timer);
          reject(new Error(`stream ${JSON.stringify(headers)} closed before its reply`));
        });
        stream.on('error', () => undefined);
      }),
  };
}

/**
 * Sends an upgrade to SPDY/3.1 for `path` on the server at `url`, with `headers`; resolves with the
 * client when the server answered 101, rejects with the `Refusal` otherwise.
 */
export function spdyUpgrade(
  url: string,
  path: string,
  headers: Record<string, string>,
  options: { dropWindowUpdates?: boolean; method?: string } = {},
): Promise<SpdyClient> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    socket.once('error', reject);
    socket.once('connect', () => {
      const lines = [
        `${options.method ?? 'POST'} ${path} HTTP/1.1`,
        `Host: ${hostname}:${port}`,
        'Connection: Upgrade',
        'Upgrade: SPDY/3.1',
        ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
      ];
      socket.write(`${lines.join('\r\n')}\r\n\r\n`);
    });
    let got = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      got = Buffer.concat([got, chunk]);
      const end = got.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = got.subarray(0, end).toString('latin1');
      const status = Number(head.split(' ')[1]);
      if (status !== 101) {
        // The rest is the body, to the end of the connection.
        socket.off('data', onData);
        let body = got.subarray(end + 4);
        socket.on('data', (more: Buffer) => (body = Buffer.concat([body, more])));
        socket.once('close', () => reject(Object.assign(new Error(head), { status, headers: head, body: body.toString('utf8') })));
        return;
      }
      socket.off('data', onData);
      socket.pause();
      const rest = got.subarray(end + 4);
      if (rest.length > 0) socket.unshift(rest);
      const protocol = /\r\nx-stream-protocol-version: *([^\r]*)/i.exec(head)?.[1];
      resolve(spdyOver(socket, protocol, options));
    };
    socket.on('data', onData);
  });
}

/** Everything a stream gives, as text, once it ended (or closed). */
export function readAll(stream: Duplex): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    const done = () => resolve(Buffer.concat(chunks).toString('latin1'));
    stream.once('end', done);
    stream.once('close', done);
  });
}

/**
 * A WebSocket client, by hand, offering `protocol` (which `ws` refuses to offer: a '/' is not a
 * token character), whose binary messages carry a byte stream: client-go's tunnelling connection.
 * Resolves with the byte stream and the subprotocol the server chose.
 */
export function tunnel(
  url: string,
  path: string,
  protocol: string,
  headers: Record<string, string>,
): Promise<{ bytes: Duplex; protocol: string | undefined }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    socket.once('error', reject);
    socket.once('connect', () => {
      const lines = [
        `GET ${path} HTTP/1.1`,
        `Host: ${hostname}:${port}`,
        'Connection: Upgrade',
        'Upgrade: websocket',
        'Sec-WebSocket-Version: 13',
        `Sec-WebSocket-Key: ${Buffer.from('0123456789abcdef').toString('base64')}`,
        `Sec-WebSocket-Protocol: ${protocol}`,
        ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
      ];
      socket.write(`${lines.join('\r\n')}\r\n\r\n`);
    });
    let got = Buffer.alloc(0);
    const onHead = (chunk: Buffer) => {
      got = Buffer.concat([got, chunk]);
      const end = got.indexOf('\r\n\r\n');
      if (end < 0) return;
      socket.off('data', onHead);
      const head = got.subarray(0, end).toString('latin1');
      if (!head.startsWith('HTTP/1.1 101')) {
        socket.destroy();
        reject(new Error(head));
        return;
      }
      let pending = got.subarray(end + 4);
      const bytes = new Duplex({
        read() {
          socket.resume();
        },
        write(chunk: Buffer, _encoding, callback) {
          // A masked binary frame (a client's frames are masked).
          const mask = Buffer.from([1, 2, 3, 4]);
          const size = chunk.length;
          const header =
            size < 126
              ? Buffer.from([0x82, 0x80 | size])
              : size < 65536
                ? Buffer.from([0x82, 0x80 | 126, size >> 8, size & 0xff])
                : Buffer.concat([
                    Buffer.from([0x82, 0x80 | 127]),
                    (() => {
                      const b = Buffer.alloc(8);
                      b.writeBigUInt64BE(BigInt(size));
                      return b;
                    })(),
                  ]);
          const body = Buffer.from(chunk.map((byte, i) => byte ^ mask[i % 4]!));
          socket.write(Buffer.concat([header, mask, body]), () => callback());
        },
        final(callback) {
          socket.end(Buffer.from([0x88, 0x82, 1, 2, 3, 4, 0x03 ^ 1, 0xe8 ^ 2]));
          callback();
        },
        destroy(error, callback) {
          socket.destroy();
          callback(error);
        },
      });
      const parse = () => {
        for (;;) {
          if (pending.length < 2) return;
          let length = pending[1]! & 0x7f;
          let at = 2;
          if (length === 126) {
            if (pending.length < 4) return;
            length = pending.readUInt16BE(2);
            at = 4;
          } else if (length === 127) {
            if (pending.length < 10) return;
            length = Number(pending.readBigUInt64BE(2));
            at = 10;
          }
          if (pending.length < at + length) return;
          const opcode = pending[0]! & 0x0f;
          const payload = pending.subarray(at, at + length);
          pending = pending.subarray(at + length);
          if (opcode === 0x2 || opcode === 0x0) {
            if (!bytes.push(payload)) socket.pause();
          } else if (opcode === 0x8) {
            bytes.push(null);
          }
        }
      };
      socket.on('data', (chunk: Buffer) => {
        pending = Buffer.concat([pending, chunk]);
        parse();
      });
      socket.once('close', () => bytes.destroy());
      parse();
      resolve({ bytes, protocol: /\r\nsec-websocket-protocol: *([^\r]*)/i.exec(head)?.[1] });
    };
    socket.on('data', onHead);
  });
}
