import { Command, Option } from 'commander';
import { addConnectionOptions, failed, openAgent, parseClientCommand, type ConnectionOptions } from './connection.js';
import { table } from './table.js';

/** Where `kubelet-ts top` writes, and the environment it reads (the token). */
export interface TopIo {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
  readonly env: Readonly<Record<string, string | undefined>>;
}

interface TopOptions extends ConnectionOptions {
  readonly allNamespaces: boolean;
  readonly containers: boolean;
  readonly sortBy?: 'cpu' | 'memory';
}

/** The parts of the Summary API (`/stats/summary`) `top` reads. */
interface Figures {
  readonly cpu?: { readonly usageNanoCores?: number };
  readonly memory?: { readonly workingSetBytes?: number; readonly availableBytes?: number };
}
interface Summary {
  readonly node: Figures & { readonly nodeName: string };
  readonly pods: ReadonlyArray<
    Figures & {
      readonly podRef: { readonly name: string; readonly namespace: string };
      readonly containers: ReadonlyArray<Figures & { readonly name: string }>;
    }
  >;
}

const MI = 1024 * 1024;

/** `kubelet-ts top`'s arguments and options: what its `--help` prints, and what docs/CLI.md's reference is made from. */
export function topProgram(): Command {
  return addConnectionOptions(new Command('kubelet-ts top'))
    .description('show what pods or the node use now, from a running agent (as kubectl top)')
    .argument('<what>', '"pods" (or "pod", "po") or "node" (or "nodes", "no")')
    .addOption(new Option('-A, --all-namespaces', 'the pods of every namespace').default(false))
    .addOption(new Option('--containers', "each pod's containers on lines of their own").default(false))
    .addOption(new Option('--sort-by <figure>', 'largest first: cpu or memory').choices(['cpu', 'memory']));
}

/**
 * `kubelet-ts top pods` / `top node`: what the pods and the node use now, as `kubectl top` shows
 * it (CPU in millicores, memory as the working set in MiB), from a running agent's Summary API
 * (`GET /stats/summary`: its last housekeeping sample). CPU is a rate between two samples: until
 * the agent has taken two (a housekeeping interval after it started, or after a container
 * started), it shows `-`. Figures nobody read for 2 minutes are up to 5 minutes old (the agent's
 * `--housekeeping-unread-interval`); the agent samples again as it answers, so `top` run again
 * shows what is used now.
 */
export async function topMain(argv: readonly string[], io: TopIo = process): Promise<number> {
  const program = topProgram();
  const ended = parseClientCommand(program, argv, io);
  if (ended !== undefined) return ended;
  const what = program.args[0] ?? '';
  const options = program.opts<TopOptions>();
  const node = ['node', 'nodes', 'no'].includes(what);
  if (!node && !['pods', 'pod', 'po'].includes(what)) {
    io.stderr.write(`kubelet-ts top: unknown resource ${JSON.stringify(what)}: use "pods" or "node"\n`);
    return 1;
  }
  try {
    const { client, namespace } = await openAgent(options, io.env);
    const summary = (await client.json('/stats/summary')) as Summary;
    const rows = node ? nodeRows(summary) : podRows(summary, options, namespace);
    if (rows.length === 1) {
      io.stderr.write(options.allNamespaces ? 'No pods are running on this agent\n' : `No pods are running in namespace ${namespace}\n`);
      return 0;
    }
    io.stdout.write(table(rows));
    return 0;
  } catch (error) {
    return failed('kubelet-ts top', error, io.stderr);
  }
}

const cpu = (f: Figures) => (f.cpu?.usageNanoCores === undefined ? '-' : `${Math.round(f.cpu.usageNanoCores / 1e6)}m`);
const memory = (f: Figures) => (f.memory?.workingSetBytes === undefined ? '-' : `${Math.floor(f.memory.workingSetBytes / MI)}Mi`);

function nodeRows(summary: Summary): string[][] {
  const { node } = summary;
  const ws = node.memory?.workingSetBytes;
  const available = node.memory?.availableBytes;
  const share = ws === undefined || available === undefined ? '-' : `${Math.round((100 * ws) / (ws + available))}%`;
  return [
    ['NAME', 'CPU(cores)', 'MEMORY(bytes)', 'MEMORY%'],
    [node.nodeName, cpu(node), memory(node), share],
  ];
}

function podRows(summary: Summary, options: TopOptions, namespace: string): string[][] {
  const pods = summary.pods.filter((p) => options.allNamespaces || p.podRef.namespace === namespace);
  const key = (f: Figures) => (options.sortBy === 'cpu' ? (f.cpu?.usageNanoCores ?? -1) : (f.memory?.workingSetBytes ?? -1));
  if (options.sortBy !== undefined) pods.sort((a, b) => key(b) - key(a));
  const head = [...(options.allNamespaces ? ['NAMESPACE'] : []), ...(options.containers ? ['POD', 'NAME'] : ['NAME'])];
  const rows = [[...head, 'CPU(cores)', 'MEMORY(bytes)']];
  for (const p of pods) {
    const ns = options.allNamespaces ? [p.podRef.namespace] : [];
    if (!options.containers) rows.push([...ns, p.podRef.name, cpu(p), memory(p)]);
    else for (const c of p.containers) rows.push([...ns, p.podRef.name, c.name, cpu(c), memory(c)]);
  }
  return rows;
}
