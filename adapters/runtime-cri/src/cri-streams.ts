import type { Duplex } from 'node:stream';
import {
  KubeletError,
  ignoreNotFound,
  type ContainerStreaming,
  type Logger,
  type SessionEnd,
  type StreamOptions,
  type StreamSession,
} from '@kubelet-ts/core';
import WebSocket from 'ws';
import type { ContainerdTasks } from './containerd-tasks.js';
import type { ContainerStatus, CriApi, CriStreamRequest } from './cri-api.js';
import { connectPort } from './cri-port-forward.js';
import { openStream, type OpenStream } from './cri-stream-socket.js';
import { CriSpdySession } from './cri-spdy-session.js';
import { CriStreamSession, execEnd, type StreamEnding } from './cri-stream-session.js';
import { ADAPTER } from './errors.js';

/** Runs a CRI call with a deadline, translating its failure (the runtime's `call`). */
export type CriCall = <T>(what: string, fn: (deadline: number) => Promise<T>) => Promise<T>;

/** How long an attach waits, once its stream ended, for the runtime's status to show the exit (containerd updates it just after). */
const EXIT_SETTLE_MS = 3_000;
const EXIT_POLL_MS = 50;
/** How long an exec session's process may take to show in its container once the session is connected. */
const NEW_EXEC_MS = 1_000;

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
  private readonly spdy = new Set<CriSpdySession>();
  /** Per container, the exec session being told apart from the others (see `exec`). */
  private readonly starting = new Map<string, Promise<unknown>>();

  constructor(
    private readonly cri: CriApi,
    private readonly call: CriCall,
    private readonly timeoutMs: number,
    /** containerd's task service, where there is one: how an abandoned exec's process is ended. */
    private readonly tasks?: ContainerdTasks,
    private readonly logger?: Logger,
  ) {}

  /**
   * An exec session. containerd 1.6's streaming server leaves the process running when the caller
   * closes the session (a `cat /dev/zero` keeps a core busy), and CRI has no call to end it (issue
   * 48): where containerd's task service answers, the session's process is known by its exec id —
   * the one that appears in the container while the session starts, one session of a container at
   * a time — and killed when the caller closes the session. An id that cannot be told apart (a
   * probe's exec at the same moment) is not guessed at: that process is left, and said.
   */
  async exec(id: string, command: readonly string[], options: StreamOptions): Promise<StreamSession> {
    const what = `exec ${command.join(' ')} in ${await this.running(id, 'exec in')}`;
    const previous = this.starting.get(id) ?? Promise.resolve();
    let started!: (execId: string | undefined) => void;
    const mine = new Promise<string | undefined>((resolve) => (started = resolve));
    const turn = previous.then(() => mine);
    this.starting.set(id, turn);
    void turn.finally(() => {
      if (this.starting.get(id) === turn) this.starting.delete(id);
    });
    try {
      await previous;
      const before = await this.tasks?.execIds(id).catch(() => undefined);
      const { url } = await this.call(what, (deadline) =>
        this.cri.exec({ containerId: id, cmd: [...command], ...requestOf(options) }, deadline),
      );
      const session = await this.session(url, what, options, async (how) => {
        if (!how.closedByCaller) return execEnd(how.status);
        await this.endAbandoned(id, await mine, what);
        return { exitCode: undefined };
      });
      started(before === undefined ? undefined : await this.newExec(id, before));
      return session;
    } catch (error) {
      started(undefined);
      throw error;
    }
  }

  async attach(id: string, options: StreamOptions): Promise<StreamSession> {
    const what = `attach to ${await this.running(id, 'attach to')}`;
    const { url } = await this.call(what, (deadline) => this.cri.attach({ containerId: id, ...requestOf(options) }, deadline));
    return this.session(url, what, options, (how) => (how.closedByCaller ? { exitCode: undefined } : this.attachEnd(id, how)));
  }

  /**
   * The exec id that appeared in the container since `before`: the session's process, once it runs.
   * Undefined when none appeared within a second, or more than one still runs then.
   */
  private async newExec(id: string, before: ReadonlySet<string>): Promise<string | undefined> {
    const deadline = Date.now() + NEW_EXEC_MS;
    for (;;) {
      const now = await this.tasks!.execIds(id).catch(() => undefined);
      const fresh = now === undefined ? [] : [...now].filter((execId) => !before.has(execId));
      if (fresh.length === 1) return fresh[0];
      if (Date.now() > deadline) return undefined;
      await new Promise((resolve) => setTimeout(resolve, EXIT_POLL_MS));
    }
  }

  /** Ends the process of a session its caller closed (SIGKILL to its exec id), or says why it runs on. */
  private async endAbandoned(id: string, execId: string | undefined, what: string): Promise<void> {
    if (this.tasks === undefined) return;
    if (execId === undefined) {
      this.logger?.warn({ container: id }, `${what}: its caller closed the session, and its process could not be told apart to end it`);
      return;
    }
    await this.tasks
      .kill(id, execId)
      .catch((error: unknown) =>
        this.logger?.warn({ container: id, execId, error: (error as Error).message }, `${what}: could not end the process its caller left`),
      );
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
    for (const session of this.spdy) session.close();
    this.tasks?.close();
  }

  /**
   * A session on the URL the runtime gave: over SPDY when it has stdin and no terminal (whose end
   * only SPDY can say, see `CriSpdySession`), else over a WebSocket (`CriStreamSession`).
   */
  private async session(
    url: string,
    what: string,
    options: StreamOptions,
    ending: (how: StreamEnding) => Promise<SessionEnd> | SessionEnd,
  ): Promise<StreamSession> {
    if (options.stdin && !options.tty) {
      const session = await CriSpdySession.open(url, what, requestOf(options), this.timeoutMs, ending);
      this.spdy.add(session);
      void session.done.finally(() => this.spdy.delete(session));
      return session;
    }
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
