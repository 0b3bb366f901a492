import { Command, Option } from 'commander';
import { AgentClientError } from './agent-client.js';
import { addConnectionOptions, failed, openAgent, parseClientCommand, type ConnectionOptions } from './connection.js';
import type { GetContext, GetIo, OutputFormat } from './get-context.js';
import { getContainers } from './get-containers.js';
import { getEvents, parseFor } from './get-events.js';
import { getPods } from './get-pods.js';
import { getSources } from './get-sources.js';
import { parseSelector } from './label-selector.js';
import { colourWanted } from './table.js';

type Resource = 'pods' | 'containers' | 'events' | 'sources';

/** Each resource by every name it answers to, kubectl's short names and crictl's `ps` among them. */
const RESOURCES: Readonly<Record<string, Resource>> = {
  pods: 'pods',
  pod: 'pods',
  po: 'pods',
  containers: 'containers',
  container: 'containers',
  ps: 'containers',
  events: 'events',
  event: 'events',
  ev: 'events',
  sources: 'sources',
  source: 'sources',
};

/** What each resource can be printed as (`table` is the default, never named). */
const FORMATS: Readonly<Record<Resource, readonly OutputFormat[]>> = {
  pods: ['json', 'yaml', 'name', 'wide'],
  containers: [],
  events: ['json', 'yaml'],
  sources: ['json', 'yaml'],
};

interface GetOptions extends ConnectionOptions {
  readonly allNamespaces: boolean;
  readonly selector?: string;
  readonly output?: string;
  readonly headers: boolean;
  readonly watch: boolean;
  readonly outputWatchEvents: boolean;
  readonly all: boolean;
  readonly for?: string;
}

/** `kubelet-ts get`'s arguments and options: what its `--help` prints, and what docs/CLI.md's reference is made from. */
export function getProgram(): Command {
  return addConnectionOptions(new Command('kubelet-ts get'))
    .description('list the pods, containers, events or manifest sources of a running agent (as kubectl get, crictl ps)')
    .argument('<resource>', 'pods (po), containers (ps), events (ev) or sources')
    .argument('[names...]', 'only these, by name')
    .addOption(new Option('-A, --all-namespaces', 'every namespace (a NAMESPACE column first)').default(false))
    .addOption(new Option('-l, --selector <selector>', 'pods and containers: by label, e.g. app=web,tier!=db,release,!canary'))
    .addOption(new Option('-o, --output <format>', 'pods: json, yaml, name or wide; events and sources: json or yaml'))
    .addOption(new Option('--no-headers', 'no header line'))
    .addOption(new Option('-w, --watch', 'pods and events: after the list, a line for each change, until interrupted').default(false))
    .addOption(new Option('--output-watch-events', 'with -w: an EVENT column (ADDED, MODIFIED, DELETED)').default(false))
    .addOption(new Option('-a, --all', 'containers: the exited ones too (as crictl ps -a)').default(false))
    .addOption(new Option('--for <object>', 'events: only those of pod/NAME or node/NAME'));
}

/**
 * `kubelet-ts get RESOURCE [NAME…]`: what a running agent has, as kubectl prints it. `pods`
 * (kubectl get pods: READY, STATUS, RESTARTS, AGE; `-o wide|json|yaml|name`, `-l`, `-w`),
 * `containers` (crictl ps, `-a` for the exited ones), `events` (kubectl events, `--for`, `-w`)
 * and `sources` (the agent's manifest sources and what they rejected). Exit codes as every
 * client command's: see `EXIT_CODES_HELP`.
 */
export async function getMain(argv: readonly string[], io: GetIo = process): Promise<number> {
  const program = getProgram();
  const ended = parseClientCommand(program, argv, io);
  if (ended !== undefined) return ended;
  const [asked = '', ...names] = program.args;
  const options = program.opts<GetOptions>();
  try {
    const resource = RESOURCES[asked];
    if (resource === undefined)
      throw new AgentClientError(`unknown resource ${JSON.stringify(asked)}: use pods (po), containers (ps), events (ev) or sources`);
    const output = outputOf(resource, options.output);
    checkFlags(resource, options);
    const selector = parseSelector(options.selector ?? '');
    const target = options.for === undefined ? undefined : parseFor(options.for);
    const { client, namespace } = await openAgent(options, io.env);
    const ctx: GetContext = {
      client,
      namespace,
      allNamespaces: options.allNamespaces,
      names,
      selector,
      output,
      noHeaders: !options.headers,
      watch: options.watch,
      watchEvents: options.outputWatchEvents,
      all: options.all,
      for: target,
      colour: colourWanted(io),
      now: io.now ?? Date.now,
      io,
    };
    switch (resource) {
      case 'pods':
        return await getPods(ctx);
      case 'containers':
        return await getContainers(ctx);
      case 'events':
        return await getEvents(ctx);
      case 'sources':
        return await getSources(ctx);
    }
  } catch (error) {
    return failed('kubelet-ts get', error, io.stderr);
  }
}

function outputOf(resource: Resource, asked: string | undefined): OutputFormat {
  if (asked === undefined) return 'table';
  const allowed = FORMATS[resource];
  if (!(allowed as readonly string[]).includes(asked))
    throw new AgentClientError(
      allowed.length === 0
        ? `${resource} are printed as a table only: -o ${asked} is not a format for them`
        : `unknown output format ${JSON.stringify(asked)} for ${resource}: use ${allowed.join(', ')}`,
    );
  return asked as OutputFormat;
}

/** Flags that mean nothing for the resource asked for are refused, not ignored. */
function checkFlags(resource: Resource, options: GetOptions): void {
  const refuse = (flag: string, only: string) => {
    throw new AgentClientError(`${flag} is for ${only}, not ${resource}`);
  };
  if (options.watch && resource !== 'pods' && resource !== 'events') refuse('-w', 'pods and events');
  if (options.outputWatchEvents && !options.watch) throw new AgentClientError('--output-watch-events goes with -w');
  if (options.all && resource !== 'containers') refuse('-a', 'containers');
  if (options.for !== undefined && resource !== 'events') refuse('--for', 'events');
  if (options.selector !== undefined && resource !== 'pods' && resource !== 'containers') refuse('-l', 'pods and containers');
}
