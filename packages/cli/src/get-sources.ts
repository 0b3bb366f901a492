import { serialised, type GetContext } from './get-context.js';
import { since } from '@kubelet-ts/source-server/pod-printing';
import { table, type Cell, type Colour } from './table.js';
import type { SourceItem } from './v1.js';

/** A source's STATUS: `ok`, `down: <why>` while it waits to be started again, else its last problem. */
export function sourceStatus(source: SourceItem): { readonly text: string; readonly colour: Colour } {
  if (source.down !== undefined) return { text: `down: ${source.down}`, colour: 'red' };
  if (source.lastError !== undefined) return { text: source.lastError, colour: 'yellow' };
  return { text: 'ok', colour: 'green' };
}

/**
 * `kubelet-ts get sources`: each manifest source of the agent (`GET /sources`) in priority order,
 * whether it has delivered, how many manifests, and how it is; then, under their own heading,
 * the manifests the sources rejected: the source, how often and how long ago last, and the
 * agent's message (which names the manifest and its field errors).
 */
export async function getSources(ctx: GetContext): Promise<number> {
  const list = (await ctx.client.json('/sources')) as { kind?: string; items?: SourceItem[] };
  const sources = (list.items ?? []).filter((s) => ctx.names.length === 0 || ctx.names.includes(s.name));
  if (ctx.output === 'json' || ctx.output === 'yaml') {
    ctx.io.stdout.write(serialised({ ...list, items: sources }, ctx.output));
    return 0;
  }
  const rows = sources.map((s): Cell[] => [s.name, s.seen === true ? 'yes' : 'no', String(s.manifests ?? 0), sourceStatus(s)]);
  const head = ['NAME', 'SEEN', 'MANIFESTS', 'STATUS'];
  ctx.io.stdout.write(table(ctx.noHeaders ? rows : [head, ...rows], { colour: ctx.colour }));
  const rejected = sources.flatMap((s) =>
    (s.rejected ?? []).map((r): Cell[] => [s.name, String(r.count ?? 1), since(r.lastSeen, ctx.now()), { text: r.message, colour: 'red' }]),
  );
  if (rejected.length === 0) return 0;
  const rejectedHead = ['SOURCE', 'COUNT', 'LAST SEEN', 'MESSAGE'];
  ctx.io.stdout.write(`\nRejected manifests:\n${table(ctx.noHeaders ? rejected : [rejectedHead, ...rejected], { colour: ctx.colour })}`);
  return 0;
}
