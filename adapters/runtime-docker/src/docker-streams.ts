import type { Duplex } from 'node:stream';
import {
  KubeletError,
  Labels,
  sleep,
  type Clock,
  type ContainerStreaming,
  type Logger,
  type SessionEnd,
  type StreamOptions,
  type StreamSession,
  type TerminalSize,
} from '@kubelet-ts/core';
import type { DockerApi, DockerCallError, DockerInspect } from './docker-api.js';
import { DockerSession, engineStartFailure } from './docker-session.js';
import type { EngineKind } from './engine-kind.js';
import { ADAPTER, translate } from './errors.js';
import { NetnsDialer } from './netns-connect.js';

export interface DockerStreamsOptions {
  readonly docker: DockerApi;
  /** Where the engine answers: port-forward needs it on this host. */
  readonly endpoint: string;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Runs an engine call, translating its failures (404 → NotFound, 409 → Conflict, …). */
  readonly call: <T>(what: string, fn: () => Promise<T>) => Promise<T>;
  /** What serves the API, asked once (see `EngineKind`). */
  readonly engine: () => Promise<EngineKind>;
  /** How long a pod's port-forward helper is kept after its last connection was made. Default 10 s. */
  readonly portForwardHelperIdleMs?: number;
}

/** How long the engine may take, once a session's stream has ended, to show its process as ended. */
const SETTLE_MS = 2000;
const SETTLE_STEP_MS = 50;
/** How often, and how many times, an abandoned exec's pid is asked for while the engine says 0. */
const PID_RETRY_MS = 50;
const PID_TRIES = 40;

/**
 * The streaming power on Docker and on Podman's compatible API (`capabilities.streaming`; the
 * contract is `ContainerStreaming`'s). `exec` and `attach` are sessions over the engine's upgraded
 * connection (`DockerSession`); `portForward` enters the sandbox's network namespace
 * (`NetnsDialer`: one helper per pod's namespace, the connection then the agent's own socket),
 * since neither engine has an API for it and no port is published for it.
 */
export class DockerStreams implements ContainerStreaming {
  private readonly dialer: NetnsDialer;

  constructor(private readonly options: DockerStreamsOptions) {
    this.dialer = new NetnsDialer(options.portForwardHelperIdleMs === undefined ? {} : { idleMs: options.portForwardHelperIdleMs });
  }

  /** Ends the port-forward helper of a sandbox that stops or goes (it would keep its namespace). */
  forgetSandbox(id: string): void {
    this.dialer.forget(id);
  }

  /** Ends every port-forward helper. */
  close(): void {
    this.dialer.close();
  }

  async exec(id: string, command: readonly string[], options: StreamOptions): Promise<StreamSession> {
    const { docker, call } = this.options;
    const info = await this.running(id, 'exec in');
    const name = nameOf(info);
    const podman = (await this.options.engine()) === 'podman';
    const size = options.tty ? options.size : undefined;
    // stdout and stderr are always taken from the engine, which writes there why it could not
    // start a command; what the caller did not ask for is dropped (as to /dev/null).
    const exec = await call(`exec in ${name}`, () =>
      docker.getContainer(info.Id).exec({
        Cmd: [...command],
        AttachStdin: options.stdin,
        AttachStdout: true,
        AttachStderr: true,
        Tty: options.tty,
        ...(size === undefined ? {} : { ConsoleSize: [size.height, size.width] }),
      }),
    );
    const socket = await call(`exec in ${name}`, () => exec.start({ hijack: true, stdin: options.stdin, Tty: options.tty }));
    const resize = async (to: TerminalSize) => {
      try {
        await acceptCreated(exec.resize({ h: to.height, w: to.width }));
      } catch (error) {
        // A process that has just ended has no terminal to size: nothing to do, as after the end.
        // (One not started yet shows no exit code, and is sized again by `initialSize`.)
        const state = await exec.inspect().catch(() => undefined);
        if (state?.Running === false && state.ExitCode !== null) return;
        throw translate(error, `resize the terminal of exec in ${name}`, this.options.endpoint);
      }
    };
    const session = new DockerSession({
      socket,
      options,
      raw: options.tty,
      stdinAtEngine: options.stdin,
      podman,
      resize,
      end: async (closed, head): Promise<SessionEnd> => {
        if (closed) {
          await this.endAbandoned(name, () => exec.inspect());
          return { exitCode: undefined };
        }
        const exitCode = await this.settled(async () => {
          const state = await exec.inspect();
          return state.Running || state.ExitCode === null ? 'running' : state.ExitCode;
        });
        const message = exitCode === undefined || exitCode === 0 ? undefined : engineStartFailure(head);
        return message === undefined ? { exitCode } : { exitCode, message };
      },
    });
    // Engines before API 1.42 take no size at creation, and none before the process runs: it is
    // set as soon as the engine takes it (as `docker exec -t` does, with its retries). A process
    // that reads its size at once may still see none.
    if (size !== undefined) await this.initialSize(name, () => resize(size));
    return session;
  }

