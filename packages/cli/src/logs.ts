import { once } from 'node:events';
import type { IncomingMessage } from 'node:http';
import { Command, InvalidArgumentError, Option } from 'commander';
import { AgentClientError, type AgentClient } from './agent-client.js';
import { addConnectionOptions, failed, openAgent, parseClientCommand, type ConnectionOptions } from './connection.js';
import { parseDuration } from './duration.js';

/** Where `kubelet-ts logs` writes, and the environment it reads (the token). */
export interface LogsIo {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
  readonly env: Readonly<Record<string, string | undefined>>;
}

interface LogsOptions extends ConnectionOptions {
  readonly follow: boolean;
  readonly tail?: number;
  readonly since?: number;
  readonly timestamps: boolean;
  readonly previous: boolean;
  readonly limitBytes?: number;
}

/** `kubelet-ts logs`'s arguments and options: what its `--help` prints, and what docs/CLI.md's reference is made from. */
export function logsProgram(): Command {
  return addConnectionOptions(new Command('kubelet-ts logs'))
    .description('print what a container of a pod printed, from a running agent (as kubectl logs)')
    .argument('<pod>', "the pod's name, as the agent's /pods shows it (a 2014 manifest's id)")
    .argument('[container]', 'the container; optional when the pod has only one')
    .addOption(new Option('-f, --follow', 'go on printing what it prints, until it ends').default(false))
    .addOption(new Option('--tail <lines>', 'only the last lines printed (-1: all)').argParser(tailLines))
    .addOption(new Option('--since <duration>', 'only lines printed this recently: 10s, 5m, 1h').argParser(sinceSeconds))
    .addOption(new Option('--timestamps', 'each line after the time it was printed (RFC 3339)').default(false))
    .addOption(new Option('-p, --previous', "the run before the current one (a restarted container's previous instance)").default(false))
    .addOption(new Option('--limit-bytes <bytes>', 'at most this many bytes').argParser(positive));
}

/**
 * `kubelet-ts logs POD [CONTAINER]`: what a container of a pod printed, from a running agent's
 * `GET /containerLogs/{namespace}/{pod}/{container}`, written to stdout as it arrives (with
 * `--follow`, until the container ends or the command is stopped), as `kubectl logs` is used.
 * Without CONTAINER, the pod's only container (asked of the agent's `/pods`). Exits 0, or with what
 * went wrong on stderr (the agent's own words for a pod or container it does not know) and the
 * client commands' exit code for it (`ExitCodes`: 1, or 2-4 for an agent unreachable, credentials
 * refused, TLS failed).
 */
export async function logsMain(argv: readonly string[], io: LogsIo = process): Promise<number> {
  const program = logsProgram();
  const ended = parseClientCommand(program, argv, io);
  if (ended !== undefined) return ended;
  const [pod = '', named] = program.args;
  const options = program.opts<LogsOptions>();
  try {
    const { client, namespace } = await openAgent(options, io.env);
    const container = named ?? (await onlyContainer(client, namespace, pod));
    const segments = [namespace, pod, container].map((s) => encodeURIComponent(s)).join('/');
    const res = await client.get(`/containerLogs/${segments}?${query(options)}`);
    return await copy(res, io);
  } catch (error) {
    return failed('kubelet-ts logs', error, io.stderr);
  }
}

function query(options: LogsOptions): URLSearchParams {
  const q = new URLSearchParams();
  if (options.follow) q.set('follow', 'true');
  if (options.tail !== undefined && options.tail >= 0) q.set('tailLines', String(options.tail));
  if (options.since !== undefined) q.set('sinceSeconds', String(options.since));
  if (options.timestamps) q.set('timestamps', 'true');
  if (options.previous) q.set('previous', 'true');
  if (options.limitBytes !== undefined) q.set('limitBytes', String(options.limitBytes));
  return q;
}

/** The pod's container when it has exactly one, from the agent's `/pods` (a v1 PodList). */
export async function onlyContainer(
  client: AgentClient,
  namespace: string,
  pod: string,
  example: (container: string) => string = (c) => `kubelet-ts logs ${pod} ${c}`,
): Promise<string> {
  const list = (await client.json('/pods')) as {
    items?: Array<{ metadata?: Record<string, unknown>; spec?: { containers?: Array<{ name?: string }> } }>;
  };
  const item = (list.items ?? []).find((p) => p.metadata?.['name'] === pod && (p.metadata?.['namespace'] ?? 'default') === namespace);
  if (item === undefined) throw new AgentClientError(`pod "${namespace}/${pod}" is not on this agent (see its /pods)`);
  const names = (item.spec?.containers ?? []).map((c) => String(c.name));
  if (names.length === 1) return names[0]!;
  throw new AgentClientError(
    `pod "${namespace}/${pod}" has ${names.length} containers (${names.join(', ')}): name one, e.g. ${example(names[0] ?? '')}`,
  );
}

/**
 * Writes the answer to `out` as it comes, each chunk once `out` took the one before. 0 when the
 * answer ended; 1 when the agent cut it short. A reader of stdout that went away (`| head`) ends
 * the copy quietly, with 0.
 */
async function copy(res: IncomingMessage, io: LogsIo): Promise<number> {
  const out = io.stdout;
  let closed = false;
  const onError = (error: NodeJS.ErrnoException) => {
    closed = true;
    if (error.code !== 'EPIPE') io.stderr.write(`kubelet-ts logs: cannot write: ${error.message}\n`);
    res.destroy();
  };
  out.on('error', onError);
  try {
    for await (const chunk of res) {
      if (!out.write(chunk as Buffer) && !closed) await once(out, 'drain');
      if (closed) break;
    }
    return 0;
  } catch (error) {
    if (closed) return 0;
    throw new AgentClientError(`the agent cut the answer short: ${(error as Error).message}`);
  } finally {
    // Once the reader has gone, writes still buffered fail too: the listener stays to hear them.
    if (!closed) out.off('error', onError);
  }
}

function tailLines(value: string): number {
  const n = Number(value);
  if (!/^-?\d+$/.test(value.trim()) || n < -1)
    throw new InvalidArgumentError(`expected a number of lines (-1: all), got ${JSON.stringify(value)}`);
  return n;
}

function positive(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || n < 1)
    throw new InvalidArgumentError(`expected a whole number of bytes above 0, got ${JSON.stringify(value)}`);
  return n;
}

/** A duration as the whole seconds the agent takes (at least 1). */
function sinceSeconds(value: string): number {
  try {
    return Math.max(1, Math.ceil(parseDuration(value) / 1000));
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}
