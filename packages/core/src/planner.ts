import { DEFAULT_GRACE_PERIOD_SECONDS, effectivePullPolicy, type Container, type ContainerManifest, type DesiredPod } from './manifest.js';
import { initStep, isSidecar, newestOf } from './init-plan.js';
import { backoffDelay, type BackoffPolicy } from './backoff.js';
import { Labels, isManagedBy, ofAnotherUid } from './naming.js';
import type { ContainerSummary } from './runtime.js';
import type { SandboxSummary } from './sandbox.js';
import { anyToRun, decideSandbox, indexSandboxes, sandboxRemovals, sandboxRun } from './sandbox-plan.js';
import { buildContainerSpec, initSpecHashes, specHashes, type SpecContext } from './spec.js';
import { executionParts } from './create-step.js';
import { graceFromLabel, killing, removal } from './stop-step.js';

export { CrashBackOff } from './plan-types.js';
export type { BackOff, Plan, PlanAction, PlanInput, PlanReason, PodPlan } from './plan-types.js';
import { CrashBackOff } from './plan-types.js';
import type { BackOff, Plan, PlanAction, PlanInput, PlanReason, PodPlan } from './plan-types.js';

/**
 * The reconcile planner: desired manifests × actual containers → the runtime actions that make
 * them equal. Pure, and linear in the number of pods and containers.
 */
export function plan(input: PlanInput): Plan {
  const byPod = indexActual(input.actual, input.node);
  const sandboxesByPod = indexSandboxes(input.sandboxes, input.node);
  const pods: PodPlan[] = [];
  const backOffs: BackOff[] = [];
  const busy = input.busy ?? new Set<string>();
  const desiredIds = new Set<string>();
  const finished: ContainerManifest[] = [];
  for (const pod of input.desired) {
    const id = pod.manifest.id;
    desiredIds.add(id);
    if (busy.size > 0 && busy.has(id)) continue;
    const existing = byPod.get(id);
    // Finished before, and nothing of it runs: it stays as it is, whatever has gone of it since.
    if (input.finished?.has(pod.manifest) === true && existing?.some((c) => c.state === 'running') !== true) {
      finished.push(pod.manifest);
      continue;
    }
    const actions = planPod(pod, existing, sandboxesByPod.get(id) ?? NO_SANDBOXES, input, backOffs);
    if (actions.length > 0) pods.push({ podId: id, actions });
    else if (hasFinished(pod.manifest, existing)) finished.push(pod.manifest);
  }
  let held = 0;
  const gone = new Set([...byPod.keys(), ...sandboxesByPod.keys()]);
  for (const podId of gone) {
    if (desiredIds.has(podId) || busy.has(podId)) continue;
    // Containers first (each stopped with its grace period), then the sandbox and, when a source
    // removed the pod (not when the agent forgot it), the pod's volumes: a sandbox left with no
    // containers (the agent died between making it and its first container) goes too.
    const actions: PlanAction[] = (byPod.get(podId) ?? NONE).map((c) =>
      removal(podId, c.labels[Labels.containerName] ?? '', c, 'not-desired', graceFromLabel(c)),
    );
    const volumes = input.known === undefined || input.known.has(podId);
    actions.push(...sandboxRemovals(podId, sandboxesByPod.get(podId) ?? NO_SANDBOXES, 'not-desired', volumes));
    if (input.allowRemovals) pods.push({ podId, actions });
    else held += actions.length;
  }
  return { pods, held, backOffs, finished };
}

/**
 * Whether the pod has finished for good: a restart policy other than `Always`, and every container
 * ended as it says it stays ended (or an init container failed under `Never`). The kubelet's
 * terminal phases, Succeeded and Failed.
 */
function hasFinished(manifest: ContainerManifest, list: readonly ContainerSummary[] | undefined): boolean {
  if ((manifest.restartPolicy ?? 'Always') === 'Always' || list === undefined || list.length === 0) return false;
  return initStep(manifest, list, initSpecHashes(manifest)).kind === 'failed' || !anyToRun(manifest, byContainerName(list));
}

/**
 * A pod marked for deletion (`deletionTimestamp`): each running container is stopped (preStop
 * first) within the deletion's grace, else its own, in the order the kubelet ends a pod (app
 * containers, then init containers and sidecars); nothing is started, restarted or made. What has
 * stopped is kept for inspection, with the sandbox and the volumes, until the pod leaves its source.
 */
