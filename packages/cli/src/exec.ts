import type { Readable, Writable } from 'node:stream';
import { Command, Option } from 'commander';
import type { WebSocket } from 'ws';
import { addConnectionOptions, failed, openAgent, parseClientCommand, type ConnectionOptions } from './connection.js';
import { onlyContainer } from './logs.js';

/** Where `kubelet-ts exec` and `attach` read and write, and what they know of the terminal. */
export interface ExecIo {
  readonly stdin: Readable & { isTTY?: boolean; setRawMode?: (raw: boolean) => unknown };
  readonly stdout: Writable & { columns?: number; rows?: number; isTTY?: boolean };
  readonly stderr: Writable;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Calls back when the terminal's size changes (SIGWINCH); returns how to stop. */
  readonly onResize?: (resized: () => void) => () => void;
}

interface ExecOptions extends ConnectionOptions {
  readonly stdin: boolean;
  readonly tty: boolean;
  readonly container?: string;
}

const PROTOCOLS = ['v5.channel.k8s.io', 'v4.channel.k8s.io'];

/** `process` as `ExecIo`, the terminal's resizes from SIGWINCH. */
export const processIo: ExecIo = {
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  onResize: (resized) => {
    process.on('SIGWINCH', resized);
    return () => process.off('SIGWINCH', resized);
  },
};

/** The arguments and options of `kubelet-ts exec` or `attach`: what `--help` prints, and what docs/CLI.md's reference is made from. */
export function execProgram(verb: 'exec' | 'attach'): Command {
  const program = addConnectionOptions(new Command(`kubelet-ts ${verb}`))
    .description(
      verb === 'exec'
        ? 'run a command in a container of a pod, through a running agent (as kubectl exec)'
        : "attach to a container's main process, through a running agent (as kubectl attach)",
    )
    .argument('<pod>', "the pod's name, as the agent's /pods shows it")
    .addOption(new Option('-c, --container <name>', 'the container; optional when the pod has only one'))
    .addOption(new Option('-i, --stdin', 'pass stdin to the process').default(false))
    .addOption(new Option('-t, --tty', 'give the process a terminal').default(false));
  if (verb === 'exec') program.argument('<command...>', 'the command and its arguments (after --)');
  return program;
}

/**
 * `kubelet-ts exec [-i] [-t] POD [-c CONTAINER] -- COMMAND…` and `kubelet-ts attach [-i] [-t] POD
 * [-c CONTAINER]`, as `kubectl exec` and `attach` are used: a running agent's `/exec` or `/attach`
 * over WebSocket. With `-t` and a terminal, the local terminal is raw while the session lasts and
 * its size follows the window. Exits with the command's exit code (exec), 0 when the session ended
 * well, or with what went wrong on stderr and its exit code (`ExitCodes`: 1, or 2-4 for an agent
 * unreachable, credentials refused, TLS failed).
 */
export async function execMain(verb: 'exec' | 'attach', argv: readonly string[], io: ExecIo = processIo): Promise<number> {
  const program = execProgram(verb);
  const ended = parseClientCommand(program, argv, io);
  if (ended !== undefined) return ended;
  const [pod = '', ...command] = program.args;
  const options = program.opts<ExecOptions>();
  try {
    const { client, namespace } = await openAgent(options, io.env);
    const container = options.container ?? (await onlyContainer(client, namespace, pod, (c) => `kubelet-ts ${verb} ${pod} -c ${c}`));
    const query = new URLSearchParams();
    for (const word of command) query.append('command', word);
    if (options.stdin) query.set('stdin', '1');
    query.set('stdout', '1');
    if (!options.tty) query.set('stderr', '1');
    if (options.tty) query.set('tty', '1');
    const segments = [namespace, pod, container].map((s) => encodeURIComponent(s)).join('/');
    const ws = await client.websocket(`/${verb}/${segments}?${query}`, PROTOCOLS);
    return await session(ws, options, io);
  } catch (error) {
    return failed(`kubelet-ts ${verb}`, error, io.stderr);
  }
}

/** Relays the terminal and the socket until the session's status arrives or the socket closes; the exit code. */
function session(ws: WebSocket, options: ExecOptions, io: ExecIo): Promise<number> {
  const send = (channel: number, data: Buffer | string) => {
    if (ws.readyState === ws.OPEN) ws.send(Buffer.concat([Buffer.from([channel]), Buffer.from(data)]));
  };
  const raw = options.tty && io.stdin.isTTY === true && io.stdin.setRawMode !== undefined;
  const resize = () => {
    if (io.stdout.columns !== undefined && io.stdout.rows !== undefined)
      send(4, JSON.stringify({ Width: io.stdout.columns, Height: io.stdout.rows }));
  };
  const cleanups: Array<() => void> = [];
  if (options.tty) {
    resize();
    if (io.onResize !== undefined) cleanups.push(io.onResize(resize));
  }
  if (raw) {
    io.stdin.setRawMode?.(true);
    cleanups.push(() => io.stdin.setRawMode?.(false));
  }
  if (options.stdin) {
    const onData = (chunk: Buffer | string) => send(0, chunk);
    // v5 says end-of-file for stdin; with v4 the process sees it when the session ends.
    const onEnd = () => (ws.protocol === 'v5.channel.k8s.io' ? send(255, Buffer.from([0])) : undefined);
    io.stdin.on('data', onData).once('end', onEnd);
    cleanups.push(() => {
      io.stdin.off('data', onData).off('end', onEnd);
      io.stdin.pause();
    });
  }
  return new Promise((resolve) => {
    let code = 0;
    ws.on('message', (data: Buffer) => {
      const payload = data.subarray(1);
      if (data[0] === 1) io.stdout.write(payload);
      else if (data[0] === 2) io.stderr.write(payload);
      else if (data[0] === 3) code = exitCodeOf(payload.toString('utf8'), io);
    });
    ws.once('close', () => {
      for (const cleanup of cleanups) cleanup();
      resolve(code);
    });
    ws.resume();
  });
}

/** The exit code a session's status gives: 0 for Success, the code of a NonZeroExitCode, else 1 with its message. */
function exitCodeOf(text: string, io: ExecIo): number {
  try {
    const status = JSON.parse(text) as {
      status?: string;
      reason?: string;
      message?: string;
      details?: { causes?: Array<{ reason?: string; message?: string }> };
    };
    if (status.status === 'Success') return 0;
    const cause = status.details?.causes?.find((c) => c.reason === 'ExitCode');
    if (status.reason === 'NonZeroExitCode' && cause?.message !== undefined && /^\d+$/.test(cause.message)) return Number(cause.message);
    io.stderr.write(`${status.message ?? 'the session failed'}\n`);
    return 1;
  } catch {
    io.stderr.write(`the agent sent an unreadable status: ${text.slice(0, 200)}\n`);
    return 1;
  }
}
