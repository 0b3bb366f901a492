import { createHash } from 'node:crypto';
import {
  canonicalJson,
  podUid,
  type ContainerManifest,
  type ContainerView,
  type EndedRun,
  type PodListing,
  type PodView,
} from '@kubelet-ts/core';
import { toV1Pod } from '@kubelet-ts/manifest';

/** A Kubernetes v1 `PodList`, as the kubelet's `/pods` answers. */
export interface V1PodList {
  readonly kind: 'PodList';
  readonly apiVersion: 'v1';
  readonly metadata: Record<string, never>;
  readonly items: readonly V1PodWithStatus[];
}

export interface V1PodWithStatus {
  readonly apiVersion: 'v1';
  readonly kind: 'Pod';
  readonly metadata: Record<string, unknown>;
  readonly spec: Record<string, unknown>;
  readonly status: Record<string, unknown>;
}

/** The node a list is rendered for (a `PodListing` without its pods). */
export type PodListOptions = Omit<PodListing, 'pods'>;

/** Our source names → the kubelet's `kubernetes.io/config.source` values (file, http, api, …). */
const CONFIG_SOURCES: Readonly<Record<string, string>> = { file: 'file', http: 'http', etcd: 'etcd', server: 'http' };

export const PodListAnnotations = {
  configSource: 'kubernetes.io/config.source',
  configHash: 'kubernetes.io/config.hash',
  /** The full name of the source the manifest came from (`config.source` only says its kind). */
  source: 'kubelet-ts.io/source',
  /** JSON: container name → `{ until, delaySeconds }` for each container waiting out its crash back-off. */
  backOff: 'kubelet-ts.io/back-off',
} as const;

/**
 * Renders desired pods and their containers' state as the kubelet's `/pods` does: `metadata` and
 * `spec` are `toV1Pod`'s (plus `spec.nodeName`, the kubelet's annotations and ours), `status` is
 * derived from the views by the kubelet's rules (`getPhase` and the pod conditions in
 * kubelet_pods.go / status_manager). Pure: the same input gives the same output. The mapping is
 * written out in the README, next to the route.
 *
 * It is rendered here, where `/pods` is served, rather than by the runner: the spec is `toV1Pod`'s,
 * a conversion of the manifest package, and the runner depends on core alone. The agent gives the
 * views and manifests (`AgentView.podListing`); this turns them into the kubelet's wire form.
 */
export function renderPodList(
  pods: readonly { readonly view: PodView; readonly manifest: ContainerManifest }[],
  options: PodListOptions,
): V1PodList {
  return { kind: 'PodList', apiVersion: 'v1', metadata: {}, items: pods.map(({ view, manifest }) => renderPod(view, manifest, options)) };
}

/** Each manifest's last rendered pod, and as JSON, and what it was rendered from (the node and the view, as JSON). */
const renderedOf = new WeakMap<ContainerManifest, RenderedPod & { readonly from: string }>();

/** A pod as `renderPodList` renders it, and as JSON. */
export interface RenderedPod {
  readonly pod: V1PodWithStatus;
  readonly json: string;
}

/**
 * `renderPodList`'s pods, each beside its JSON, made faster for a list read often and changed
 * little: a pod whose manifest object and view are what they were at the last read is not
 * rendered again (it is kept beside its manifest, keyed by its view's JSON).
 */
export function renderedPods(
  pods: readonly { readonly view: PodView; readonly manifest: ContainerManifest }[],
  options: PodListOptions,
): RenderedPod[] {
  const node = `${options.nodeName}\n${options.runtime}\n${options.hostIP ?? ''}\n`;
  return pods.map(({ view, manifest }) => {
    const from = node + JSON.stringify(view);
    const known = renderedOf.get(manifest);
    if (known !== undefined && known.from === from) return known;
    const pod = renderPod(view, manifest, options);
    const rendered = { from, pod, json: JSON.stringify(pod) };
    renderedOf.set(manifest, rendered);
    return rendered;
  });
}

/** `JSON.stringify(renderPodList(pods, options))`, the same text, from `renderedPods`: what `GET /pods` sends. */
export function renderPodListJson(
  pods: readonly { readonly view: PodView; readonly manifest: ContainerManifest }[],
  options: PodListOptions,
): string {
  const items = renderedPods(pods, options).map((p) => p.json);
  return `{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[${items.join(',')}]}`;
}

/** What a pod's rendering takes from its manifest alone: its v1 form, config hash and uid. */
interface ManifestParts {
  readonly source: string;
  readonly nodeName: string;
  readonly v1: ReturnType<typeof toV1Pod>;
  readonly configHash: string;
  readonly uid: string;
}

/**
 * Each manifest's parts, by the manifest object: a source hands the same object on until the
 * manifest changes, so a list of 1,000 pods is converted and hashed once, not at every read.
 */
