/**
 * kubectl's pod columns (NAME, READY, STATUS, RESTARTS, AGE; wide: IP, NODE) by its own rules
 * (`printPod` in pkg/printers/internalversion/printers.go, apimachinery's `duration.HumanDuration`):
 * what the agent serves as a `Table` and what `kubelet-ts get pods` prints from a watch. It imports
 * nothing at run time (only the v1 types), so that a client loads it alone (`@kubelet-ts/source-server/pod-printing`).
 */
import type { V1Pod } from '@kubelet-ts/core';

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/**
 * A duration as kubectl shows an age, to two or three figures (apimachinery's
 * `duration.HumanDuration`): `45s` under 2 minutes, `5m30s` under 10, `25m` under 3 hours,
 * `5h30m` under 8, `20h` under 2 days, `3d4h` under 8, `30d` under 2 years, `2y45d` under 8,
 * then years. Up to a second and a bit in the future (clock skew) is `0s`; more is `<invalid>`.
 */
export function humanDuration(ms: number): string {
  const seconds = Math.trunc(ms / SECOND);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.trunc(ms / MINUTE);
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.trunc(ms / HOUR);
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`;
  if (hours < 48) return `${hours}h`;
  const days = Math.trunc(hours / 24);
  if (hours < 24 * 8) return hours % 24 === 0 ? `${days}d` : `${days}d${hours % 24}h`;
  if (hours < 24 * 365 * 2) return `${days}d`;
  const years = Math.trunc(days / 365);
  if (hours < 24 * 365 * 8) return days % 365 === 0 ? `${years}y` : `${years}y${days % 365}d`;
  return `${years}y`;
}

/** How long ago an RFC 3339 time was, as kubectl's `translateTimestampSince`: `<unknown>` without one. */
export function since(time: string | undefined, now: number): string {
  const at = time === undefined ? Number.NaN : Date.parse(time);
  return Number.isNaN(at) ? '<unknown>' : humanDuration(now - at);
}

/** What kubectl's pod columns read of a v1 Pod: the shared type (`V1Pod` of `@kubelet-ts/core`). */
export type PrintedPod = V1Pod;

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
 * `deleted` counts the pod as on its way out even without a deletion time (a watch's `DELETED`).
 */
export function podSummary(pod: PrintedPod, now: number, deleted = false): PodSummary {
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
  if ((deleted || pod.metadata?.deletionTimestamp !== undefined) && phase !== 'Succeeded' && phase !== 'Failed') reason = 'Terminating';
  const ago = lastRestart === undefined ? '' : ` (${since(new Date(lastRestart).toISOString(), now)} ago)`;
  return {
    ready: `${readyCount}/${(pod.spec?.containers?.length ?? statuses.length) + sidecars.size}`,
    status: reason,
    restarts: restarts === 0 ? '0' : `${restarts}${ago}`,
  };
}

/** The media type of a `meta.k8s.io/v1` `Table`, as kubectl asks the API server for one. */
export const TABLE_MEDIA_TYPE = 'application/json;as=Table;v=v1;g=meta.k8s.io';

/** A column of a `meta.k8s.io/v1` `Table`: kubectl shows priority 0 always, 1 with `-o wide`. */
export interface TableColumn {
  readonly name: string;
  readonly type: string;
  readonly format: string;
  readonly description: string;
  readonly priority: number;
}

/** The API server's pod columns, as kubectl asks for them (`Accept: …;as=Table`), less the two a node without a scheduler has no use for (Nominated Node, Readiness Gates). */
export const POD_COLUMNS: readonly TableColumn[] = [
  { name: 'Name', type: 'string', format: 'name', description: 'The name of the pod, unique within its namespace.', priority: 0 },
  {
    name: 'Ready',
    type: 'string',
    format: '',
    description: 'The aggregate readiness state of this pod for accepting traffic.',
    priority: 0,
  },
  { name: 'Status', type: 'string', format: '', description: 'The aggregate status of the containers in this pod.', priority: 0 },
  {
    name: 'Restarts',
    type: 'string',
    format: '',
    description:
      'The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.',
    priority: 0,
  },
  { name: 'Age', type: 'string', format: '', description: 'How long ago the pod was created (on this agent: started).', priority: 0 },
  { name: 'IP', type: 'string', format: '', description: 'IP address allocated to the pod. Empty if not yet allocated.', priority: 1 },
  { name: 'Node', type: 'string', format: '', description: 'The node the pod runs on.', priority: 1 },
];

/** A pod's cells under `POD_COLUMNS`; `deleted` as in `podSummary`. */
export function podCells(pod: PrintedPod, now: number, deleted = false): string[] {
  const summary = podSummary(pod, now, deleted);
  const ip = pod.status?.podIPs?.[0]?.ip ?? pod.status?.podIP;
  return [
    pod.metadata?.name ?? '',
    summary.ready,
    summary.status,
    summary.restarts,
    // kubectl counts from the creation time; the agent's pods have their start time.
    since(pod.metadata?.creationTimestamp ?? pod.status?.startTime, now),
    ip || '<none>',
    pod.spec?.nodeName || '<none>',
  ];
}
