import { Duplex } from 'node:stream';
import { KubeletError } from '@kubelet-ts/core';
import WebSocket from 'ws';
import { frame, roundTrip, type OpenStream } from './cri-stream-socket.js';
import { ADAPTER } from './errors.js';

// Port-forward channels for the one port of a connection (`portforward.k8s.io` over `channel.k8s.io`).
const DATA = 0;
const ERROR = 1;
/** The server's first message on each channel: the port, 2 bytes little-endian. */
const PORT_PREFIX = 2;
/** How long after the runtime took in the probe an error may still be on its way (see `connectPort`). */
const SETTLE_MS = 50;

/** What the connection tells while it is being made. */
interface Watcher {
  data(): void;
  error(text: string): void;
  closed(text: string): void;
}

/**
 * One TCP connection to a port inside a sandbox, carried by a port-forward connection to the
 * runtime's streaming server. Reading is paused on the socket when the reader is slow.
 *
 * It cannot be half-closed: `end()` tells the server nothing (v4 has no way to close one channel),
 * so the connection ends when the application inside closes it (the runtime ends the WebSocket up
 * to 1 s after, when it stops waiting for the other direction) or when it is destroyed here.
 */
class PortConnection extends Duplex {
  private readonly ws: WebSocket;
  /** How much of each channel's port prefix is still to come. */
  private readonly prefixLeft = [PORT_PREFIX, PORT_PREFIX];
  private errorText = '';

  constructor(
    stream: OpenStream,
    public watcher: Watcher | undefined,
  ) {
    super({ allowHalfOpen: false });
    this.ws = stream.ws;
    stream.listen(
      (data) => this.receive(data),
      () => {
        if (this.watcher !== undefined) this.watcher.closed(this.errorText);
        else if (!this.destroyed) this.push(null);
      },
    );
  }

  override _read(): void {
    if (this.ws.isPaused) this.ws.resume();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(frame(DATA, chunk), (error) => callback(error ?? null));
    else callback(new KubeletError('Unavailable', 'port-forward: the connection was closed by the other side', { adapter: ADAPTER }));
  }

  override _final(callback: () => void): void {
    callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.ws.terminate();
    callback(error);
  }

  private receive(data: Buffer): void {
    const channel = data[0];
    if (channel !== DATA && channel !== ERROR) return;
    const skip = Math.min(this.prefixLeft[channel]!, data.length - 1);
    this.prefixLeft[channel]! -= skip;
    const body = data.subarray(1 + skip);
    if (body.length === 0) return;
    if (channel === ERROR) {
      this.errorText += body.toString('utf8');
      if (this.watcher !== undefined) this.watcher.error(this.errorText);
      else this.destroy(new KubeletError('Unavailable', `port-forward: ${this.errorText}`, { adapter: ADAPTER }));
      return;
    }
    this.watcher?.data();
    if (!this.destroyed && !this.push(body)) this.ws.pause();
  }
}

/**
 * Resolves with the connection once the runtime has connected to the port inside the sandbox's
 * network namespace; rejects with `Unavailable` when it could not (nothing listens there).
 *
 * The protocol says nothing when the runtime's connect succeeds, only when it fails (text on the
 * error channel, then it closes). So an empty message is sent on the data channel, with a ping
 * behind it: the server's reading loop hands that message to the copy toward the port, which
 * starts only once connected, and reads nothing further until it was taken; when the connect
 * failed, the message is refused and the error follows at once. The rule: bytes from the port,
 * or the pong and then SETTLE_MS with no error, mean connected; an error, or the connection ending
 * first, means not.
 */
export function connectPort(stream: OpenStream, what: string, timeoutMs: number): Promise<Duplex> {
  const { ws } = stream;
  return new Promise((resolve, reject) => {
    const timers: NodeJS.Timeout[] = [];
    // What the connection said while being made; acted on once it exists (the first messages are
    // handed to it as it is constructed).
    let outcome: KubeletError | 'connected' | undefined;
    let connection: PortConnection | undefined;
    const settle = (result: KubeletError | 'connected') => {
      outcome ??= result;
      if (connection === undefined || connection.watcher === undefined) return;
      connection.watcher = undefined;
      for (const t of timers) clearTimeout(t);
      if (outcome === 'connected') return resolve(connection);
      connection.destroy();
      reject(outcome);
    };
    const refused = (why: string) => settle(new KubeletError('Unavailable', `${what}: cannot connect (${why})`, { adapter: ADAPTER }));
    connection = new PortConnection(stream, {
      data: () => settle('connected'),
      error: (text) => refused(text),
      closed: (text) => refused(text || 'the runtime ended the connection without saying why'),
    });
    if (outcome !== undefined) return settle(outcome);
    timers.push(
      setTimeout(
        () => settle(new KubeletError('Timeout', `${what}: the runtime did not connect within ${timeoutMs} ms`, { adapter: ADAPTER })),
        timeoutMs,
      ),
    );
    ws.send(frame(DATA));
    void roundTrip(ws, timeoutMs).then((answered) => {
      if (answered && connection.watcher !== undefined) timers.push(setTimeout(() => settle('connected'), SETTLE_MS));
    });
  });
}
