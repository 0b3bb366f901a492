import { Readable, Writable } from 'node:stream';
import type { SessionEnd, StreamOptions, StreamSession, TerminalSize } from '@kubelet-ts/core';
import WebSocket from 'ws';
import { frame, roundTrip, type OpenStream } from './cri-stream-socket.js';

// The remotecommand channels (k8s `remotecommand` v4 over `channel.k8s.io`).
const STDIN = 0;
const STDOUT = 1;
const STDERR = 2;
const STATUS = 3;
const RESIZE = 4;

/** A terminal's end-of-file character (^D), and the line ends after which one is enough. */
const EOT = 0x04;
const LINE_ENDS = new Set([0x0a, 0x0d]);
/** The longest `resize()` waits for the runtime to read the size (it reads stdin first, in order). */
const RESIZE_WAIT_MS = 2_000;
/** What an output stream holds before the connection stops being read (the server sends ~32 KiB at a time). */
const OUTPUT_HIGH_WATER_MARK = 128 * 1024;

/** What the runtime says on the status channel as the session ends: a Kubernetes `metav1.Status`. */
export interface RemoteStatus {
  readonly status?: string;
  readonly message?: string;
  readonly reason?: string;
  readonly details?: { readonly causes?: ReadonlyArray<{ readonly reason?: string; readonly message?: string }> };
}

/** How a session's connection ended: the runtime's status, if it sent one, and whether `close()` ended it. */
export interface StreamEnding {
  readonly status: RemoteStatus | undefined;
  readonly closedByCaller: boolean;
}

/**
 * An exec or attach session on a connection to the runtime's streaming server. Output channels
 * are Node streams: when one is full (its reader is slow) the connection stops being read, so TCP
 * stops the server, whose pipe then stops the process — nothing piles up here. It reads again once
 * every output stream is below its high-water mark.
 *
 * `stdin.end()` is end-of-file for the process only with `tty`: it sends the terminal's EOF
 * character (^D, twice after a partial line), as a person at the terminal would. Without `tty` it
 * cannot be said: `v4.channel.k8s.io` has no way to close one channel, and closing the connection
 * ends the whole session (output and exit status lost); so the process keeps its stdin open until
 * the session ends (it exits, or `close()`).
 */
export class CriStreamSession implements StreamSession {
  readonly stdin: Writable | undefined;
  readonly stdout: Readable | undefined;
  readonly stderr: Readable | undefined;
  readonly done: Promise<SessionEnd>;
  private readonly ws: WebSocket;
  private closedByCaller = false;
  private statusText = '';
  /** The last byte sent to stdin: after a partial line, a terminal needs two ^D for end-of-file. */
  private lastInput = 0x0a;

  constructor(
    stream: OpenStream,
    private readonly options: StreamOptions,
    ending: (how: StreamEnding) => Promise<SessionEnd> | SessionEnd,
  ) {
    this.ws = stream.ws;
    this.stdout = options.stdout ? this.output() : undefined;
    this.stderr = options.stderr && !options.tty ? this.output() : undefined;
    this.stdin = options.stdin ? this.input() : undefined;
    this.done = new Promise<StreamEnding>((resolve) =>
      stream.listen(
        (data) => this.receive(data),
        () => {
          for (const out of [this.stdout, this.stderr]) if (out !== undefined && !out.destroyed) out.push(null);
          resolve({ status: this.status(), closedByCaller: this.closedByCaller });
        },
      ),
    )
      .then(async (how): Promise<SessionEnd> => await ending(how))
      // `done` never rejects: a failure to learn the exit code leaves it unknown.
      .catch((error: unknown) => ({ exitCode: undefined, message: (error as Error).message }));
    if (options.tty && options.size !== undefined && this.ws.readyState === WebSocket.OPEN) this.ws.send(resizeFrame(options.size));
  }

