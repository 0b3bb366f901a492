import { Readable, Writable, type Duplex } from 'node:stream';
import type { SessionEnd, StreamOptions, StreamSession, TerminalSize } from '@kubelet-ts/core';
import { dockerDetail } from './errors.js';

/** The multiplexed stream's header: [stream, 0, 0, 0, size (uint32, big-endian)], then `size` bytes. */
const HEADER = 8;
const STDOUT = 1;
const STDERR = 2;
/** The terminal's end-of-file character (VEOF, ^D). */
const EOT = Buffer.from([0x04]);
/** How much of the output is kept to find the engine's words when it could not start the process. */
const HEAD_BYTES = 4096;
/**
 * What Podman 4.3 adds on stderr as a session ends, when conmon's attach socket is closed under it
 * (a whole frame of its own): not the process's output.
 */
const PODMAN_ATTACH_NOISE = /^Error: read unixpacket @->\/proc\/self\/fd\/\d+\/attach: read: connection reset by peer\n$/;
const NOISE_MAX = 160;

export interface DockerSessionOptions {
  /** The upgraded connection: stdin goes to it, output comes from it. */
  readonly socket: Duplex;
  readonly options: StreamOptions;
  /** Whether the engine sends the output raw (the process has a terminal) or multiplexed. */
  readonly raw: boolean;
  /** Whether the engine takes the caller's stdin (an attach to a container without an open stdin does not). */
  readonly stdinAtEngine: boolean;
  /** Podman: its attach noise is left out of stderr. */
  readonly podman: boolean;
  /** Sets the terminal's size (called with `tty` only). */
  readonly resize: (size: TerminalSize) => Promise<void>;
  /**
   * How it ended, asked once the output has ended: `closed` when `close()` came first. Given what
   * the output began with, where an engine writes why a process could not start.
   */
  readonly end: (closed: boolean, head: string) => Promise<SessionEnd>;
}

/**
 * One exec or attach session over an upgraded (hijacked) connection to the engine. Without a
 * terminal the engine multiplexes stdout and stderr in frames, taken apart here; with one, the
 * bytes are the terminal's output. Back-pressure runs both ways: an output that is not read
 * pauses the connection (the engine's pipe, then the process, wait), and stdin takes a write only
 * as fast as the connection does.
 */
export class DockerSession implements StreamSession {
  readonly stdin: Writable | undefined;
  readonly stdout: Readable | undefined;
  readonly stderr: Readable | undefined;
  readonly done: Promise<SessionEnd>;
  private readonly socket: Duplex;
  private readonly blocked = new Set<Readable>();
  private header: Buffer = Buffer.alloc(0);
  private frame: { readonly target: Readable | undefined; left: number; held: Buffer[] | undefined } | undefined;
  private head = '';
  private closed = false;
  private over = false;
  private broken: string | undefined;

  constructor(private readonly config: DockerSessionOptions) {
    const { socket, options } = config;
    this.socket = socket;
    this.stdout = options.stdout ? this.output() : undefined;
    this.stderr = options.stderr && !options.tty ? this.output() : undefined;
    this.stdin = options.stdin ? this.input() : undefined;
    socket.on('data', (chunk: Buffer) => (config.raw ? this.deliver(this.stdout, chunk) : this.demultiplex(chunk)));
    socket.on('error', (error: unknown) => {
      if (!this.closed) this.broken = dockerDetail(error);
    });
    this.done = new Promise<void>((resolve) => {
      socket.once('end', resolve);
      socket.once('close', resolve);
    }).then(() => this.finish());
  }

  async resize(size: TerminalSize): Promise<void> {
    if (!this.config.options.tty || this.over) return;
    await this.config.resize(size);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.socket.destroy();
    this.stdin?.destroy();
  }

  private output(): Readable {
    const stream: Readable = new Readable({ read: () => this.unblock(stream) });
    // A reader that destroys its stream reads no more: what comes for it is dropped (`deliver`).
    stream.once('close', () => this.unblock(stream));
    return stream;
  }

