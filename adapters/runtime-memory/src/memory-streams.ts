import { PassThrough, type Duplex, type Readable, type Writable } from 'node:stream';
import {
  KubeletError,
  type ContainerSpec,
  type ContainerSummary,
  type ContainerStreaming,
  type PortBinding,
  type SandboxSpec,
  type SandboxSummary,
  type LogStream,
  type SessionEnd,
  type StreamOptions,
  type StreamSession,
  type TerminalSize,
} from '@kubelet-ts/core';

/** What a program run by `exec` in a memory container has: its streams and its terminal. */
export interface MemoryProgramIo {
  /** What the session writes (an ended stream when it gave no stdin). */
  readonly stdin: Readable;
  readonly stdout: Writable;
  /** The same stream as `stdout` on a terminal. */
  readonly stderr: Writable;
  /** The terminal's size now; `undefined` without one. */
  size(): TerminalSize | undefined;
}

/** A program of a memory container: resolves with its exit code. */
export type MemoryProgram = (args: readonly string[], io: MemoryProgramIo) => Promise<number>;

/** A container as the streams see it. */
interface ContainerView {
  readonly summary: ContainerSummary;
  readonly spec: ContainerSpec;
  /** The sandbox whose network namespace it is in. */
  readonly sandbox: string;
}

/** What the streams need of the runtime's containers and sandboxes. */
export interface MemoryStreamsHost {
  /** The container, or `NotFound`. */
  container(id: string): ContainerView;
  readonly containers: ReadonlyMap<string, ContainerView>;
  readonly sandboxes: ReadonlyMap<string, { readonly summary: SandboxSummary; readonly spec: SandboxSpec }>;
}

const ADAPTER = 'memory';

/**
 * The streaming power of the memory runtime: `exec` runs a program from a small table of the
 * busybox commands the streaming contract uses (`true`, `false`, `cat`, `echo`, `stty size`, and
 * `sh -c` over them, `;`-separated, with `exit N`, `read VAR` and `>&2`; `sh` alone runs each line
 * it reads), or one a test adds with
 * `program`; `attach` sees what the container prints (`print`) until it ends; a port a container of
 * the sandbox declares (or one `listen` opened) echoes what is sent to it.
 */
export class MemoryStreams implements ContainerStreaming {
  private readonly programs = new Map<string, MemoryProgram>(Object.entries(BUILT_INS));
  private readonly attached = new Map<
    string,
    Set<{ print(stream: LogStream, text: string | Uint8Array): void; end(code: number | undefined): void }>
  >();
  private readonly listeners = new Map<string, Map<number, () => Duplex>>();
  /** Sessions and connections open now (each must let go when it ends or is closed). */
  open = 0;

  constructor(private readonly host: MemoryStreamsHost) {}

  /** Adds (or replaces) the program `name` of every memory container. */
  program(name: string, program: MemoryProgram): void {
    this.programs.set(name, program);
  }

  /** Makes `port` in the sandbox answer with what `connect` gives (default: an echo). */
  listen(sandboxId: string, port: number, connect: () => Duplex = () => new PassThrough()): void {
    const ports = this.listeners.get(sandboxId) ?? new Map<number, () => Duplex>();
    ports.set(port, connect);
    this.listeners.set(sandboxId, ports);
  }

  async exec(id: string, command: readonly string[], options: StreamOptions): Promise<StreamSession> {
    this.running(id, 'exec in');
    const session = new Session(options, () => (this.open -= 1));
    this.open += 1;
    const [name = '', ...args] = command;
    const program = this.programs.get(name);
    const run = async (): Promise<SessionEnd> => {
      if (program === undefined) return { exitCode: 127, message: `exec: ${JSON.stringify(name)}: executable file not found in $PATH` };
      try {
        return { exitCode: await program(args, session.io) };
      } catch (error) {
        return { exitCode: 1, message: (error as Error).message };
      }
    };
    void run().then((end) => session.finish(end));
    return session;
  }

  async attach(id: string, options: StreamOptions): Promise<StreamSession> {
    this.running(id, 'attach to');
    const session = new Session(options, () => {
      this.open -= 1;
      watchers.delete(watcher);
    });
    this.open += 1;
    const watchers = this.attached.get(id) ?? new Set();
    this.attached.set(id, watchers);
    const watcher = {
      print: (stream: LogStream, text: string | Uint8Array) => (stream === 'stdout' ? session.io.stdout : session.io.stderr).write(text),
      end: (exitCode: number | undefined) => session.finish({ exitCode }),
    };
    watchers.add(watcher);
    session.io.stdin.resume(); // the main process reads nothing: what is sent is taken and dropped
    return session;
  }

  async portForward(sandboxId: string, port: number): Promise<Duplex> {
    const sandbox = this.host.sandboxes.get(sandboxId);
    if (sandbox === undefined || sandbox.summary.state !== 'ready')
      throw new KubeletError('NotFound', `port-forward: no running sandbox ${sandboxId}`, { adapter: ADAPTER });
    const declares = (ports: readonly PortBinding[]) => ports.some((p) => p.containerPort === port);
    const declared =
      declares(sandbox.spec.ports) ||
      [...this.host.containers.values()].some((c) => c.sandbox === sandboxId && c.summary.state === 'running' && declares(c.spec.ports));
    const connect = this.listeners.get(sandboxId)?.get(port) ?? (declared ? () => new PassThrough() : undefined);
    if (connect === undefined)
      throw new KubeletError(
        'Unavailable',
        `port-forward to port ${port} of sandbox ${sandboxId}: connection refused (nothing listens there)`,
        {
          adapter: ADAPTER,
        },
      );
    const connection = connect();
    this.open += 1;
    connection.once('close', () => (this.open -= 1));
    return connection;
  }

