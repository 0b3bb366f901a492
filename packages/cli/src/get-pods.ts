import { POD_COLUMNS, TABLE_MEDIA_TYPE, podCells } from '@kubelet-ts/source-server/pod-printing';
import { AgentClientError } from './agent-client.js';
import { byNamespaceAndName, inScope, noneFound, printList, printWatched, watchStopped, type GetContext } from './get-context.js';
import { selects } from './label-selector.js';
import { TablePrinter, type Cell, type Colour } from './table.js';
import { namespaceOf, type V1Pod, type WatchEvent } from './v1.js';
import { followWatch } from './watch-lines.js';

/** The colour a STATUS word is shown in on a terminal: green running, yellow on its way, red for trouble, plain when done. */
export function statusColour(status: string): Colour | undefined {
  if (status === 'Running') return 'green';
  if (status === 'Completed' || status === 'Succeeded') return undefined;
  if (['Pending', 'ContainerCreating', 'PodInitializing', 'Terminating', 'NotReady'].includes(status)) return 'yellow';
  return 'red';
}

function header(ctx: GetContext): Cell[] {
  return [
    ...(ctx.watchEvents && ctx.watch ? ['EVENT'] : []),
    ...(ctx.allNamespaces ? ['NAMESPACE'] : []),
    'NAME',
    'READY',
    'STATUS',
    'RESTARTS',
    'AGE',
    ...(ctx.output === 'wide' ? ['IP', 'NODE'] : []),
  ];
}

function row(ctx: GetContext, pod: V1Pod, event?: WatchEvent<V1Pod>['type']): Cell[] {
  return cells(ctx, podCells(pod, ctx.now(), event === 'DELETED'), namespaceOf(pod), event);
}

/** A row of `cells` (kubectl's pod columns, `POD_COLUMNS`), with the columns the command asked for. */
function cells(
  ctx: GetContext,
  [name, ready, status, restarts, age, ip, node]: readonly string[],
  namespace: string,
  event?: string,
): Cell[] {
  return [
    ...(ctx.watchEvents && ctx.watch ? [event ?? 'ADDED'] : []),
    ...(ctx.allNamespaces ? [namespace] : []),
    name ?? '',
    ready ?? '',
    { text: status ?? '', colour: statusColour(status ?? '') },
    restarts ?? '',
    age ?? '',
    ...(ctx.output === 'wide' ? [ip ?? '<none>', node ?? '<none>'] : []),
  ];
}

/** Whether `get pods` asked for this pod: its namespace, the names given, the label selector. */
function wanted(ctx: GetContext, pod: Pick<V1Pod, 'metadata'>): boolean {
  return (
    inScope(ctx, namespaceOf(pod)) &&
    (ctx.names.length === 0 || ctx.names.includes(pod.metadata.name)) &&
    selects(ctx.selector, pod.metadata.labels)
  );
}

/** Fails for the names given that no pod listed has, as kubectl does. */
function notFound(ctx: GetContext, pods: readonly Pick<V1Pod, 'metadata'>[]): void {
  const missing = ctx.names.filter((name) => !pods.some((p) => p.metadata.name === name));
  if (missing.length > 0)
    throw new AgentClientError(
      `pod${missing.length === 1 ? '' : 's'} ${missing.map((n) => `"${n}"`).join(', ')} not found${ctx.allNamespaces ? '' : ` in namespace ${ctx.namespace}`}`,
    );
}

/** What `get pods` asks for: a `meta.k8s.io/v1` `Table` of the pods, else the `PodList`. */
const TABLE_ACCEPT = `${TABLE_MEDIA_TYPE}, application/json`;

/** A `meta.k8s.io/v1` `Table` of pods, each row with its pod's metadata (the server's default `includeObject=Metadata`). */
interface PodTable {
  readonly columnDefinitions?: ReadonlyArray<{ readonly name: string }>;
  readonly rows?: ReadonlyArray<{ readonly cells?: readonly unknown[]; readonly object?: Pick<V1Pod, 'metadata'> }>;
}