  /** The caller's stdin: written through to the connection, or dropped when the engine takes none. */
  private input(): Writable {
    const { socket, stdinAtEngine, options } = this.config;
    return new Writable({
      write: (chunk: Buffer, _encoding, callback) => {
        // What is written after the connection has gone is dropped, as a pipe's reader that has
        // exited takes nothing: an error here would only reach a caller that no longer listens.
        if (!stdinAtEngine || this.over || socket.writableEnded || socket.destroyed) return callback();
        socket.write(chunk, () => callback());
      },
      final: (callback) => {
        if (!stdinAtEngine || this.over || socket.writableEnded || socket.destroyed) return callback();
        // On a terminal, end-of-file is its ^D: neither engine makes one of a closed connection
        // (Docker ends the whole session, output and all; Podman keeps the process waiting).
        if (options.tty) return void socket.write(EOT, () => callback());
        // Without one, a half-close: the engine closes the process's stdin and the output goes on.
        socket.end();
        callback();
      },
    });
  }

  /** Frames of `[stream, 0, 0, 0, size]` + payload, split anywhere across chunks; each payload passed on as it comes. */
  private demultiplex(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length) {
      if (this.frame === undefined) {
        const need = HEADER - this.header.length;
        this.header = Buffer.concat([this.header, chunk.subarray(at, at + need)]);
        at += need;
        if (this.header.length < HEADER) return;
        const kind = this.header[0];
        const size = this.header.readUInt32BE(4);
        this.header = Buffer.alloc(0);
        if (size === 0) continue;
        const target =
          kind === STDOUT || (kind === STDERR && this.config.options.tty) ? this.stdout : kind === STDERR ? this.stderr : undefined;
        // A short stderr frame on Podman is held whole, to know whether it is its noise.
        const held = this.config.podman && kind === STDERR && size <= NOISE_MAX ? [] : undefined;
        this.frame = { target, left: size, held };
        continue;
      }
      const frame = this.frame;
      const part = chunk.subarray(at, at + frame.left);
      at += part.length;
      frame.left -= part.length;
      if (frame.left === 0) this.frame = undefined;
      if (frame.held === undefined) this.deliver(frame.target, part);
      else {
        frame.held.push(part);
        if (frame.left > 0) continue;
        const whole = Buffer.concat(frame.held);
        if (!PODMAN_ATTACH_NOISE.test(whole.toString('latin1'))) this.deliver(frame.target, whole);
      }
    }
  }

  /** Output for `target` (`undefined`: asked for by nobody, dropped); a full reader pauses the connection. */
  private deliver(target: Readable | undefined, bytes: Buffer): void {
    if (this.head.length < HEAD_BYTES) this.head += bytes.subarray(0, HEAD_BYTES - this.head.length).toString('utf8');
    if (target === undefined || target.readableEnded || target.destroyed) return;
    if (!target.push(bytes)) {
      this.blocked.add(target);
      this.socket.pause();
    }
  }

  private unblock(stream: Readable): void {
    if (!this.blocked.delete(stream) || this.blocked.size > 0) return;
    this.socket.resume();
  }

  private async finish(): Promise<SessionEnd> {
    this.over = true;
    this.stdout?.push(null);
    this.stderr?.push(null);
    this.socket.destroy();
    let end: SessionEnd;
    try {
      end = await this.config.end(this.closed, this.head);
    } catch (error) {
      end = { exitCode: undefined, message: `the session's end could not be read from the engine: ${dockerDetail(error)}` };
    }
    if (this.broken === undefined || end.message !== undefined) return end;
    return { ...end, message: `the engine's stream broke: ${this.broken}` };
  }
}

/**
 * The engine's words for a process it could not start, from what the output began with: both
 * engines write them there (Docker `OCI runtime exec failed: … executable file not found in
 * $PATH: unknown` on stdout, Podman `Error: runc: exec failed: … OCI runtime attempted to invoke a
 * command that was not found` on stderr), not in the exec's inspect.
 */
export function engineStartFailure(head: string): string | undefined {
  const line = head.split(/\r?\n/).find((l) => /OCI runtime/.test(l));
  return line?.replace(/^Error: /, '').trim();
}
