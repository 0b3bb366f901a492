import type { AdmissionRefusal } from './admission.js';
import type { ContainerManifest } from './manifest.js';
import type { ContainerView, EndedRun, PodView } from './agent-view.js';
import type { V1ContainerState, V1ContainerStateTerminated, V1ContainerStatus, V1PodCondition, V1PodStatus } from './v1-types.js';

/**
 * A pod's status, as the kubelet writes a v1 Pod's `status` (`generateAPIPodStatus` and
 * `getPhase` in kubelet_pods.go, the conditions of the status manager), derived from what the agent
 * sees of the pod (its `PodView`) and its manifest. Pure: the same view gives the same status. The
 * agent's status model (`PodStatusManager` in `@kubelet-ts/runner`) keeps it per pod uid, with
 * memory (a terminal phase, each condition's last transition) and versions; `/pods` renders it.
 */
export interface PodStatus extends V1PodStatus {
  phase: PodPhase;
  /** Why the pod is in its phase, when the kubelet says (a pod it rejected: `OutOfcpu`, `NodeAffinity`…). */
  reason?: string;
  message?: string;
  conditions: PodCondition[];
  /** The pod's QoS class, from its containers' requests and limits, as the kubelet computes it. */
  qosClass: QosClass;
  /** RFC 3339. */
  startTime?: string;
  containerStatuses: V1ContainerStatus[];
}

/** A pod's phase (v1 `status.phase`). */
export type PodPhase = 'Pending' | 'Running' | 'Succeeded' | 'Failed';

/** A pod's quality of service class (v1 `status.qosClass`), from its containers' requests and limits. */
export type QosClass = 'Guaranteed' | 'Burstable' | 'BestEffort';

/** A condition of a pod's status (`PodScheduled`, `Initialized`, `ContainersReady`, `Ready`, …), true or false. */
export interface PodCondition extends V1PodCondition {
  status: 'True' | 'False';
  /** RFC 3339: when `status` last changed, as the status model saw it. */
  lastTransitionTime?: string;
}

/** What a pod's status takes from its node: the runtime's name (the scheme of a `containerID`) and the node's address. */
export interface PodStatusNode {
  readonly runtime: string;
  readonly hostIP?: string;
}

/**
 * The status of a pod the node's admission refused (see `admissionRefusal`), as the kubelet's
 * `rejectPod` writes it: `Failed`, the refusal's reason, "Pod was rejected: " and its message, the
 * QoS class; no container ever ran.
 */
export function rejectedPodStatus(manifest: ContainerManifest, refusal: AdmissionRefusal): PodStatus {
  return {
    phase: 'Failed',
    reason: refusal.reason,
    message: `Pod was rejected: ${refusal.message}`,
    conditions: [],
    qosClass: qosClassOf(manifest),
    containerStatuses: [],
  };
}