/**
 * `get pods` from the agent's `Table`: its rows, picked by their pods' metadata and sorted as the
 * list's are, under the columns asked for (found by name, so that a column the agent adds or
 * moves does not shift them).
 */
function printTable(ctx: GetContext, table: PodTable): number {
  const at = POD_COLUMNS.map((column) => (table.columnDefinitions ?? []).findIndex((d) => d.name === column.name));
  const rows = (table.rows ?? [])
    .flatMap((r) =>
      r.object?.metadata === undefined ? [] : [{ metadata: r.object.metadata, cells: at.map((i) => String(r.cells?.[i] ?? '')) }],
    )
    .filter((r) => wanted(ctx, r))
    .sort(byNamespaceAndName((r) => [namespaceOf(r), r.metadata.name]));
  notFound(ctx, rows);
  if (rows.length === 0) noneFound(ctx);
  else {
    const laidOut = rows.map((r) => cells(ctx, r.cells, namespaceOf(r)));
    ctx.io.stdout.write(new TablePrinter(ctx.colour).format(ctx.noHeaders ? laidOut : [header(ctx), ...laidOut]));
  }
  return 0;
}

const key = (pod: V1Pod) => `${namespaceOf(pod)}/${pod.metadata.name}`;

/**
 * `kubelet-ts get pods`: the agent's pods (`GET /pods`) as kubectl prints them, then with `-w`
 * a row for each change (`GET /pods?watch=1`) until stopped.
 */
export async function getPods(ctx: GetContext): Promise<number> {
  // A table of the pods as they are now: asked for as kubectl asks an API server, laid out by the agent.
  const tabled = !ctx.watch && (ctx.output === 'table' || ctx.output === 'wide');
  const list = (await ctx.client.json('/pods', tabled ? TABLE_ACCEPT : undefined)) as { kind?: string; items?: V1Pod[] };
  // An agent older than its Table answers with the list, laid out here.
  if (list.kind === 'Table') return printTable(ctx, list as PodTable);
  const pods = (list.items ?? []).filter((p) => wanted(ctx, p)).sort(byNamespaceAndName((p) => [namespaceOf(p), p.metadata.name]));
  if (!ctx.watch) notFound(ctx, pods);
  const printer = new TablePrinter(ctx.colour);
  let headed = ctx.noHeaders;
  const printRows = (rows: Cell[][]) => {
    ctx.io.stdout.write(printer.format(headed ? rows : [header(ctx), ...rows]));
    headed = true;
  };
  const print = (shown: readonly V1Pod[], event?: WatchEvent<V1Pod>['type']) => {
    if (ctx.output === 'name') for (const p of shown) ctx.io.stdout.write(`pod/${p.metadata.name}\n`);
    else if (ctx.output === 'json' || ctx.output === 'yaml') {
      if (event === undefined && !ctx.watch) printList(ctx, 'PodList', shown, ctx.output);
      else for (const p of shown) printWatched(ctx, p, ctx.output);
    } else if (shown.length > 0) printRows(shown.map((p) => row(ctx, p, event)));
  };
  if (pods.length === 0 && (ctx.output === 'table' || ctx.output === 'wide' || ctx.output === 'name')) noneFound(ctx);
  else print(pods);
  if (!ctx.watch) return 0;
  // The watch begins with every pod as ADDED: those already printed, unchanged, are not printed again.
  const listed = new Map(pods.map((p) => [key(p), JSON.stringify(p)]));
  await followWatch<V1Pod>(ctx.client, '/pods?watch=1', watchStopped(ctx), (change) => {
    const pod = change.object;
    const before = listed.get(key(pod));
    listed.delete(key(pod));
    if (change.type === 'ADDED' && before === JSON.stringify(pod)) return;
    if (wanted(ctx, pod)) print([pod], change.type);
  });
  return 0;
}