  /**
   * Ends the process of an exec session its caller closed: neither engine ends it when its
   * connection goes (a `cat /dev/zero` left behind kept the engine at 120 % of a core, issue 48),
   * and neither has an API to signal an exec. The engine gives its host pid, and the agent runs
   * on the engine's host (port-forward needs the same). A process already gone is nothing to do;
   * one this agent may not signal is said at warn.
   */
  private async endAbandoned(name: string, inspect: () => Promise<{ Running: boolean; Pid?: number }>): Promise<void> {
    // Docker 20.10 answers Pid 0 now and then for a running exec (seen with two started at once):
    // asked again, it tells.
    let pid = 0;
    for (let attempt = 0; pid <= 0; attempt++) {
      const state = await inspect().catch(() => undefined);
      if (state !== undefined && !state.Running) return;
      pid = state?.Pid ?? 0;
      if (pid > 0) break;
      if (attempt === PID_TRIES) {
        this.options.logger.warn({ container: name }, 'the engine did not say the pid of an exec session its caller closed: it runs on');
        return;
      }
      await sleep(this.options.clock, PID_RETRY_MS);
    }
    try {
      process.kill(pid, 'SIGKILL');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ESRCH') return;
      this.options.logger.warn(
        { container: name, pid, error: code ?? String(error) },
        'could not end the process of an exec session its caller closed: it runs on in the container',
      );
    }
  }

  async attach(id: string, options: StreamOptions): Promise<StreamSession> {
    const { docker, call } = this.options;
    const info = await this.running(id, 'attach to');
    const name = nameOf(info);
    // The main process's streams are what it was created with: a terminal or not, an open stdin
    // or none (this adapter opens none): without one, what is written is dropped, as nothing reads it.
    const podman = (await this.options.engine()) === 'podman';
    const tty = info.Config.Tty === true;
    const stdinAtEngine = options.stdin && info.Config.OpenStdin === true;
    const socket = await call(`attach to ${name}`, () =>
      this.upgrade(`/containers/${encodeURIComponent(info.Id)}/attach?`, {
        stream: true,
        logs: false,
        stdin: stdinAtEngine,
        stdout: true,
        stderr: true,
      }),
    );
    const resize = async (to: TerminalSize) => {
      if (!tty) return;
      await call(`resize the terminal of ${name}`, () => acceptCreated(docker.getContainer(info.Id).resize({ h: to.height, w: to.width })));
    };
    const session = new DockerSession({
      socket,
      options,
      raw: tty,
      stdinAtEngine,
      podman,
      resize,
      end: async (closed): Promise<SessionEnd> => {
        if (closed) return { exitCode: undefined };
        const exitCode = await this.settled(async () => {
          const state = (await docker.getContainer(info.Id).inspect()).State;
          // Podman passes through `stopping` on the way out, its exit code not yet known.
          return state.Running === true || state.Status === 'running' || state.Status === 'stopping' ? 'running' : state.ExitCode;
        });
        return { exitCode };
      },
    });
    const size = options.tty ? options.size : undefined;
    if (size !== undefined) await this.initialSize(name, () => session.resize(size));
    return session;
  }