  /**
   * Sends the size; resolves once the runtime has read it (it sets it on the terminal a moment
   * after: the protocol has no answer for it), or after RESIZE_WAIT_MS if it is not reading.
   */
  async resize(size: TerminalSize): Promise<void> {
    if (!this.options.tty || this.ws.readyState !== WebSocket.OPEN) return;
    this.ws.send(resizeFrame(size));
    await roundTrip(this.ws, RESIZE_WAIT_MS);
  }

  close(): void {
    if (this.closedByCaller || this.ws.readyState === WebSocket.CLOSED) return;
    this.closedByCaller = true;
    for (const stream of [this.stdin, this.stdout, this.stderr]) stream?.destroy();
    // At once (no close handshake): the server sees the connection end and lets go of its side.
    this.ws.terminate();
  }

  private receive(data: Buffer): void {
    // (The server's first message, on the first output channel, is empty: "ready".)
    const body = data.subarray(1);
    if (data[0] === STDOUT) this.deliver(this.stdout, body);
    else if (data[0] === STDERR) this.deliver(this.stderr, body);
    else if (data[0] === STATUS) this.statusText += body.toString('utf8');
  }

  private deliver(stream: Readable | undefined, body: Buffer): void {
    if (stream === undefined || stream.destroyed || body.length === 0) return;
    if (!stream.push(body)) this.ws.pause();
  }

  private output(): Readable {
    return new Readable({
      highWaterMark: OUTPUT_HIGH_WATER_MARK,
      read: () => {
        if (!this.ws.isPaused) return;
        const full = [this.stdout, this.stderr].some((s) => s !== undefined && s.readableLength >= s.readableHighWaterMark);
        if (!full) this.ws.resume();
      },
    });
  }

  private input(): Writable {
    const open = () => this.ws.readyState === WebSocket.OPEN;
    return new Writable({
      // One message in flight: the next waits until this one is in the socket (TCP's back-pressure).
      write: (chunk: Buffer, _encoding, callback) => {
        if (!open() || chunk.length === 0) return callback();
        this.lastInput = chunk[chunk.length - 1]!;
        // A failed send ends the connection, which `done` reports; the writer is not failed for it.
        this.ws.send(frame(STDIN, chunk), () => callback());
      },
      final: (callback) => {
        if (!this.options.tty || !open()) return callback();
        const eof = LINE_ENDS.has(this.lastInput) ? [EOT] : [EOT, EOT];
        this.ws.send(frame(STDIN, Buffer.from(eof)), () => callback());
      },
    });
  }

  private status(): RemoteStatus | undefined {
    if (this.statusText === '') return undefined;
    try {
      return JSON.parse(this.statusText) as RemoteStatus;
    } catch {
      // An older protocol's plain text (not asked for, but said).
      return { status: 'Failure', message: this.statusText };
    }
  }
}

function resizeFrame(size: TerminalSize): Buffer {
  return frame(RESIZE, Buffer.from(JSON.stringify({ Width: size.width, Height: size.height })));
}

/**
 * An exec's end from the runtime's status: `Success` is 0, `NonZeroExitCode` carries the code
 * (cause `ExitCode`); any other failure means the command could not be run: 127 when the runtime
 * says it is not there (`executable file not found`, `no such file or directory`), 126 otherwise
 * (as a shell), with the runtime's message. No status at all: the connection broke, code unknown.
 */
export function execEnd(status: RemoteStatus | undefined): SessionEnd {
  if (status === undefined)
    return { exitCode: undefined, message: "the connection to the runtime's streaming server ended before the process did" };
  if (status.status === 'Success') return { exitCode: 0 };
  const code = status.details?.causes?.find((c) => c.reason === 'ExitCode')?.message;
  if (status.reason === 'NonZeroExitCode' && code !== undefined && /^\d+$/.test(code)) return { exitCode: Number(code) };
  const message = status.message ?? 'the runtime could not run the command';
  return { exitCode: /not found|no such file/i.test(message) ? 127 : 126, message };
}