function terminating(manifest: ContainerManifest, list: readonly ContainerSummary[]): readonly PlanAction[] {
  const given = manifest.deletionGracePeriodSeconds;
  const why = `pod ${manifest.id} is being deleted (since ${manifest.deletionTimestamp})`;
  return stopOrder(manifest, list)
    .filter((c) => c.state === 'running')
    .map((c) => killing(manifest.id, c, 'deleted', given ?? graceFromLabel(c), why));
}

/**
 * Plans one desired pod and its sandbox: in its ready sandbox, container by container (see
 * `planContainers`; stale sandboxes are removed after); or, when it has none that is ready with its
 * ports, a new sandbox and every container anew (the old ones stopped and removed first), unless
 * none of its containers has to run any more.
 */
function planPod(
  pod: DesiredPod,
  existing: readonly ContainerSummary[] | undefined,
  mine: readonly SandboxSummary[],
  input: PlanInput,
  backOffs: BackOff[],
): readonly PlanAction[] {
  if (pod.manifest.deletionTimestamp !== undefined) return terminating(pod.manifest, existing ?? NONE);
  // Made by the pod that had this id before (deleted and made again: another uid). Only a uid the
  // source gave is compared, and without allocating: every pass asks it of every pod.
  const uid = pod.manifest.uuid;
  const before = (x: { readonly labels: Readonly<Record<string, string>> }) => ofAnotherUid(x, uid);
  if (uid !== undefined && (existing?.some(before) === true || mine.some(before))) {
    const [oldContainers, own] = split(existing ?? NONE, before);
    const [oldSandboxes, ownSandboxes] = split(mine, before);
    // The old one's containers stop (each with its own grace, preStop first), its sandbox and
    // volumes go, then the new pod starts afresh.
    return [
      ...stopOrder(pod.manifest, oldContainers).map((c) =>
        removal(pod.manifest.id, c.labels[Labels.containerName] ?? '', c, 'pod-replaced', graceFromLabel(c)),
      ),
      ...sandboxRemovals(pod.manifest.id, oldSandboxes, 'pod-replaced', true),
      ...planPod(pod, own, ownSandboxes, input, backOffs),
    ];
  }
  const decision = decideSandbox(pod.manifest, mine);
  if (decision.kind === 'ready') {
    const actions = planContainers(pod, existing, decision.id, input, backOffs);
    if (decision.stale.length === 0) return actions;
    return [...actions, ...sandboxRemovals(pod.manifest.id, decision.stale, 'sandbox-changed', false)];
  }
  const list = existing ?? NONE;
  const { manifest } = pod;
  const grace = manifest.terminationGracePeriodSeconds ?? DEFAULT_GRACE_PERIOD_SECONDS;
  // By name once: the replacement of a big pod stays linear in its containers too.
  const named = byContainerName(list);
  if (initStep(manifest, list, initSpecHashes(manifest)).kind === 'failed' || !anyToRun(manifest, named)) {
    // Every container ended for good (or an init container failed under Never): keep them (and the
    // dead sandbox) for inspection, but what the manifest no longer lists goes.
    const wanted = wantedNames(manifest);
    return list
      .filter((c) => !wanted.has(c.labels[Labels.containerName] ?? ''))
      .map((c) => removal(manifest.id, c.labels[Labels.containerName] ?? '', c, 'not-desired', grace));
  }
  // The app containers stop first, then the init containers and sidecars, the last started first (as the kubelet ends sidecars).
  const actions: PlanAction[] = stopOrder(manifest, list).map((c) =>
    removal(manifest.id, c.labels[Labels.containerName] ?? '', c, 'sandbox-changed', grace),
  );
  actions.push(
    ...sandboxRemovals(manifest.id, decision.stale, 'sandbox-changed', false),
    sandboxRun(pod, input.node, list.length > 0 ? 'sandbox-changed' : 'new', input.podFields?.hostDns),
  );
  // A new sandbox starts with the first init container, if any; the others follow pass by pass.
  const first = manifest.initContainers?.[0];
  for (const container of first === undefined ? manifest.containers : [first]) {
    // The same container, restarted in a new namespace: its restart count goes on.
    const before = (named.get(container.name) ?? NONE).reduce<ContainerSummary | undefined>(
      (newest, c) => (newest === undefined || c.createdAt > newest.createdAt ? c : newest),
      undefined,
    );
    const restartCount = before === undefined ? undefined : (Number(before.labels[Labels.restartCount] ?? 0) || 0) + 1;
    const context = { ...specContext(pod, input, undefined), ...(restartCount === undefined ? {} : { restartCount }) };
    actions.push({
      type: 'create',
      podId: manifest.id,
      container: container.name,
      reason: before === undefined ? 'new' : 'sandbox-changed',
      pullPolicy: effectivePullPolicy(container),
      spec: buildContainerSpec(manifest, container, context),
      // The new sandbox's IP is known only once it runs, its source's objects read when it is made: the executor asks then.
      ...executionParts(manifest, container, context, input.objects?.(pod.source)),
    });
  }
  return actions;
}

