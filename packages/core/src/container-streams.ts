import type { Duplex, Readable, Writable } from 'node:stream';

/** A terminal's size in character cells (the kubelet's `TerminalSize`: `Width`, `Height`). */
export interface TerminalSize {
  readonly width: number;
  readonly height: number;
}

/**
 * Which of the process's standard streams a session carries, and whether it is a terminal (the
 * kubelet's `stdin`, `stdout`, `stderr`, `tty` query options). With `tty` the process has a
 * terminal: its stdout and stderr are one stream (`stdout`), and `stderr` is ignored.
 */
export interface StreamOptions {
  readonly stdin: boolean;
  readonly stdout: boolean;
  readonly stderr: boolean;
  readonly tty: boolean;
  /** The terminal's size to begin with (`tty` only). */
  readonly size?: TerminalSize | undefined;
}

/** How an exec or attach session ended. */
export interface SessionEnd {
  /** The process's exit code; `undefined` when it is not known (an attach that was detached, a session closed early). */
  readonly exitCode: number | undefined;
  /** Why it could not run or ended abnormally, in the runtime's words (`executable file not found`), if it says. */
  readonly message?: string | undefined;
}

/**
 * A running exec or attach session. The streams are Node streams with their own back-pressure: a
 * reader that stops reading stops the process's output (the runtime's pipe fills), it never
 * grows the agent's memory.
 */
export interface StreamSession {
  /**
   * With `stdin`: what is written reaches the process; `end()` is end-of-file for it: on a terminal
   * as typed (^D, the connection kept for the output), without one the stream's half-close (a
   * runtime whose protocol cannot half-close says so: containerd 1.6, a terminal only).
   */
  readonly stdin: Writable | undefined;
  /** With `stdout` (with `tty`, the terminal's output). Ends when the process's output ends. */
  readonly stdout: Readable | undefined;
  /** With `stderr`, without `tty`. */
  readonly stderr: Readable | undefined;
  /** Sets a terminal's size (the process gets `SIGWINCH`); does nothing without `tty`. */
  resize(size: TerminalSize): Promise<void>;
  /** Resolves once the session is over and its output streams have ended. Never rejects. */
  readonly done: Promise<SessionEnd>;
  /**
   * Ends the session now and lets go of everything it holds (connections, descriptors). A process
   * started by `exec` is not killed (neither Docker nor CRI can): closing its stdin and output is
   * what it sees, as with the kubelet when a client goes away. Idempotent.
   */
  close(): void;
}

/**
 * An optional power of a runtime (`capabilities.streaming`): what `kubectl exec`, `attach` and
 * `port-forward` reach (the kubelet's `/exec`, `/attach`, `/portForward`; virtual-kubelet's
 * `RunInContainer`, `AttachToContainer`, `PortForward`). Without it those routes answer 501.
 * The non-streaming `exec` of `ContainerRuntime` (liveness probes) is a different thing and stays.
 *
 * The contract:
 * - `exec` and `attach` reject with `NotFound` for an unknown container and `Conflict` for one that
 *   is not running, before anything starts. A command that cannot be started (no such file) is not
 *   a rejection: the session ends with a non-zero `exitCode` (126 or 127, as a shell) and a
 *   `message` naming it, as `kubectl exec` reports it.
 * - stdout and stderr are kept apart without `tty`; with it, one stream.
 * - `done` resolves after the output streams have ended, with the exit code of `exec`'s process;
 *   for `attach`, with the main process's exit code when it ended, `undefined` when the session was
 *   closed first.
 * - `portForward` resolves with a connection to `port` on the loopback address inside the
 *   sandbox's network namespace, once connected; it rejects with `NotFound` for an unknown or
 *   stopped sandbox and `Unavailable` (naming the port) when nothing listens there. It never
 *   publishes a port on the host. Each call is one connection; any number may be open at once.
 * - Everything a session or connection holds is let go of when it ends or is closed/destroyed.
 */
export interface ContainerStreaming {
  exec(id: string, command: readonly string[], options: StreamOptions): Promise<StreamSession>;
  attach(id: string, options: StreamOptions): Promise<StreamSession>;
  portForward(sandboxId: string, port: number): Promise<Duplex>;
}