const partsOf = new WeakMap<ContainerManifest, ManifestParts>();

function manifestParts(manifest: ContainerManifest, source: string, nodeName: string): ManifestParts {
  const known = partsOf.get(manifest);
  if (known !== undefined && known.source === source && known.nodeName === nodeName) return known;
  const parts = {
    source,
    nodeName,
    v1: toV1Pod(manifest),
    configHash: hex(`${source}\n${canonicalJson(manifest)}`),
    // The kubelet derives a static pod's uid from a hash of where it came from; a given uuid wins.
    uid: podUid(manifest, { node: nodeName, source }),
  };
  partsOf.set(manifest, parts);
  return parts;
}

function renderPod(view: PodView, manifest: ContainerManifest, options: PodListOptions): V1PodWithStatus {
  const { v1, configHash, uid } = manifestParts(manifest, view.source, options.nodeName);
  const backOffs = Object.fromEntries(
    view.containers.flatMap((c) =>
      c.backOff === undefined ? [] : [[c.name, { until: rfc3339(c.backOff.until), delaySeconds: c.backOff.delayMs / 1000 }]],
    ),
  );
  const metadata = {
    ...v1.metadata,
    namespace: manifest.namespace ?? 'default',
    uid,
    annotations: {
      ...(manifest.annotations ?? {}),
      [PodListAnnotations.configSource]: configSourceOf(view.source),
      [PodListAnnotations.configHash]: configHash,
      [PodListAnnotations.source]: view.source,
      ...(Object.keys(backOffs).length === 0 ? {} : { [PodListAnnotations.backOff]: JSON.stringify(backOffs) }),
    },
  };
  const init = initState(view, manifest);
  // While the init containers run, an app container waits for them, as the kubelet says.
  const apps = init.initialized
    ? view.containers
    : view.containers.map((c) => (c.state === 'missing' ? { ...c, waitingReason: 'PodInitializing' as const } : c));
  const statuses = apps.map((c) => containerStatus(c, view.id, options.runtime));
  const unready = view.containers.filter((c) => !c.ready).map((c) => c.name);
  const phase = init.failed ? 'Failed' : init.initialized ? podPhase(view.containers, manifest.restartPolicy ?? 'Always') : 'Pending';
  const allReady = unready.length === 0 && phase !== 'Succeeded';
  const notReady =
    phase === 'Succeeded'
      ? { reason: 'PodCompleted' }
      : { reason: 'ContainersNotReady', message: `containers with unready status: [${unready.join(' ')}]` };
  const podIP = manifest.hostNetwork === true ? options.hostIP : view.podIP;
  const startTime = earliest(view.containers.flatMap((c) => [c.startedAt, c.lastRun?.startedAt]));
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata,
    spec: { ...v1.spec, nodeName: options.nodeName },
    status: {
      phase,
      conditions: [
        init.initialized
          ? { type: 'Initialized', status: 'True' }
          : {
              type: 'Initialized',
              status: 'False',
              reason: 'ContainersNotInitialized',
              message: `containers with incomplete status: [${init.incomplete.join(' ')}]`,
            },
        { type: 'Ready', status: allReady ? 'True' : 'False', ...(allReady ? {} : notReady) },
        { type: 'ContainersReady', status: allReady ? 'True' : 'False', ...(allReady ? {} : notReady) },
        { type: 'PodScheduled', status: 'True' },
      ],
      ...(options.hostIP === undefined ? {} : { hostIP: options.hostIP }),
      ...(podIP === undefined ? {} : { podIP, podIPs: [{ ip: podIP }] }),
      ...(startTime === undefined ? {} : { startTime: rfc3339(startTime) }),
      ...(view.initContainers === undefined
        ? {}
        : { initContainerStatuses: view.initContainers.map((c) => containerStatus(c, view.id, options.runtime)) }),
      containerStatuses: statuses,
    },
  };
}

/**
 * Whether the pod's init containers are done (each that runs to completion exited 0, each sidecar
 * runs; or an app container has run, after which the kubelet runs none again), which of them are
 * not, and whether one failed for good (a failure under `restartPolicy: Never`: the pod Failed).
 */
function initState(view: PodView, manifest: ContainerManifest): { initialized: boolean; failed: boolean; incomplete: string[] } {
  const inits = view.initContainers ?? [];
  const sidecar = (i: number) => manifest.initContainers?.[i]?.restartPolicy === 'Always';
  const incomplete = inits
    .filter((c, i) => (sidecar(i) ? c.state !== 'running' : !(c.state === 'exited' && c.exitCode === 0)))
    .map((c) => c.name);
  const appsRan = view.containers.some((c) => c.state !== 'missing' || c.lastRun !== undefined);
  const initialized = incomplete.length === 0 || appsRan;
  const failed =
    !initialized && manifest.restartPolicy === 'Never' && inits.some((c, i) => !sidecar(i) && c.state === 'exited' && c.exitCode !== 0);
  return { initialized, failed, incomplete };
}