/** Plans the containers of a desired pod in its ready sandbox `sandbox`, against those that exist for it (in any order). */
function planContainers(
  pod: DesiredPod,
  existing: readonly ContainerSummary[] | undefined,
  sandbox: string,
  input: PlanInput,
  backOffs: BackOff[],
): readonly PlanAction[] {
  const { manifest } = pod;
  const grace = manifest.terminationGracePeriodSeconds ?? DEFAULT_GRACE_PERIOD_SECONDS;
  let removals: PlanAction[] | undefined;
  let others: PlanAction[] | undefined;
  const remove = (a: PlanAction) => (removals ??= []).push(a);
  const act = (a: PlanAction) => (others ??= []).push(a);
  const list = existing ?? NONE;
  const unhealthy = input.unhealthy ?? NO_RESULTS;
  const { containers, hashes, kinds } = slotsOf(manifest, list);
  // A small pod is scanned (nothing allocated in the steady state, which runs for every pod on
  // every pass); a big one is indexed once, so planning stays linear in its containers.
  const named = list.length > SCAN_LIMIT ? byContainerName(list) : undefined;
  for (let i = 0; i < containers.length; i++) {
    const container = containers[i]!;
    const hash = hashes[i]!;
    // The steady state: exactly one running container with the current spec. Nothing to do, and
    // nothing allocated: this runs for every container on every pass.
    let found: readonly ContainerSummary[];
    if (named === undefined) {
      let matches = 0;
      let only: ContainerSummary | undefined;
      for (const c of list) {
        if (c.labels[Labels.containerName] === container.name) {
          matches += 1;
          only = c;
        }
      }
      if (matches === 1 && steady(only!, hash, unhealthy)) continue;
      found = matches === 0 ? NONE : list.filter((c) => c.labels[Labels.containerName] === container.name);
    } else {
      found = named.get(container.name) ?? NONE;
      if (found.length === 1 && steady(found[0]!, hash, unhealthy)) continue;
    }
    const current: ContainerSummary[] = [];
    for (const c of found) {
      if (c.labels[Labels.specHash] === hash) current.push(c);
      else remove(removal(manifest.id, container.name, c, 'spec-changed', grace));
    }
    // Newest first: the newest running container is the one that counts, the newest exited one is
    // kept for inspection, anything older is garbage.
    // A first crash is replaced at once, so a replacement may share its predecessor's creation
    // time (a virtual clock; Docker's list counts seconds): the restart count breaks the tie.
    current.sort((a, b) => b.createdAt - a.createdAt || restartsOf(b) - restartsOf(a));
    const running = current.filter((c) => c.state === 'running');
    const stopped = current.filter((c) => c.state !== 'running');
    for (const extra of running.slice(1)) remove(removal(manifest.id, container.name, extra, 'duplicate', grace));
    for (const old of stopped.slice(1)) remove(removal(manifest.id, container.name, old, 'gc', grace));
    const newest = running[0];
    if (newest !== undefined) {
      const detail = unhealthy.get(newest.id);
      if (detail !== undefined) act(killing(manifest.id, newest, 'unhealthy', grace, detail));
      continue;
    }
    const last = stopped[0];
    const create = (reason: PlanReason, restart?: { restartCount: number; crashStreak: number }): PlanAction => {
      const context = { ...specContext(pod, input, sandbox), ...restart };
      return {
        type: 'create',
        podId: manifest.id,
        container: container.name,
        reason,
        pullPolicy: effectivePullPolicy(container),
        spec: buildContainerSpec(manifest, container, context),
        sandbox,
        ...executionParts(manifest, container, context, input.objects?.(pod.source)),
      };
    };
    if (last === undefined) {
      act(create(found.length > 0 ? 'spec-changed' : 'new'));
    } else if (last.state === 'created') {
      act({ type: 'start', podId: manifest.id, container: container.name, reason: 'not-started', id: last.id });
    } else if (shouldRestart(manifest, last, kinds?.[i])) {
      const next = nextRestart(last, input.now, input.crashBackOff ?? CrashBackOff);
      if (next.at <= input.now) act(create('restart', { restartCount: next.restartCount, crashStreak: next.crashStreak }));
      else {
        backOffs.push({
          podId: manifest.id,
          container: container.name,
          id: last.id,
          ...(last.exitCode === undefined ? {} : { exitCode: last.exitCode }),
          until: next.at,
          delayMs: next.delayMs,
          restartCount: next.restartCount - 1,
        });
      }
    }
  }
  // Containers the manifest no longer lists.
  if (list.length > containers.length || removals !== undefined || others !== undefined) {
    const wanted = wantedNames(manifest);
    for (const c of list) {
      const name = c.labels[Labels.containerName] ?? '';
      if (!wanted.has(name)) remove(removal(manifest.id, name, c, 'not-desired', grace));
    }
  }
  if (manifest.initContainers !== undefined) for (const stop of sidecarStops(manifest, list, grace)) act(stop);
  if (removals === undefined) return others ?? NONE_ACTIONS;
  return others === undefined ? removals : [...removals, ...others];
}

