import type { DesiredPod } from './manifest.js';
import { Labels, identityOf } from './naming.js';
import type { ContainerSpec, ContainerSummary } from './runtime.js';
import { buildContainerSpec, specHash } from './spec.js';

export type PlanReason =
  | 'new' // desired, no container exists
  | 'spec-changed' // a container exists with another spec hash
  | 'exited' // the desired container exists but is not running
  | 'duplicate' // a second running container for the same manifest container
  | 'not-desired'; // no source asks for it any more

export type PlanAction =
  /** Pull the image if missing, create the container, start it. */
  | { readonly type: 'create'; readonly podId: string; readonly container: string; readonly reason: PlanReason; readonly spec: ContainerSpec }
  /** Start an existing container that is not running. */
  | { readonly type: 'start'; readonly podId: string; readonly container: string; readonly reason: PlanReason; readonly id: string }
  /** Stop the container if it runs, then remove it. */
  | {
      readonly type: 'remove';
      readonly podId: string;
      readonly container: string;
      readonly reason: PlanReason;
      readonly id: string;
      readonly running: boolean;
    };

/** The actions for one pod, in the order they must run: removals before creations (ports, names). */
export interface PodPlan {
  readonly podId: string;
  readonly actions: readonly PlanAction[];
}

export interface Plan {
  readonly pods: readonly PodPlan[];
  /** Containers that are no longer desired but kept because not every source has been seen yet. */
  readonly held: number;
}

export interface PlanInput {
  readonly desired: readonly DesiredPod[];
  /** One runtime `list`; foreign containers and other nodes' containers are ignored. */
  readonly actual: readonly ContainerSummary[];
  /** This agent's hostname: only containers labelled with it are ours. */
  readonly node: string;
  /**
   * False until every source has delivered once: containers of pods that no source asks for are
   * then kept rather than stopped (the 2014 agent stopped everything when a source was slow).
   */
  readonly allowRemovals: boolean;
}

/**
 * The reconcile planner: desired manifests × actual containers → the runtime actions that make
 * them equal. Pure, and linear in the number of pods and containers.
 */
export function plan(input: PlanInput): Plan {
  const byPod = indexActual(input.actual, input.node);
  const pods: PodPlan[] = [];
  for (const pod of input.desired) {
    const actions = planPod(pod, byPod.get(pod.manifest.id), input.node);
    byPod.delete(pod.manifest.id);
    if (actions.length > 0) pods.push({ podId: pod.manifest.id, actions });
  }
  let held = 0;
  for (const [podId, containers] of byPod) {
    const actions: PlanAction[] = [];
    for (const [name, list] of containers) {
      for (const c of list) actions.push(removal(podId, name, c, 'not-desired'));
    }
    if (input.allowRemovals) pods.push({ podId, actions });
    else held += actions.length;
  }
  return { pods, held };
}

/** Plans one desired pod against the containers that exist for it. */
function planPod(pod: DesiredPod, existing: Map<string, ContainerSummary[]> | undefined, node: string): PlanAction[] {
  const { manifest } = pod;
  const removals: PlanAction[] = [];
  const others: PlanAction[] = [];
  for (const container of manifest.containers) {
    const hash = specHash(manifest, container);
    const found = existing?.get(container.name) ?? [];
    existing?.delete(container.name);
    let keeper: ContainerSummary | undefined;
    let replaced = false;
    for (const c of found) {
      if (c.labels[Labels.specHash] !== hash) {
        removals.push(removal(manifest.id, container.name, c, 'spec-changed'));
        replaced = true;
      } else if (keeper === undefined || better(c, keeper)) {
        if (keeper !== undefined && keeper.state === 'running') removals.push(removal(manifest.id, container.name, keeper, 'duplicate'));
        keeper = c;
      } else if (c.state === 'running') {
        removals.push(removal(manifest.id, container.name, c, 'duplicate'));
      }
    }
    if (keeper === undefined) {
      others.push({
        type: 'create',
        podId: manifest.id,
        container: container.name,
        reason: replaced ? 'spec-changed' : 'new',
        spec: buildContainerSpec(manifest, container, { node, source: pod.source }),
      });
    } else if (keeper.state !== 'running') {
      others.push({ type: 'start', podId: manifest.id, container: container.name, reason: 'exited', id: keeper.id });
    }
  }
  // Containers the manifest no longer lists.
  for (const [name, list] of existing ?? []) {
    for (const c of list) removals.push(removal(manifest.id, name, c, 'not-desired'));
  }
  return [...removals, ...others];
}

/** A running container beats a stopped one; then the newer wins. */
function better(a: ContainerSummary, b: ContainerSummary): boolean {
  if ((a.state === 'running') !== (b.state === 'running')) return a.state === 'running';
  return a.createdAt > b.createdAt;
}

function removal(podId: string, container: string, c: ContainerSummary, reason: PlanReason): PlanAction {
  return { type: 'remove', podId, container, reason, id: c.id, running: c.state === 'running' };
}

function indexActual(actual: readonly ContainerSummary[], node: string): Map<string, Map<string, ContainerSummary[]>> {
  const byPod = new Map<string, Map<string, ContainerSummary[]>>();
  for (const c of actual) {
    const identity = identityOf(c.labels);
    if (identity === undefined || identity.node !== node) continue;
    let containers = byPod.get(identity.podId);
    if (containers === undefined) byPod.set(identity.podId, (containers = new Map()));
    const list = containers.get(identity.container);
    if (list === undefined) containers.set(identity.container, [c]);
    else list.push(c);
  }
  return byPod;
}
