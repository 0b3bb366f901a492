import {
  DEFAULT_GRACE_PERIOD_SECONDS,
  identityOf,
  isManagedSandbox,
  Labels,
  type Clock,
  type ContainerSummary,
  type DesiredPod,
  type KubeletEvent,
  type SandboxSummary,
} from '@kubelet-ts/core';

/** What the runtime has of this node now, as the pod cache holds it. */
export interface SeenOnHost {
  readonly containers: readonly ContainerSummary[];
  readonly sandboxes: readonly SandboxSummary[];
}

/**
 * Deletion as a state (issue 42): a pod on its way out stays visible, Terminating, until nothing of
 * it runs, and the agent says when that is (`PodTerminated`, the moment a cluster node has the pod's
 * API object deleted).
 *
 * - A pod that leaves its source (once removals are allowed) while the runtime still has any of its
 *   containers or sandboxes is kept, with the manifest it last had, marked as the API server marks a
 *   pod it deletes: `deletionTimestamp` the moment it was seen gone, `deletionGracePeriodSeconds`
 *   its spec's grace. It is terminated once none of its containers and sandboxes is left.
 * - A pod its source marks for deletion (`deletionTimestamp`) stays desired; it is terminated once
 *   none of its containers runs (the planner stops them and starts nothing).
 *
 * A pod that comes back under the same id is a new one: the old one is no longer shown.
 */
export class PodTerminations {
  /** The pods of the last look, by id: what a pod that leaves had (those a held removal keeps, too). */
  private last = new Map<string, DesiredPod>();
  private lastLook: { readonly desired: readonly DesiredPod[]; readonly allowRemovals: boolean } | undefined;
  /** The desired pods their source marks for deletion, by id. */
  private marked = new Map<string, DesiredPod>();
  /** Pods that left their source and still have something on the runtime, marked. */
  private readonly leaving = new Map<string, DesiredPod>();
  /** Marked pods already said terminated, by id → their deletion time. */
  private readonly said = new Map<string, string>();

  constructor(
    private readonly node: string,
    private readonly clock: Clock,
    private readonly emit: (event: Omit<KubeletEvent, 'time'>) => void,
  ) {}

  /** The pods on their way out that have left their source, marked: shown after the desired ones. */
  pods(): DesiredPod[] {
    return [...this.leaving.values()];
  }

  /** One pod of `pods()`. */
  pod(podId: string): DesiredPod | undefined {
    return this.leaving.get(podId);
  }

  /**
   * A full pass's look: `desired` as the pass plans it, what the runtime has, and whether the pass
   * may remove what no source asks for (a pod that left while removals are held is not yet leaving:
   * it is remembered until they are allowed).
   */
  observe(desired: readonly DesiredPod[], seen: SeenOnHost, allowRemovals: boolean): void {
    if (desired !== this.lastLook?.desired || allowRemovals !== this.lastLook.allowRemovals) {
      const byId = new Map<string, DesiredPod>();
      const marked = new Map<string, DesiredPod>();
      for (const pod of desired) {
        byId.set(pod.manifest.id, pod);
        if (pod.manifest.deletionTimestamp !== undefined) marked.set(pod.manifest.id, pod);
      }
      const gone = [...this.last].filter(([id]) => !byId.has(id));
      if (allowRemovals) {
        const present = presentOn(seen, this.node).any;
        const now = new Date(this.clock.now()).toISOString();
        for (const [id, pod] of gone) if (!this.leaving.has(id) && present.has(id)) this.leaving.set(id, markedGone(pod, now));
      } else for (const [id, pod] of gone) byId.set(id, pod);
      for (const id of [...this.leaving.keys()]) if (byId.has(id)) this.leaving.delete(id);
      for (const id of [...this.said.keys()]) if (!marked.has(id)) this.said.delete(id);
      this.last = byId;
      this.marked = marked;
      this.lastLook = { desired, allowRemovals };
    }
    this.settle(seen);
  }

  /** After a pod's worker acted, or a pass looked: says which pods on their way out have nothing left running. */
  settle(seen: SeenOnHost): void {
    if (this.leaving.size === 0 && this.marked.size === 0) return;
    const { any, running } = presentOn(seen, this.node);
    for (const [id, pod] of [...this.leaving]) {
      if (any.has(id)) continue;
      // Said while still known, so that the event is filed under the pod's namespace and uid.
      this.emit({
        type: 'PodTerminated',
        podId: id,
        source: pod.source,
        message: `pod ${id} left its source and its containers and sandbox are gone`,
      });
      this.leaving.delete(id);
    }
    for (const [id, pod] of this.marked) {
      const at = pod.manifest.deletionTimestamp!;
      if (running.has(id) || this.said.get(id) === at) continue;
      this.said.set(id, at);
      this.emit({
        type: 'PodTerminated',
        podId: id,
        source: pod.source,
        message: `pod ${id}, marked for deletion at ${at}, has no container running`,
      });
    }
  }
}

/** The pod as the API server would show it once deleted with its grace: marked at `at`. */
function markedGone(pod: DesiredPod, at: string): DesiredPod {
  const { manifest } = pod;
  if (manifest.deletionTimestamp !== undefined) return pod;
  return {
    ...pod,
    manifest: {
      ...manifest,
      deletionTimestamp: at,
      deletionGracePeriodSeconds: manifest.terminationGracePeriodSeconds ?? DEFAULT_GRACE_PERIOD_SECONDS,
    },
  };
}

/** The pods of this node with anything on the runtime, and those with a container running. */
function presentOn(seen: SeenOnHost, node: string): { any: Set<string>; running: Set<string> } {
  const any = new Set<string>();
  const running = new Set<string>();
  for (const c of seen.containers) {
    const identity = identityOf(c.labels);
    if (identity === undefined || identity.node !== node) continue;
    any.add(identity.podId);
    if (c.state === 'running') running.add(identity.podId);
  }
  for (const s of seen.sandboxes) if (isManagedSandbox(s, node)) any.add(s.labels[Labels.sandbox]!);
  return { any, running };
}