const NONE: readonly ContainerSummary[] = [];
const NONE_ACTIONS: readonly PlanAction[] = [];
const NO_RESULTS: ReadonlyMap<string, string> = new Map();
const NO_SANDBOXES: readonly SandboxSummary[] = [];

/**
 * `Always` restarts whatever the exit; `OnFailure` only a non-zero exit; `Never` nothing. A sidecar
 * is restarted whatever the pod's policy; an init container only after a failure, unless `Never`.
 */
function shouldRestart(manifest: ContainerManifest, exited: ContainerSummary, kind?: SlotKind): boolean {
  if (kind === 'sidecar') return true;
  const policy = manifest.restartPolicy ?? 'Always';
  if (kind === 'init') return policy !== 'Never' && exited.exitCode !== 0;
  if (policy === 'Never') return false;
  if (policy === 'OnFailure') return exited.exitCode !== 0;
  return true;
}

/** When the exited container may be replaced, and the counters its replacement carries. */
function nextRestart(
  exited: ContainerSummary,
  now: number,
  backOff: BackoffPolicy,
): { at: number; delayMs: number; restartCount: number; crashStreak: number } {
  const restarts = Number(exited.labels[Labels.restartCount] ?? 0) || 0;
  const streak = Number(exited.labels[Labels.crashStreak] ?? 0) || 0;
  const finished = exited.finishedAt ?? now;
  const ran = exited.startedAt === undefined ? 0 : finished - exited.startedAt;
  // Ten minutes of clean running wipes the slate: the next crash is a first crash again.
  const crashStreak = ran >= CrashBackOff.resetAfterMs ? 1 : streak + 1;
  // As the kubelet does, the first crash of a streak restarts at once; back-off (10 s, 20 s, …
  // 300 s) starts from the second consecutive crash.
  const delayMs = crashStreak <= 1 ? 0 : backoffDelay(crashStreak - 1, backOff);
  return { at: finished + delayMs, delayMs, restartCount: restarts + 1, crashStreak };
}

function restartsOf(c: ContainerSummary): number {
  return Number(c.labels[Labels.restartCount] ?? 0) || 0;
}

const SCAN_LIMIT = 8;

/** Exactly what the manifest asks for: running, current, healthy. */
function steady(c: ContainerSummary, hash: string, unhealthy: ReadonlyMap<string, string>): boolean {
  return c.state === 'running' && c.labels[Labels.specHash] === hash && !unhealthy.has(c.id);
}

/** A big pod's containers by manifest container name. */
function byContainerName(list: readonly ContainerSummary[]): Map<string, ContainerSummary[]> {
  const named = new Map<string, ContainerSummary[]>();
  for (const c of list) {
    const name = c.labels[Labels.containerName] ?? '';
    const same = named.get(name);
    if (same === undefined) named.set(name, [c]);
    else same.push(c);
  }
  return named;
}

/** This node's containers by pod: one array per pod, nothing per container. */
function indexActual(actual: readonly ContainerSummary[], node: string): Map<string, ContainerSummary[]> {
  const byPod = new Map<string, ContainerSummary[]>();
  for (const c of actual) {
    // isManagedBy rather than identityOf: this loop sees every container, every pass.
    if (!isManagedBy(c.labels, node)) continue;
    const podId = c.labels[Labels.manifestId]!;
    const list = byPod.get(podId);
    if (list === undefined) byPod.set(podId, [c]);
    else list.push(c);
  }
  return byPod;
}

