import { createRequire } from 'node:module';
import type { AgentClient } from './agent-client.js';
import type { Requirement } from './label-selector.js';

/** Where `kubelet-ts get` and `describe` write, what they read, what stops a watch, and the time ages count to. */
export interface GetIo {
  readonly stdout: NodeJS.WritableStream & { readonly isTTY?: boolean };
  readonly stderr: NodeJS.WritableStream;
  readonly env: Readonly<Record<string, string | undefined>>;
  /**
   * Called as a watch (`-w`) begins: it ends when what this returns settles (the CLI: at SIGINT,
   * listened for only then, so that Ctrl-C ends anything else at once). Without it a watch runs
   * until the agent ends it.
   */
  readonly stopped?: () => Promise<unknown>;
  /** Now, in ms since the epoch: what AGE and LAST SEEN count to. Default `Date.now`. */
  readonly now?: () => number;
}

/** How `get` prints: kubectl's table (or its wide form), each object as JSON or YAML, or `kind/name` lines. */
export type OutputFormat = 'table' | 'wide' | 'json' | 'yaml' | 'name';

/** A `kubelet-ts get` being run: the agent, what was asked, and where it goes. */
export interface GetContext {
  readonly client: AgentClient;
  /** The namespace asked for (`-n`, the kubeconfig context's, else `default`); every one with `allNamespaces`. */
  readonly namespace: string;
  readonly allNamespaces: boolean;
  /** Names given after the resource (only these, as `kubectl get pods web db`). */
  readonly names: readonly string[];
  readonly selector: readonly Requirement[];
  readonly output: OutputFormat;
  readonly noHeaders: boolean;
  readonly watch: boolean;
  /** `--output-watch-events`: an EVENT column (ADDED, MODIFIED, DELETED) before a watch's rows. */
  readonly watchEvents: boolean;
  /** `get containers -a`: exited containers too. */
  readonly all: boolean;
  /** `get events --for pod/NAME`. */
  readonly for?: { readonly kind: 'Pod' | 'Node'; readonly name: string } | undefined;
  readonly colour: boolean;
  readonly now: () => number;
  readonly io: GetIo;
}

/** What ends a watch of `ctx` (see `GetIo.stopped`). */
export function watchStopped(ctx: GetContext): Promise<unknown> {
  return ctx.io.stopped?.() ?? new Promise(() => undefined);
}

/** Whether an object of `namespace` is one the command asked for. */
export function inScope(ctx: GetContext, namespace: string): boolean {
  return ctx.allNamespaces || namespace === ctx.namespace;
}

/** kubectl's words on stderr when nothing matched (its exit code stays 0). */
export function noneFound(ctx: GetContext): void {
  ctx.io.stderr.write(ctx.allNamespaces ? 'No resources found\n' : `No resources found in ${ctx.namespace} namespace.\n`);
}

/** An object or list as `-o json` (kubectl indents by 4) or `-o yaml` prints it. */
export function serialised(value: unknown, format: 'json' | 'yaml'): string {
  if (format === 'json') return `${JSON.stringify(value, null, 4)}\n`;
  // Loaded when asked for: `-o yaml` is the only YAML a table command writes.
  const { stringify } = createRequire(import.meta.url)('yaml') as typeof import('yaml');
  return stringify(value);
}

/**
 * The objects as `-o json|yaml` prints a listing: a list of `kind` (`PodList`, `EventList`) of
 * them, or the object alone when exactly one was asked for by name, as kubectl does.
 */
export function printList(ctx: GetContext, kind: string, items: readonly unknown[], format: 'json' | 'yaml'): void {
  const value = ctx.names.length === 1 && items.length === 1 ? items[0] : { kind, apiVersion: 'v1', metadata: {}, items };
  ctx.io.stdout.write(serialised(value, format));
}

/** One object of a watch in a serialised format: JSON objects one after another, YAML documents after `---`. */
export function printWatched(ctx: GetContext, object: unknown, format: 'json' | 'yaml'): void {
  ctx.io.stdout.write(format === 'yaml' ? `---\n${serialised(object, 'yaml')}` : serialised(object, 'json'));
}

/** Namespace first, then name: the order the API server lists objects in. */
export function byNamespaceAndName<T>(key: (item: T) => readonly [string, string]): (a: T, b: T) => number {
  return (a, b) => {
    const [an, am] = key(a);
    const [bn, bm] = key(b);
    return an === bn ? compare(am, bm) : compare(an, bn);
  };
}

/** Strings in byte order, as Go's `sort.Strings` puts them (not the locale's). */
export function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
