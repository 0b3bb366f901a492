import type { Duplex } from 'node:stream';
import { KubeletError, type ContainerStreaming, type SessionEnd, type StreamOptions, type StreamSession } from '@kubelet-ts/core';
import WebSocket from 'ws';
import type { ContainerStatus, CriApi, CriStreamRequest } from './cri-api.js';
import { connectPort } from './cri-port-forward.js';
import { openStream, type OpenStream } from './cri-stream-socket.js';
import { CriStreamSession, execEnd, type StreamEnding } from './cri-stream-session.js';
import { ADAPTER, ignoreNotFound } from './errors.js';

/** Runs a CRI call with a deadline, translating its failure (the runtime's `call`). */
export type CriCall = <T>(what: string, fn: (deadline: number) => Promise<T>) => Promise<T>;

/** How long an attach waits, once its stream ended, for the runtime's status to show the exit (containerd updates it just after). */
const EXIT_SETTLE_MS = 3_000;
const EXIT_POLL_MS = 50;

/**
 * The `streaming` power over CRI: `Exec`, `Attach` and `PortForward` each give a URL on the
 * runtime's streaming server (containerd's `stream_server_address`/`_port`), where the session
 * runs over a WebSocket (`v4.channel.k8s.io`; see `CriStreamSession` and `connectPort` for what
 * that protocol can and cannot say: stdin's end-of-file only with a terminal, no half-close of a
 * forwarded connection). The URL must be reachable from the agent (containerd's default binds
 * 127.0.0.1). `close()` ends every session and connection still open.
 */
export class CriStreams implements ContainerStreaming {
  private readonly open = new Set<WebSocket>();

  constructor(
    private readonly cri: CriApi,
    private readonly call: CriCall,
    private readonly timeoutMs: number,
  ) {}

  async exec(id: string, command: readonly string[], options: StreamOptions): Promise<StreamSession> {
    const what = `exec ${command.join(' ')} in ${await this.running(id, 'exec in')}`;
    const { url } = await this.call(what, (deadline) =>
      this.cri.exec({ containerId: id, cmd: [...command], ...requestOf(options) }, deadline),
    );
    return this.session(url, what, options, ({ status }) => execEnd(status));
  }

  async attach(id: string, options: StreamOptions): Promise<StreamSession> {
    const what = `attach to ${await this.running(id, 'attach to')}`;
    const { url } = await this.call(what, (deadline) => this.cri.attach({ containerId: id, ...requestOf(options) }, deadline));
    return this.session(url, what, options, (how) => this.attachEnd(id, how));
  }

  async portForward(sandboxId: string, port: number): Promise<Duplex> {
    const { status } = await this.call(`sandbox ${sandboxId}`, (deadline) =>
      this.cri.podSandboxStatus({ podSandboxId: sandboxId }, deadline),
    );
    const name = status?.metadata?.name ?? sandboxId;
    if (status === null || status.state !== 'SANDBOX_READY')
      throw new KubeletError(
        'NotFound',
        `port-forward to port ${port} of ${name}: ${status === null ? 'no such sandbox' : 'the sandbox is stopped (its network namespace is gone)'}`,
        { adapter: ADAPTER },
      );
    const what = `port-forward to port ${port} of sandbox ${name}`;
    const { url } = await this.call(what, (deadline) => this.cri.portForward({ podSandboxId: sandboxId, port: [port] }, deadline));
    // The port in the query too: servers built on the kubelet's handler read it from there for WebSockets.
    const ws = await this.connect(`${url}${url.includes('?') ? '&' : '?'}port=${port}`, what);
    return connectPort(ws, what, this.timeoutMs);
  }

  /** Ends every session and connection still open. */
  close(): void {
    for (const ws of this.open) ws.terminate();
  }

  private async session(
    url: string,
    what: string,
    options: StreamOptions,
    ending: (how: StreamEnding) => Promise<SessionEnd> | SessionEnd,
  ): Promise<StreamSession> {
    return new CriStreamSession(await this.connect(url, what), options, ending);
  }

  private async connect(url: string, what: string): Promise<OpenStream> {
    const stream = await openStream(url, what, this.timeoutMs);
    const { ws } = stream;
    if (ws.readyState !== WebSocket.CLOSED) this.open.add(ws);
    ws.once('close', () => this.open.delete(ws));
    return stream;
  }

  /** The container's name, once it is known to run (`NotFound`, `Conflict` otherwise, before anything starts). */
  private async running(id: string, what: string): Promise<string> {
    const status = await this.status(id);
    const name = status?.metadata?.name ?? id;
    if (status === undefined) throw new KubeletError('NotFound', `${what} ${id}: no such container`, { adapter: ADAPTER });
    if (status.state !== 'CONTAINER_RUNNING')
      throw new KubeletError('Conflict', `${what} ${name}: the container is ${status.state.replace('CONTAINER_', '').toLowerCase()}`, {
        adapter: ADAPTER,
      });
    return name;
  }

  /**
   * An attach ends when the main process's output does (it exited) or the connection broke: the
   * exit code is the runtime's, once its status shows the exit; `undefined` if it still runs after
   * EXIT_SETTLE_MS (the stream ended for another reason) or is gone.
   */
  private async attachEnd(id: string, how: StreamEnding): Promise<SessionEnd> {
    const failed = how.status?.status === 'Failure' ? how.status.message : undefined;
    const deadline = Date.now() + EXIT_SETTLE_MS;
    for (;;) {
      const status = await this.status(id);
      if (status === undefined) return { exitCode: undefined, message: failed };
      if (status.state === 'CONTAINER_EXITED') return { exitCode: status.exitCode, message: failed };
      if (Date.now() > deadline) return { exitCode: undefined, message: failed };
      await new Promise((resolve) => setTimeout(resolve, EXIT_POLL_MS));
    }
  }

  private async status(id: string): Promise<ContainerStatus | undefined> {
    const found = await ignoreNotFound(this.call(`container ${id}`, (deadline) => this.cri.containerStatus({ containerId: id }, deadline)));
    return found?.status ?? undefined;
  }
}

/** CRI wants at least one stream and no stderr with a terminal: a session that asks for none still takes stdout (and drops it). */
function requestOf(options: StreamOptions): CriStreamRequest {
  const stderr = options.stderr && !options.tty;
  return { tty: options.tty, stdin: options.stdin, stdout: options.stdout || (!options.stdin && !stderr), stderr };
}
