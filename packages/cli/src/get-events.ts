import { AgentClientError } from './agent-client.js';
import { inScope, noneFound, printList, printWatched, watchStopped, type GetContext } from './get-context.js';
import { since } from '@kubelet-ts/source-server/pod-printing';
import { TablePrinter, type Cell } from './table.js';
import type { V1Event, WatchEvent } from './v1.js';
import { followWatch } from './watch-lines.js';

/** An event's namespace: a node's events are the default namespace's, as the API server files them. */
export const eventNamespace = (e: V1Event): string => e.metadata?.namespace ?? e.involvedObject.namespace ?? 'default';

/** The name of what an event is about: a pod by its name as `get pods` names it (the agent sends its v1 name). */
export const involvedName = (e: V1Event): string => e.involvedObject.name ?? '';

/** Whether an event is about the pod `name` of `namespace` (by its uid when both know it). */
export function isAboutPod(e: V1Event, name: string, namespace: string, uid?: string): boolean {
  if (e.involvedObject.kind !== 'Pod' || (e.involvedObject.namespace ?? 'default') !== namespace) return false;
  if (uid !== undefined && e.involvedObject.uid !== undefined) return e.involvedObject.uid === uid;
  return involvedName(e) === name;
}

/** kubectl's OBJECT: the kind in lower case and the name, `pod/web`, `node/node-1`. */
export const eventObject = (e: V1Event): string => {
  const kind = (e.involvedObject.kind ?? '').toLowerCase();
  const name = involvedName(e);
  return name === '' ? kind : `${kind}/${name}`;
};

/**
 * When an event was seen, as `kubectl events` and `kubectl describe` print it: how long ago it
 * first was, or for a folded one how long ago it last was, how often and over how long,
 * `2m (x4 over 10m)`.
 */
export function eventInterval(e: V1Event, now: number): string {
  const first = since(e.firstTimestamp ?? e.lastTimestamp, now);
  return (e.count ?? 1) > 1 ? `${since(e.lastTimestamp, now)} (x${e.count} over ${first})` : first;
}

/** Oldest first, newest at the bottom: by when each was last seen. */
export function byLastSeen(a: V1Event, b: V1Event): number {
  const at = (e: V1Event) => Date.parse(e.lastTimestamp ?? e.firstTimestamp ?? '') || 0;
  return at(a) - at(b);
}

/** `--for pod/NAME` or `--for node/NAME`, as `kubectl events --for` takes it. */
export function parseFor(text: string): { readonly kind: 'Pod' | 'Node'; readonly name: string } {
  const match = /^(pods?|po|nodes?|no)\/(.+)$/.exec(text);
  if (match === null) throw new AgentClientError(`--for ${JSON.stringify(text)}: give pod/NAME or node/NAME`);
  return { kind: match[1]!.startsWith('po') ? 'Pod' : 'Node', name: match[2]! };
}

function wanted(ctx: GetContext, e: V1Event): boolean {
  if (!inScope(ctx, eventNamespace(e))) return false;
  const target = ctx.for;
  return target === undefined || (e.involvedObject.kind === target.kind && involvedName(e) === target.name);
}

/**
 * `kubelet-ts get events` (`ev`): the agent's recent events (`GET /events`) as `kubectl events`
 * prints them (LAST SEEN with the folds, TYPE, REASON, OBJECT, MESSAGE), oldest first; with
 * `-w`, a row for each new event or fold (`GET /events?watch=1`) until stopped. The namespace is
 * chosen here rather than by the agent, so that the node's events show in `default` as kubectl shows them.
 */
export async function getEvents(ctx: GetContext): Promise<number> {
  const list = (await ctx.client.json('/events')) as { items?: V1Event[] };
  const events = (list.items ?? []).filter((e) => wanted(ctx, e)).sort(byLastSeen);
  const printer = new TablePrinter(ctx.colour);
  let headed = ctx.noHeaders;
  const row = (e: V1Event, change?: WatchEvent<V1Event>['type']): Cell[] => {
    const warning = e.type === 'Warning' ? 'yellow' : undefined;
    return [
      ...(ctx.watchEvents && ctx.watch ? [change ?? 'ADDED'] : []),
      ...(ctx.allNamespaces ? [eventNamespace(e)] : []),
      eventInterval(e, ctx.now()),
      { text: e.type ?? '', colour: warning },
      { text: e.reason ?? '', colour: warning },
      eventObject(e),
      (e.message ?? '').trim(),
    ];
  };
  const print = (shown: readonly V1Event[], change?: WatchEvent<V1Event>['type']) => {
    if (ctx.output === 'json' || ctx.output === 'yaml') {
      if (change === undefined && !ctx.watch) printList(ctx, 'EventList', shown, ctx.output);
      else for (const e of shown) printWatched(ctx, e, ctx.output);
      return;
    }
    if (shown.length === 0) return;
    const head = [
      ...(ctx.watchEvents && ctx.watch ? ['EVENT'] : []),
      ...(ctx.allNamespaces ? ['NAMESPACE'] : []),
      'LAST SEEN',
      'TYPE',
      'REASON',
      'OBJECT',
      'MESSAGE',
    ];
    const rows = shown.map((e) => row(e, change));
    ctx.io.stdout.write(printer.format(headed ? rows : [head, ...rows]));
    headed = true;
  };
  if (events.length === 0 && ctx.output === 'table') noneFound(ctx);
  else print(events);
  if (!ctx.watch) return 0;
  const listed = new Map(events.map((e) => [e.metadata?.name, JSON.stringify(e)]));
  await followWatch<V1Event>(ctx.client, '/events?watch=1', watchStopped(ctx), (change) => {
    const before = listed.get(change.object.metadata?.name);
    listed.delete(change.object.metadata?.name);
    if (change.type === 'ADDED' && before === JSON.stringify(change.object)) return;
    if (wanted(ctx, change.object)) print([change.object], change.type);
  });
  return 0;
}
