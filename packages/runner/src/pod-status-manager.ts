import {
  derivePodStatus,
  podKeyOf,
  rejectedPodStatus,
  type AdmissionRefusal,
  rfc3339,
  type Clock,
  type ContainerManifest,
  type PodCondition,
  type PodKey,
  type PodStatus,
  type PodStatusNode,
  type PodView,
} from '@kubelet-ts/core';

/** A pod's status in the agent's model: its uid, the version of its status, and the status. */
export interface PodStatusRecord {
  readonly uid: string;
  /** The pod as a cluster knows it: namespace, name and uid, each a field. */
  readonly key: PodKey;
  /** Its host form: the manifest id its containers are named by. */
  readonly podId: string;
  /** The source that gives it (`file`, `api`…). */
  readonly source: string;
  /** 1 for the first status seen of the pod; one more at each change. */
  readonly version: number;
  readonly status: PodStatus;
}

/** One pod as the model is shown it: its uid, what the agent sees of it, and its manifest. */
export interface ObservedPod {
  readonly uid: string;
  readonly view: PodView;
  readonly manifest: ContainerManifest;
  /** The view as JSON, when the caller has it already. */
  readonly viewJson?: string;
  /** Why the node's admission refused the pod, when it did: its status is then `Failed` with it. */
  readonly refusal?: AdmissionRefusal;
}

interface Kept extends PodStatusRecord {
  /** What it was derived from (the node and the view, as JSON): the same again derives nothing. */
  readonly from: string;
  /** The status as JSON, to tell a change. */
  readonly json: string;
}

const TERMINAL = new Set(['Succeeded', 'Failed']);

/**
 * The pod status the agent owns (issue 42), as the kubelet's status manager keeps it: one status
 * per pod uid, derived from what the agent sees (`derivePodStatus`), with memory and versions.
 *
 * - A terminal phase (Succeeded, Failed) never goes back while the pod is known, whatever the view
 *   says later (a container removed by hand reads as waiting).
 * - Each condition carries `lastTransitionTime`, which changes only when its status does.
 * - `startTime` is kept once set.
 * - The version grows by one at each change; `watch` is told the uids that changed, once per change.
 * - A pod no longer observed is forgotten (told as a change too).
 */
export class PodStatusManager {
  private readonly kept = new Map<string, Kept>();
  private readonly listeners = new Set<(uids: readonly string[]) => void>();

  constructor(private readonly clock: Clock) {}

  /** The status of each pod, brought up to date with what it shows now; in the order given. */
  observe(pods: readonly ObservedPod[], node: PodStatusNode): PodStatusRecord[] {
    const nodeKey = `${node.runtime}\n${node.hostIP ?? ''}\n`;
    const changed: string[] = [];
    const seen = new Set<string>();
    let now: string | undefined;
    const records = pods.map(({ uid, view, manifest, viewJson, refusal }) => {
      seen.add(uid);
      const from = (refusal === undefined ? nodeKey : `${nodeKey}${refusal.reason}\n`) + (viewJson ?? JSON.stringify(view));
      const before = this.kept.get(uid);
      if (before !== undefined && before.from === from) return before;
      now ??= rfc3339(this.clock.now());
      const derived = refusal === undefined ? derivePodStatus(view, manifest, node) : rejectedPodStatus(manifest, refusal);
      const status = remembered(derived, before?.status, now);
      const json = JSON.stringify(status);
      const kept: Kept =
        before !== undefined && before.json === json
          ? { ...before, from }
          : {
              uid,
              key: podKeyOf(manifest, uid),
              podId: view.id,
              source: view.source,
              version: (before?.version ?? 0) + 1,
              status,
              from,
              json,
            };
      if (kept.version !== before?.version) changed.push(uid);
      this.kept.set(uid, kept);
      return kept;
    });
    for (const uid of [...this.kept.keys()])
      if (!seen.has(uid)) {
        this.kept.delete(uid);
        changed.push(uid);
      }
    if (changed.length > 0) for (const listener of this.listeners) listener(changed);
    return records.map(({ uid, key, podId, source, version, status }) => ({ uid, key, podId, source, version, status }));
  }

  /** The pod's status as last observed. */
  get(uid: string): PodStatusRecord | undefined {
    const kept = this.kept.get(uid);
    return kept === undefined
      ? undefined
      : { uid: kept.uid, key: kept.key, podId: kept.podId, source: kept.source, version: kept.version, status: kept.status };
  }

  /** Told the uids whose status changed (or that were forgotten), once per change; returns the way to stop. */
  watch(listener: (uids: readonly string[]) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

/** `derived` with what the model remembers of `before`: a terminal phase, each condition's last transition, the start time. */
function remembered(derived: PodStatus, before: PodStatus | undefined, now: string): PodStatus {
  const phase = before !== undefined && TERMINAL.has(before.phase) ? before.phase : derived.phase;
  const conditions = derived.conditions.map((c): PodCondition => {
    const was = before?.conditions.find((b) => b.type === c.type);
    return { ...c, lastTransitionTime: was !== undefined && was.status === c.status ? (was.lastTransitionTime ?? now) : now };
  });
  const startTime = before?.startTime ?? derived.startTime;
  return { ...derived, phase, conditions, ...(startTime === undefined ? {} : { startTime }) };
}