/**
 * The kubelet's `getPhase`: a container not running and never ended is waiting (Pending); any
 * running one, none unknown, is Running; all ended: Running under `Always` (they restart),
 * Succeeded when every one exited 0, Failed under `Never`, else Running (`OnFailure` restarts them).
 */
export function podPhase(
  containers: readonly ContainerView[],
  restartPolicy: 'Always' | 'OnFailure' | 'Never',
): 'Pending' | 'Running' | 'Succeeded' | 'Failed' {
  let running = 0;
  let waiting = 0;
  let stopped = 0;
  let succeeded = 0;
  for (const c of containers) {
    if (c.state === 'running') running += 1;
    else if (c.state === 'exited') {
      stopped += 1;
      if (c.exitCode === 0) succeeded += 1;
    } else if (c.lastRun !== undefined)
      stopped += 1; // waiting, but an earlier run ended: as the kubelet counts it
    else waiting += 1;
  }
  if (waiting > 0) return 'Pending';
  if (running > 0) return 'Running';
  if (stopped === 0) return 'Pending';
  if (restartPolicy === 'Always') return 'Running';
  if (stopped === succeeded) return 'Succeeded';
  return restartPolicy === 'Never' ? 'Failed' : 'Running';
}

function containerStatus(c: ContainerView, podId: string, runtime: string): Record<string, unknown> {
  const shownRun: EndedRun | undefined =
    c.state === 'exited' && c.id !== undefined
      ? { id: c.id, ...optional({ exitCode: c.exitCode, startedAt: c.startedAt, finishedAt: c.finishedAt }) }
      : undefined;
  let state: Record<string, unknown>;
  let last = c.lastRun;
  if (c.state === 'running') {
    state = { running: { ...optional({ startedAt: time(c.startedAt) }) } };
  } else if (c.waitingReason !== undefined) {
    state = { waiting: { reason: c.waitingReason, ...optional({ message: waitingMessage(c, podId) }) } };
    // While an exited container waits to be restarted, the run that ended is the last state.
    if (shownRun !== undefined) last = shownRun;
  } else if (shownRun !== undefined) {
    state = { terminated: terminated(shownRun, runtime) };
  } else {
    state = { waiting: { reason: 'ContainerCreating' } };
  }
  return {
    name: c.name,
    image: c.image,
    ...(c.id === undefined ? {} : { containerID: `${runtime}://${c.id}` }),
    restartCount: c.restartCount,
    ready: c.ready,
    started: c.started,
    state,
    lastState: last === undefined ? {} : { terminated: terminated(last, runtime) },
  };
}

function terminated(run: EndedRun, runtime: string): Record<string, unknown> {
  return {
    ...optional({ exitCode: run.exitCode }),
    reason: run.exitCode === 0 ? 'Completed' : 'Error',
    ...optional({ startedAt: time(run.startedAt), finishedAt: time(run.finishedAt) }),
    containerID: `${runtime}://${run.id}`,
  };
}

function waitingMessage(c: ContainerView, podId: string): string | undefined {
  if (c.waitingReason === 'CrashLoopBackOff' && c.backOff !== undefined) {
    return `back-off ${c.backOff.delayMs / 1000}s restarting failed container=${c.name} pod=${podId}; until ${rfc3339(c.backOff.until)}`;
  }
  if (c.waitingReason === 'CreateContainerConfigError' && c.refused !== undefined) return c.refused.message;
  if ((c.waitingReason === 'CreateContainerError' || c.waitingReason === 'RunContainerError') && c.refused !== undefined) {
    return `${c.refused.message} (tried again after ${rfc3339(c.refused.until)})`;
  }
  if (c.waitingReason === 'ImagePullBackOff' && c.pullBackOff !== undefined) {
    return `Back-off pulling image "${c.image}" until ${rfc3339(c.pullBackOff.until)}: ${c.pullBackOff.message}`;
  }
  return undefined;
}

function configSourceOf(source: string): string {
  const kind = /^[a-z]+/.exec(source)?.[0] ?? source;
  return CONFIG_SOURCES[kind] ?? source;
}

function earliest(times: readonly (number | undefined)[]): number | undefined {
  const known = times.filter((t): t is number => t !== undefined);
  return known.length === 0 ? undefined : Math.min(...known);
}

/** RFC 3339 in UTC, to the second, as Kubernetes writes times (`2026-12-03T10:36:17Z`). */
export function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

function time(ms: number | undefined): string | undefined {
  return ms === undefined ? undefined : rfc3339(ms);
}

function hex(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 32);
}

function optional<T extends Record<string, unknown>>(fields: T): Partial<T> {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) as Partial<T>;
}
