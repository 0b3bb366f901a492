import { compare, inScope, type GetContext } from './get-context.js';
import { wordyDuration } from './human-duration.js';
import { selects } from './label-selector.js';
import { CRICTL_TABLE, table, type Cell } from './table.js';
import { namespaceOf, type V1ContainerState, type V1Pod } from './v1.js';

/** crictl's truncated ids (`TruncatedIDLen`). */
const ID_LENGTH = 13;

/** One container of the node, as `crictl ps` lists one. */
export interface ContainerRow {
  readonly id: string;
  readonly image: string;
  /** When it started, ms since the epoch: the v1 status has no creation time, its start is the nearest. */
  readonly created?: number;
  readonly state: 'Running' | 'Exited' | 'Waiting';
  readonly exitCode?: number;
  readonly name: string;
  readonly attempt: number;
  readonly podId: string;
  readonly pod: string;
}

/** A container id without its runtime's scheme (`docker://`, `containerd://`, `memory://`). */
const bareId = (containerID: string) => containerID.replace(/^[a-z][a-z0-9+.-]*:\/\//, '');

const time = (text: string | undefined) => {
  const ms = Date.parse(text ?? '');
  return Number.isNaN(ms) ? undefined : ms;
};

/**
 * The containers of a pod as crictl sees them on the node: the running ones; with `all`, the
 * exited ones too, among them each container's previous run (its last state), and one that
 * exists but waits (created, not started). A container the runtime has not made yet is no row.
 * ATTEMPT is the run's restart count (the previous run's is one less, unless it is the one shown).
 */
export function containerRows(pod: V1Pod, all: boolean): ContainerRow[] {
  const rows: ContainerRow[] = [];
  const images = new Map((pod.spec?.containers ?? []).map((c) => [c.name, c.image ?? '']));
  for (const c of pod.status?.containerStatuses ?? []) {
    const base = {
      image: c.image ?? images.get(c.name) ?? '',
      name: c.name,
      podId: (pod.metadata.uid ?? '').slice(0, ID_LENGTH),
      pod: pod.metadata.name,
    };
    const restarts = c.restartCount ?? 0;
    const shown = new Set<string>();
    const add = (containerID: string | undefined, state: V1ContainerState, attempt: number) => {
      if (containerID === undefined || shown.has(containerID)) return;
      const running = state.running !== undefined;
      if (!running && !all) return;
      shown.add(containerID);
      const started = state.running?.startedAt ?? state.terminated?.startedAt;
      const exitCode = state.terminated?.exitCode;
      rows.push({
        ...base,
        id: bareId(containerID).slice(0, ID_LENGTH),
        ...(time(started) === undefined ? {} : { created: time(started)! }),
        state: running ? 'Running' : state.terminated !== undefined ? 'Exited' : 'Waiting',
        ...(exitCode === undefined ? {} : { exitCode }),
        attempt,
      });
    };
    const current = c.state ?? {};
    add(c.containerID ?? current.terminated?.containerID, current, restarts);
    const last = c.lastState?.terminated;
    if (last !== undefined) {
      const id = last.containerID;
      add(id, { terminated: last }, id !== undefined && id === c.containerID ? restarts : Math.max(0, restarts - 1));
    }
  }
  return rows;
}

/** `kubelet-ts get containers` (`ps`): the node's containers as `crictl ps [-a]` prints them, newest first. */
export async function getContainers(ctx: GetContext): Promise<number> {
  const list = (await ctx.client.json('/pods')) as { items?: V1Pod[] };
  const rows = (list.items ?? [])
    .filter((p) => inScope(ctx, namespaceOf(p)) && selects(ctx.selector, p.metadata.labels))
    .filter((p) => ctx.names.length === 0 || ctx.names.includes(p.metadata.name))
    .flatMap((p) => containerRows(p, ctx.all))
    .sort((a, b) => (b.created ?? 0) - (a.created ?? 0) || compare(a.pod, b.pod) || compare(a.name, b.name));
  const now = ctx.now();
  const cells = rows.map((r): Cell[] => [
    r.id,
    r.image,
    r.created === undefined ? 'Unknown' : `${wordyDuration(now - r.created)} ago`,
    { text: r.state, colour: r.state === 'Running' ? 'green' : r.state === 'Waiting' || r.exitCode === 0 ? 'yellow' : 'red' },
    r.name,
    String(r.attempt),
    r.podId,
    r.pod,
  ]);
  const head = ['CONTAINER', 'IMAGE', 'CREATED', 'STATE', 'NAME', 'ATTEMPT', 'POD ID', 'POD'];
  // crictl prints its header over no rows, rather than saying there are none.
  ctx.io.stdout.write(table(ctx.noHeaders ? cells : [head, ...cells], { colour: ctx.colour, layout: CRICTL_TABLE }));
  return 0;
}