  /** The container printed: attached sessions see it. */
  printed(id: string, stream: LogStream, text: string | Uint8Array): void {
    for (const w of this.attached.get(id) ?? []) w.print(stream, text);
  }

  /** The container's main process ended (`undefined`: removed): attached sessions end with its code. */
  ended(id: string, exitCode: number | undefined): void {
    for (const w of this.attached.get(id) ?? []) w.end(exitCode);
    this.attached.delete(id);
  }

  private running(id: string, what: string): void {
    const { summary } = this.host.container(id);
    if (summary.state !== 'running')
      throw new KubeletError('Conflict', `cannot ${what} ${summary.name}: it is ${summary.state}`, { adapter: ADAPTER });
  }
}

/** One exec or attach session: the caller's ends of three pipes, and the program's. */
class Session implements StreamSession {
  readonly stdin: Writable | undefined;
  readonly stdout: Readable | undefined;
  readonly stderr: Readable | undefined;
  readonly done: Promise<SessionEnd>;
  readonly io: MemoryProgramIo & { readonly stdin: PassThrough; readonly stdout: PassThrough; readonly stderr: PassThrough };
  private size: TerminalSize | undefined;
  private settle!: (end: SessionEnd) => void;
  private over = false;

  constructor(
    private readonly options: StreamOptions,
    private readonly release: () => void,
  ) {
    const input = new PassThrough();
    const out = new PassThrough();
    const err = options.tty ? out : new PassThrough();
    if (!options.stdin) input.end();
    this.size = options.tty ? options.size : undefined;
    this.io = { stdin: input, stdout: out, stderr: err, size: () => this.size };
    this.stdin = options.stdin ? input : undefined;
    this.stdout = options.stdout ? out : undefined;
    this.stderr = options.stderr && !options.tty ? err : undefined;
    // Output nobody asked for is taken and dropped, so a program never waits on it.
    if (!options.stdout) out.resume();
    if (!(options.stderr && !options.tty) && err !== out) err.resume();
    this.done = new Promise((resolve) => (this.settle = resolve));
  }

  async resize(size: TerminalSize): Promise<void> {
    if (this.options.tty) this.size = size;
  }

  finish(end: SessionEnd): void {
    if (this.over) return;
    this.over = true;
    this.io.stdout.end();
    this.io.stderr.end();
    this.release();
    this.settle(end);
  }

  close(): void {
    if (this.over) return;
    for (const s of [this.io.stdin, this.io.stdout, this.io.stderr]) s.destroy();
    this.finish({ exitCode: undefined });
  }
}

/** One line of `stream` (without its newline); `undefined` at its end. */
async function readLine(stream: Readable): Promise<string | undefined> {
  let line = '';
  for (;;) {
    const chunk = stream.read(1) as Buffer | string | null;
    if (chunk === null) {
      if (stream.readableEnded) return line === '' ? undefined : line;
      await new Promise<void>((resolve) => {
        const go = () => {
          stream.off('readable', go);
          stream.off('end', go);
          resolve();
        };
        stream.once('readable', go).once('end', go);
      });
      continue;
    }
    const c = String(chunk);
    if (c === '\n') return line;
    line += c;
  }
}

const BUILT_INS: Record<string, MemoryProgram> = {
  true: async () => 0,
  false: async () => 1,
  echo: async (args, io) => {
    io.stdout.write(`${args.join(' ')}\n`);
    return 0;
  },
  cat: async (_args, io) => {
    for await (const chunk of io.stdin) if (!io.stdout.write(chunk)) await new Promise((resolve) => io.stdout.once('drain', resolve));
    return 0;
  },
  stty: async (args, io) => {
    const size = io.size();
    if (args[0] !== 'size' || size === undefined) {
      io.stderr.write('stty: standard input: Not a tty\n');
      return 1;
    }
    io.stdout.write(`${size.height} ${size.width}\n`);
    return 0;
  },
  sh: async (args, io) => {
    if (args[0] === '-c' && args[1] !== undefined) return (await script(args[1], io)).code;
    if (args.length > 0) return 2;
    // No script: each line read is one, as a shell at a terminal runs what is typed.
    let code = 0;
    for (let line = await readLine(io.stdin); line !== undefined; line = await readLine(io.stdin)) {
      const ran = await script(line, io);
      code = ran.code;
      if (ran.exited) break;
    }
    return code;
  },
};

/** Runs `sh -c` text: `;`-separated built-ins, `exit N`, `read VAR` and `>&2`. */
async function script(text: string, io: MemoryProgramIo): Promise<{ code: number; exited: boolean }> {
  let last = 0;
  for (const raw of text.split(';')) {
    const step = raw.trim();
    if (step === '') continue;
    const toStderr = step.endsWith('>&2');
    const words = (toStderr ? step.slice(0, -3) : step).trim().split(/\s+/);
    const [name = '', ...rest] = words;
    if (name === 'exit') return { code: Number(rest[0] ?? last), exited: true };
    if (name === 'read') {
      last = (await readLine(io.stdin)) === undefined ? 1 : 0;
      continue;
    }
    const program = BUILT_INS[name];
    if (program === undefined) {
      io.stderr.write(`sh: ${name}: not found\n`);
      last = 127;
      continue;
    }
    last = await program(rest, toStderr ? { ...io, stdout: io.stderr } : io);
  }
  return { code: last, exited: false };
}
