import { Duplex } from 'node:stream';

/** How long a closed socket waits for its reader to take what came before the close. */
const CLOSE_AFTER_MS = 1_000;

/**
 * A socket as spdy-transport reads and writes it (it pipes from it, and a pipe resumes its source on
 * its own), so that reading can be stopped while a destination is slow (`hold`), and so that a write
 * completes only once the socket took it (a slow peer then pauses the streams' writers).
 */
export class HoldableSocket extends Duplex {
  private holds = 0;

  constructor(private readonly socket: Duplex) {
    // Destroyed when the socket closes (see below), not when both sides are done: the reader may still be at work.
    super({ allowHalfOpen: false, autoDestroy: false });
    socket.on('data', (chunk: Buffer) => {
      if (!this.push(chunk)) socket.pause();
    });
    socket.once('end', () => this.push(null));
    // Closed only once what came before the close was framed: spdy-transport drops every stream when
    // its socket closes, and a peer that ends the connection right after its last frames (the CRI
    // streaming server, once the process exited) would otherwise lose them. A reader that stopped
    // reading does not hold the close for more than a second.
    let closing = false;
    const close = () => {
      if (closing) return;
      closing = true;
      const timer = setTimeout(() => this.destroy(), CLOSE_AFTER_MS);
      timer.unref();
      void this.consumed.then(() => {
        clearTimeout(timer);
        this.destroy();
      });
    };
    socket.once('close', close);
    // A reset (a Go server closes with bytes of ours unread) is a close too: what came before it is kept.
    socket.on('error', () => {
      if (!this.readableEnded) this.push(null);
      close();
    });
  }

  /** Resolves once the reader has taken everything up to the end (see `closeAfter`). */
  private consumed: Promise<void> = new Promise((resolve) => this.once('end', () => setImmediate(resolve)));

  /** The close waits for `done` too (the SPDY parser's `finish`: every frame read was handled). */
  closeAfter(done: Promise<void>): void {
    const before = this.consumed;
    this.consumed = Promise.all([before, done]).then(() => undefined);
  }

  override _read(): void {
    if (this.holds === 0) this.socket.resume();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    if (this.socket.destroyed) {
      callback();
      return;
    }
    this.socket.write(chunk, () => callback());
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.socket.end();
    callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.socket.destroy();
    callback(error);
  }

  /** What spdy-transport calls once its streams are done after GOAWAY. */
  destroySoon(): void {
    this.end();
  }

  /** Stops reading the socket until the returned function is called (each hold released once). */
  hold(): () => void {
    this.holds += 1;
    this.socket.pause();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.holds -= 1;
      if (this.holds === 0 && !this.destroyed) this.socket.resume();
    };
  }
}
