import { AgentClientError } from './agent-client.js';
import { byNamespaceAndName, inScope, noneFound, printList, printWatched, watchStopped, type GetContext } from './get-context.js';
import { since } from './human-duration.js';
import { selects } from './label-selector.js';
import { TablePrinter, type Cell, type Colour } from './table.js';
import { namespaceOf, type V1Pod, type WatchEvent } from './v1.js';
import { followWatch } from './watch-lines.js';

/** What kubectl's `printPod` says of a pod: ready containers of all, the STATUS word, and restarts. */
export interface PodSummary {
  readonly ready: string;
  readonly status: string;
  readonly restarts: string;
}

/**
 * A pod's READY, STATUS and RESTARTS by kubectl's rules (`printPod` in
 * pkg/printers/internalversion/printers.go): the status is the phase (or the pod's reason),
 * overridden by a container's waiting reason (`ContainerCreating`, `CrashLoopBackOff`,
 * `ImagePullBackOff`) or terminated reason (`Completed`, `Error`), the first container's winning;
 * `Completed` with one still running reads `Running` (or `NotReady`); a pod on its way out reads
 * `Terminating` unless it has finished. Restarts add up, with how long ago the latest ended.
 * `deleted` counts the pod as on its way out: the agent drops a pod at once, where the API server
 * would first show it with a deletion time.
 */
export function podSummary(pod: V1Pod, now: number, deleted = false): PodSummary {
  const statuses = pod.status?.containerStatuses ?? [];
  const phase = pod.status?.phase ?? '';
  let reason = pod.status?.reason || phase;
  let restarts = 0;
  let readyCount = 0;
  let lastRestart: number | undefined;
  let hasRunning = false;
  const inits = pod.spec?.initContainers ?? [];
  const sidecars = new Set(inits.filter((c) => c.restartPolicy === 'Always').map((c) => c.name));
  // The init containers first, in order: the first not done says Init:<n>/<total>, or why it waits or failed.
  let initializing = false;
  (pod.status?.initContainerStatuses ?? []).forEach((c, i) => {
    restarts += c.restartCount ?? 0;
    const finished = Date.parse(c.lastState?.terminated?.finishedAt ?? '');
    if (!Number.isNaN(finished) && (lastRestart === undefined || finished > lastRestart)) lastRestart = finished;
    if (initializing) return;
    const { waiting, terminated } = c.state ?? {};
    if (terminated?.exitCode === 0) return;
    if (sidecars.has(c.name) && c.started === true) {
      if (c.ready === true) readyCount += 1;
      return;
    }
    initializing = true;
    if (terminated !== undefined) reason = `Init:${terminated.reason || `ExitCode:${terminated.exitCode ?? 0}`}`;
    else if (waiting?.reason && waiting.reason !== 'PodInitializing') reason = `Init:${waiting.reason}`;
    else reason = `Init:${i}/${inits.length}`;
  });
  const initialized = pod.status?.conditions?.some((c) => c.type === 'Initialized' && c.status === 'True') === true;
  // Last to first, so that the first container's word is the one left.
  for (const c of initializing && !initialized ? [] : [...statuses].reverse()) {
    restarts += c.restartCount ?? 0;
    const finished = Date.parse(c.lastState?.terminated?.finishedAt ?? '');
    if (!Number.isNaN(finished) && (lastRestart === undefined || finished > lastRestart)) lastRestart = finished;
    const { waiting, terminated, running } = c.state ?? {};
    if (waiting?.reason) reason = waiting.reason;
    else if (terminated?.reason) reason = terminated.reason;
    else if (terminated !== undefined) reason = terminated.signal ? `Signal:${terminated.signal}` : `ExitCode:${terminated.exitCode ?? 0}`;
    else if (c.ready === true && running !== undefined) {
      hasRunning = true;
      readyCount += 1;
    }
  }
  if (reason === 'Completed' && hasRunning)
    reason = pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ? 'Running' : 'NotReady';
  if ((deleted || pod.metadata.deletionTimestamp !== undefined) && phase !== 'Succeeded' && phase !== 'Failed') reason = 'Terminating';
  const ago = lastRestart === undefined ? '' : ` (${since(new Date(lastRestart).toISOString(), now)} ago)`;
  return {
    ready: `${readyCount}/${(pod.spec?.containers?.length ?? statuses.length) + sidecars.size}`,
    status: reason,
    restarts: restarts === 0 ? '0' : `${restarts}${ago}`,
  };
}

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
  const summary = podSummary(pod, ctx.now(), event === 'DELETED');
  const ip = pod.status?.podIPs?.[0]?.ip ?? pod.status?.podIP;
  return [
    ...(ctx.watchEvents && ctx.watch ? [event ?? 'ADDED'] : []),
    ...(ctx.allNamespaces ? [namespaceOf(pod)] : []),
    pod.metadata.name,
    summary.ready,
    { text: summary.status, colour: statusColour(summary.status) },
    summary.restarts,
    // kubectl counts from the creation time; the agent's pods have their start time.
    since(pod.metadata.creationTimestamp ?? pod.status?.startTime, ctx.now()),
    ...(ctx.output === 'wide' ? [ip || '<none>', pod.spec?.nodeName || '<none>'] : []),
  ];
}

/** Whether `get pods` asked for this pod: its namespace, the names given, the label selector. */
function wanted(ctx: GetContext, pod: V1Pod): boolean {
  return (
    inScope(ctx, namespaceOf(pod)) &&
    (ctx.names.length === 0 || ctx.names.includes(pod.metadata.name)) &&
    selects(ctx.selector, pod.metadata.labels)
  );
}

const key = (pod: V1Pod) => `${namespaceOf(pod)}/${pod.metadata.name}`;

/**
 * `kubelet-ts get pods`: the agent's pods (`GET /pods`) as kubectl prints them, then with `-w`
 * a row for each change (`GET /pods?watch=1`) until stopped.
 */
export async function getPods(ctx: GetContext): Promise<number> {
  const list = (await ctx.client.json('/pods')) as { items?: V1Pod[] };
  const pods = (list.items ?? []).filter((p) => wanted(ctx, p)).sort(byNamespaceAndName((p) => [namespaceOf(p), p.metadata.name]));
  const missing = ctx.names.filter((name) => !pods.some((p) => p.metadata.name === name));
  if (missing.length > 0 && !ctx.watch)
    throw new AgentClientError(
      `pod${missing.length === 1 ? '' : 's'} ${missing.map((n) => `"${n}"`).join(', ')} not found${ctx.allNamespaces ? '' : ` in namespace ${ctx.namespace}`}`,
    );
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