/** What a container's spec is built with: the node, the source, and the pod's fields (its sandbox's IP, when it has one). */
function specContext(pod: DesiredPod, input: PlanInput, sandbox: string | undefined): SpecContext {
  const podIP = sandbox === undefined ? undefined : input.sandboxes.find((s) => s.id === sandbox)?.ip;
  // The host's resolver is the sandbox's (sandboxRun), not a container's.
  const { hostDns: _sandboxOnly, ...fields } = input.podFields ?? {};
  return {
    node: input.node,
    source: pod.source,
    ...fields,
    ...(podIP === undefined ? {} : { podIP }),
  };
}

type SlotKind = 'init' | 'sidecar';

/**
 * The containers a pass plans in a ready sandbox, with their spec hashes: the app containers once
 * the init containers are done (`initStep`), with the sidecars beside them; before that, the init
 * containers up to the one whose turn it is. `kinds` (absent for a pod without init containers)
 * marks the init containers and sidecars among them.
 */
function slotsOf(
  manifest: ContainerManifest,
  list: readonly ContainerSummary[],
): { containers: readonly Container[]; hashes: readonly string[]; kinds?: readonly (SlotKind | undefined)[] } {
  const inits = manifest.initContainers;
  if (inits === undefined) return { containers: manifest.containers, hashes: specHashes(manifest) };
  const initHashes = initSpecHashes(manifest);
  const step = initStep(manifest, list, initHashes);
  if (step.kind === 'failed') return { containers: [], hashes: [] };
  const upTo = step.kind === 'next' ? step.index + 1 : inits.length;
  // Done: the sidecars stay (restarted when they end) until every app container has ended for good;
  // an init container that completed is left as it ended.
  const before = inits.map((c, i) => ({ c, hash: initHashes[i]!, kind: isSidecar(c) ? ('sidecar' as const) : ('init' as const) }));
  const stopSidecars = step.kind === 'done' && appsEnded(manifest, list);
  const chosen = before.slice(0, upTo).filter((x) => step.kind === 'next' || (x.kind === 'sidecar' && !stopSidecars));
  const apps = step.kind === 'done' ? manifest.containers : [];
  return {
    containers: [...chosen.map((x) => x.c), ...apps],
    hashes: [...chosen.map((x) => x.hash), ...(step.kind === 'done' ? specHashes(manifest) : [])],
    kinds: [...chosen.map((x) => x.kind), ...apps.map(() => undefined)],
  };
}

/** Whether every app container has ended and is not to run again (`Never`, or `OnFailure` after exit 0): the pod has completed. */
function appsEnded(manifest: ContainerManifest, list: readonly ContainerSummary[]): boolean {
  if ((manifest.restartPolicy ?? 'Always') === 'Always') return false;
  const hashes = specHashes(manifest);
  return manifest.containers.every((c, i) => {
    const newest = newestOf(list, c.name, hashes[i]!);
    return newest?.state === 'exited' && !shouldRestart(manifest, newest);
  });
}

/** The running sidecars of a pod whose app containers have all ended for good: stopped, as the kubelet ends a completed pod's sidecars. */
function sidecarStops(manifest: ContainerManifest, list: readonly ContainerSummary[], grace: number): PlanAction[] {
  const sidecars = new Set((manifest.initContainers ?? []).filter(isSidecar).map((c) => c.name));
  if (sidecars.size === 0 || !appsEnded(manifest, list) || initStep(manifest, list, initSpecHashes(manifest)).kind !== 'done') return [];
  return list
    .filter((c) => c.state === 'running' && sidecars.has(c.labels[Labels.containerName] ?? ''))
    .map((c) => killing(manifest.id, c, 'pod-completed', grace, 'every app container of the pod has completed'));
}

/** The pod's containers in the order they stop: app containers (not found among the init ones: rank ∞) first, then init containers, the last one first. */
function stopOrder(manifest: ContainerManifest, list: readonly ContainerSummary[]): readonly ContainerSummary[] {
  const inits = manifest.initContainers?.map((c) => c.name) ?? [];
  if (inits.length === 0) return list;
  const rank = (c: ContainerSummary) => inits.indexOf(c.labels[Labels.containerName] ?? '') >>> 0;
  return [...list].sort((a, b) => rank(b) - rank(a));
}

/** Every container name the manifest lists, init containers too: what is not among them goes. */
function wantedNames(manifest: ContainerManifest): Set<string> {
  return new Set([...(manifest.initContainers ?? []), ...manifest.containers].map((c) => c.name));
}

/** `list` split in two: what `matches`, and the rest. */
function split<T>(list: readonly T[], matches: (item: T) => boolean): [T[], T[]] {
  const yes: T[] = [];
  const no: T[] = [];
  for (const item of list) (matches(item) ? yes : no).push(item);
  return [yes, no];
}
