import { Readable, Writable } from 'node:stream';
import { KubeletError, type SessionEnd, type StreamOptions, type StreamSession } from '@kubelet-ts/core';
import { SpdyDialError, dialSpdy, type DialledSpdy, type SpdyStream } from '@kubelet-ts/spdy';
import type { RemoteStatus, StreamEnding } from './cri-stream-session.js';
import { ADAPTER } from './errors.js';

/** The protocol asked of the runtime's streaming server over SPDY (containerd 1.6 serves v4 to v1). */
const PROTOCOL = 'v4.channel.k8s.io';
/** What an output stream holds before the connection stops being read. */
const OUTPUT_HIGH_WATER_MARK = 128 * 1024;

/**
 * An exec or attach session with stdin and no terminal, over SPDY/3.1 to the runtime's streaming
 * server, as the kubelet reaches it: each of the session's streams is a SPDY stream of its own, so
 * that the end of stdin is said by closing its stream (`stdin.end()`: the process reads end-of-file),
 * which a WebSocket `v4.channel.k8s.io` session cannot say (`CriStreamSession`). `kubectl exec -i …
 * < file` and `kubectl cp` into a container need it. The streams are opened as client-go opens them:
 * error first, then stdin, stdout, stderr; the session ends when the runtime closes the error stream
 * (its `metav1.Status` is `ending`'s) and the output streams have ended.
 */
export class CriSpdySession implements StreamSession {
  readonly stdin: Writable | undefined;
  readonly stdout: Readable | undefined;
  readonly stderr: Readable | undefined;
  readonly done: Promise<SessionEnd>;
  private closedByCaller = false;
  /** Outputs that are full, each holding the connection (not read until none is). */
  private readonly full = new Map<Readable, () => void>();

  private constructor(
    private readonly dialled: DialledSpdy,
    streams: { error: SpdyStream; stdin?: SpdyStream; stdout?: SpdyStream; stderr?: SpdyStream },
    ending: (how: StreamEnding) => Promise<SessionEnd> | SessionEnd,
  ) {
    this.stdout = streams.stdout === undefined ? undefined : this.output(streams.stdout);
    this.stderr = streams.stderr === undefined ? undefined : this.output(streams.stderr);
    this.stdin = streams.stdin === undefined ? undefined : this.input(streams.stdin);
    let statusText = '';
    streams.error.setEncoding('utf8').on('data', (text: string) => (statusText += text));
    const ended = (stream: Readable | undefined) =>
      stream === undefined || stream.readableEnded || stream.destroyed
        ? Promise.resolve()
        : new Promise<void>((resolve) => stream.once('end', resolve).once('close', resolve));
    // The connection's close, which comes once what was read before the socket closed was handled.
    const gone = new Promise<void>((resolve) => dialled.connection.once('close', () => resolve()));
    const statusRead = new Promise<void>((resolve) => streams.error.once('end', resolve).once('close', resolve));
    this.done = Promise.race([Promise.all([statusRead, ended(streams.stdout), ended(streams.stderr)]), gone])
      .then(async () => {
        const how: StreamEnding = { status: statusOf(statusText), closedByCaller: this.closedByCaller };
        this.dialled.connection.end();
        // The runtime closes the connection at GOAWAY; a server that does not, is let go after a while.
        setTimeout(() => this.dialled.socket.destroy(), 2_000).unref();
        return await ending(how);
      })
      .catch((error: unknown) => ({ exitCode: undefined, message: (error as Error).message }));
  }

  /** Dials the URL the runtime gave and opens the session's streams; `Unavailable` when the server refuses. */
  static async open(
    url: string,
    what: string,
    options: StreamOptions,
    timeoutMs: number,
    ending: (how: StreamEnding) => Promise<SessionEnd> | SessionEnd,
  ): Promise<CriSpdySession> {
    let dialled: DialledSpdy;
    try {
      dialled = await dialSpdy(url, [PROTOCOL], timeoutMs);
    } catch (error) {
      const why = error instanceof SpdyDialError ? error.message : String(error);
      throw new KubeletError('Unavailable', `${what}: the runtime's streaming server ${why}`, { adapter: ADAPTER, cause: error });
    }
    try {
      const open = (streamType: string) => dialled.open({ streamtype: streamType });
      const error = await open('error');
      const stdin = options.stdin ? await open('stdin') : undefined;
      const stdout = options.stdout ? await open('stdout') : undefined;
      const stderr = options.stderr && !options.tty ? await open('stderr') : undefined;
      return new CriSpdySession(
        dialled,
        {
          error,
          ...(stdin === undefined ? {} : { stdin }),
          ...(stdout === undefined ? {} : { stdout }),
          ...(stderr === undefined ? {} : { stderr }),
        },
        ending,
      );
    } catch (error) {
      dialled.socket.destroy();
      throw new KubeletError('Unavailable', `${what}: the runtime's streaming server refused its streams (${(error as Error).message})`, {
        adapter: ADAPTER,
        cause: error,
      });
    }
  }

  /** No terminal, nothing to size. */
  async resize(): Promise<void> {}

  close(): void {
    if (this.closedByCaller || this.dialled.socket.destroyed) return;
    this.closedByCaller = true;
    for (const stream of [this.stdin, this.stdout, this.stderr]) stream?.destroy();
    // At once: the server sees the connection end and lets go of its side.
    this.dialled.socket.destroy();
  }

  /** The stream's bytes as a Readable; a full one stops the connection being read until it is read. */
  private output(stream: SpdyStream): Readable {
    const out: Readable = new Readable({
      highWaterMark: OUTPUT_HIGH_WATER_MARK,
      read: () => {
        this.full.get(out)?.();
        this.full.delete(out);
      },
    });
    stream.on('data', (chunk: Buffer) => {
      if (out.destroyed) return;
      if (!out.push(chunk) && !this.full.has(out)) this.full.set(out, this.dialled.hold());
    });
    stream.once('end', () => out.push(null));
    stream.once('close', () => {
      if (!out.readableEnded) out.push(null);
    });
    return out;
  }

  /** Writes go to the stdin stream, each once the one before is in the socket; `end()` closes it: end-of-file. */
  private input(stream: SpdyStream): Writable {
    return new Writable({
      write: (chunk: Buffer, _encoding, callback) => {
        if (stream.destroyed || stream.writableEnded) return callback();
        if (stream.write(chunk)) callback();
        else stream.once('drain', () => callback());
      },
      final: (callback) => {
        if (stream.destroyed || stream.writableEnded) return callback();
        stream.end(() => callback());
      },
    });
  }
}

function statusOf(text: string): RemoteStatus | undefined {
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as RemoteStatus;
  } catch {
    return { status: 'Failure', message: text };
  }
}