/** The pod's status now, by the kubelet's rules (see `PodStatus`). */
export function derivePodStatus(view: PodView, manifest: ContainerManifest, node: PodStatusNode): PodStatus {
  const init = initState(view, manifest);
  // While the init containers run, an app container waits for them, as the kubelet says.
  const apps = init.initialized
    ? view.containers
    : view.containers.map((c) => (c.state === 'missing' ? { ...c, waitingReason: 'PodInitializing' as const } : c));
  const statuses = apps.map((c) => containerStatus(c, view.id, node.runtime));
  const unready = view.containers.filter((c) => !c.ready).map((c) => c.name);
  const phase = init.failed ? 'Failed' : init.initialized ? podPhase(view.containers, manifest.restartPolicy ?? 'Always') : 'Pending';
  const allReady = unready.length === 0 && phase !== 'Succeeded';
  const notReady =
    phase === 'Succeeded'
      ? { reason: 'PodCompleted' }
      : { reason: 'ContainersNotReady', message: `containers with unready status: [${unready.join(' ')}]` };
  const podIP = manifest.hostNetwork === true ? node.hostIP : view.podIP;
  const startTime = earliest(view.containers.flatMap((c) => [c.startedAt, c.lastRun?.startedAt]));
  return {
    phase,
    conditions: [
      { type: 'PodReadyToStartContainers', status: view.sandboxReady === true ? 'True' : 'False' },
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
    ...(node.hostIP === undefined ? {} : { hostIP: node.hostIP, hostIPs: [{ ip: node.hostIP }] }),
    ...(podIP === undefined ? {} : { podIP, podIPs: [{ ip: podIP }] }),
    qosClass: qosClassOf(manifest),
    ...(startTime === undefined ? {} : { startTime: rfc3339(startTime) }),
    ...(view.initContainers === undefined
      ? {}
      : { initContainerStatuses: view.initContainers.map((c) => containerStatus(c, view.id, node.runtime)) }),
    containerStatuses: statuses,
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

function containerStatus(c: ContainerView, podId: string, runtime: string): V1ContainerStatus {
  const shownRun: EndedRun | undefined =
    c.state === 'exited' && c.id !== undefined
      ? { id: c.id, ...optional({ exitCode: c.exitCode, startedAt: c.startedAt, finishedAt: c.finishedAt }) }
      : undefined;
  let state: V1ContainerState;
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
    // The kubelet's: empty until a container was made from the image.
    imageID: c.imageRef ?? '',
    ...(c.id === undefined ? {} : { containerID: `${runtime}://${c.id}` }),
    restartCount: c.restartCount,
    ready: c.ready,
    started: c.started,
    state,
    lastState: last === undefined ? {} : { terminated: terminated(last, runtime) },
  };
}

/**
 * A run that ended, as a `terminated` state. Its `exitCode` is left out in the moment a CRI
 * runtime has listed the container as exited but not yet been asked its code (its list has none;
 * the runner inspects it within the pass): the one place the status is not the API's required form.
 */
function terminated(run: EndedRun, runtime: string): V1ContainerStateTerminated {
  return {
    ...optional({ exitCode: run.exitCode }),
    reason: run.exitCode === 0 ? 'Completed' : 'Error',
    ...optional({ startedAt: time(run.startedAt), finishedAt: time(run.finishedAt) }),
    containerID: `${runtime}://${run.id}`,
  } as V1ContainerStateTerminated;
}

function waitingMessage(c: ContainerView, podId: string): string | undefined {
  if (c.waitingReason === 'CrashLoopBackOff' && c.backOff !== undefined) {
    return `back-off ${c.backOff.delayMs / 1000}s restarting failed container=${c.name} pod=${podId}; until ${rfc3339(c.backOff.until)}`;
  }
  if (c.waitingReason === 'CreateContainerConfigError' && c.refused !== undefined) return c.refused.message;
  if ((c.waitingReason === 'CreateContainerError' || c.waitingReason === 'RunContainerError') && c.refused !== undefined) {
    return `${c.refused.message} (tried again after ${rfc3339(c.refused.until)})`;
  }
  if (c.waitingReason === 'ErrImagePull' && c.pullBackOff !== undefined) return c.pullBackOff.message;
  if (c.waitingReason === 'ImagePullBackOff' && c.pullBackOff !== undefined) {
    return `Back-off pulling image "${c.image}" until ${rfc3339(c.pullBackOff.until)}: ${c.pullBackOff.message}`;
  }
  return undefined;
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

function optional<T extends Record<string, unknown>>(fields: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) as { [K in keyof T]?: Exclude<T[K], undefined> };
}

/**
 * The kubelet's QoS class (`GetPodQOS`): BestEffort when no container asks for or limits CPU or
 * memory; Guaranteed when every container limits both, and asks for what it limits (a request
 * left out is the limit, as Kubernetes defaults it); Burstable otherwise. Init containers count.
 */
export function qosClassOf(manifest: Pick<ContainerManifest, 'containers' | 'initContainers'>): QosClass {
  const all = [...(manifest.initContainers ?? []), ...manifest.containers];
  const asks = (c: (typeof all)[number]) =>
    c.memory !== undefined || c.memoryRequest !== undefined || c.cpu !== undefined || c.cpuLimitMillis !== undefined;
  if (!all.some(asks)) return 'BestEffort';
  const guaranteed = all.every(
    (c) =>
      c.memory !== undefined &&
      c.cpuLimitMillis !== undefined &&
      (c.memoryRequest === undefined || c.memoryRequest === c.memory) &&
      (c.cpu === undefined || c.cpu === sharesOf(c.cpuLimitMillis)),
  );
  return guaranteed ? 'Guaranteed' : 'Burstable';
}

/** CPU shares of a milli-CPU request, as the v1 decoding makes them (at least 2, at most 262,144). */
function sharesOf(millis: number): number {
  return Math.min(262_144, Math.max(2, Math.floor((millis * 1024) / 1000)));
}