  async portForward(sandboxId: string, port: number): Promise<Duplex> {
    if (!Number.isInteger(port) || port < 1 || port > 65535)
      throw new KubeletError('InvalidManifest', `port-forward: ${port} is not a TCP port (1-65535)`, { adapter: ADAPTER });
    const info = await this.options.call(`inspect sandbox ${sandboxId}`, () => this.options.docker.getContainer(sandboxId).inspect());
    const pod = info.Config.Labels?.[Labels.sandbox] ?? nameOf(info);
    const pid = info.State.Pid ?? 0;
    // A stopped sandbox has no namespace left to enter: for a port-forward it is not there.
    if (info.State.Status !== 'running' || pid <= 0)
      throw new KubeletError('NotFound', `port-forward to pod ${pod}: its sandbox ${nameOf(info)} is ${info.State.Status}`, {
        adapter: ADAPTER,
      });
    if (!onThisHost(this.options.endpoint))
      throw new KubeletError(
        'Unsupported',
        `port-forward to pod ${pod}: the engine at ${this.options.endpoint} is not on this host, whose network namespaces the agent enters`,
        { adapter: ADAPTER },
      );
    return this.dialer.connect({ sandbox: info.Id, pid, port, describe: `port ${port} of pod ${pod}` });
  }

  /** The container, running: `NotFound` for an unknown one, `Conflict` for one that is not running. */
  private async running(id: string, what: string): Promise<DockerInspect> {
    const info = await this.options.call(`inspect ${id}`, () => this.options.docker.getContainer(id).inspect());
    if (info.State.Status !== 'running')
      throw new KubeletError('Conflict', `${what} ${nameOf(info)}: the container is ${info.State.Status}`, { adapter: ADAPTER });
    return info;
  }

  /**
   * The exit code once the engine shows the process ended (it may lag the end of the stream by a
   * moment); `undefined` if it still runs after `SETTLE_MS` (an attach whose stream the engine
   * ended first) or cannot be asked (removed).
   */
  private async settled(look: () => Promise<number | 'running' | undefined>): Promise<number | undefined> {
    for (let waited = 0; ; waited += SETTLE_STEP_MS) {
      const seen = await look().catch(() => undefined);
      if (seen !== 'running') return seen;
      if (waited >= SETTLE_MS) return undefined;
      await sleep(this.options.clock, SETTLE_STEP_MS);
    }
  }

  /**
   * The terminal's first size, once the engine takes it (an exec's, once its process runs; Docker's
   * CLI tries 10 times too). A size not taken leaves the session as it is (the process runs): said
   * here, once.
   */
  private async initialSize(name: string, resize: () => Promise<void>): Promise<void> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await resize();
      } catch (error) {
        if (attempt >= 10) {
          this.options.logger.warn({ container: name, error: (error as Error).message }, "the terminal's first size was not taken");
          return;
        }
        await sleep(this.options.clock, 10 * attempt);
      }
    }
  }

  /**
   * A request the engine upgrades to the raw connection (`Upgrade: tcp`), with an empty body:
   * Podman passes the bytes of a request's body on to the process's stdin.
   */
  private upgrade(path: string, query: Record<string, boolean>): Promise<Duplex> {
    return new Promise((resolve, reject) =>
      this.options.docker.modem.dial(
        {
          path,
          method: 'POST',
          isStream: true,
          hijack: true,
          file: Buffer.alloc(0),
          statusCodes: { 101: true, 200: true, 404: 'no such container', 409: 'conflict', 500: 'server error' },
          options: query,
        },
        (error, stream) => {
          if (error !== null && error !== undefined) return reject(error);
          // An engine that answered without upgrading gave a stream that cannot be written to.
          if (typeof (stream as Partial<Duplex> | undefined)?.write !== 'function')
            return reject(new KubeletError('Internal', `${path}: the engine did not upgrade the connection`, { adapter: ADAPTER }));
          resolve(stream as Duplex);
        },
      ),
    );
  }
}

/** Podman answers a resize with 201, which dockerode reads as a failure. */
async function acceptCreated(call: Promise<unknown>): Promise<void> {
  try {
    await call;
  } catch (error) {
    if ((error as DockerCallError | undefined)?.statusCode !== 201) throw error;
  }
}

function nameOf(info: DockerInspect): string {
  return info.Name.replace(/^\//, '');
}

/** Whether the engine's processes are this host's: a local socket, or TCP on loopback. */
function onThisHost(endpoint: string): boolean {
  if (endpoint.startsWith('unix://') || endpoint.startsWith('/')) return true;
  try {
    const host = new URL(endpoint.replace(/^tcp:/, 'http:')).hostname;
    return host === 'localhost' || host === '[::1]' || host.startsWith('127.');
  } catch {
    return false;
  }
}
