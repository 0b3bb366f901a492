import { podNameOf } from './naming.js';

/** What happened, in an event the agent emits: a container's or a pod's step (created, started, failed, rejected, …). */
export type KubeletEventType =
  | 'ContainerCreated'
  | 'ContainerStarted'
  | 'ContainerStopped'
  | 'ContainerRemoved'
  | 'ContainerFailed'
  | 'ContainerExited'
  | 'ContainerRestarted'
  | 'ContainerKilled'
  | 'SandboxCreated'
  | 'SandboxRemoved'
  | 'BackOff'
  | 'ProbeFailed'
  /** A readiness probe passed successThreshold times in a row (reported only: nothing is acted on). */
  | 'ContainerReady'
  /** A ready container's readiness probe failed failureThreshold times in a row (reported only). */
  | 'ContainerNotReady'
  | 'ImagePulled'
  | 'ImagePullFailed'
  | 'ManifestRejected'
  | 'ManifestConflict'
  /** A manifest was accepted, but spells a field the deprecated 2014 way (`volumeMounts[].path`, `env[].key`). */
  | 'DeprecatedField'
  | 'SourceError'
  | 'SourceRestarted'
  /**
   * A pod on its way out has nothing left running: one that left its source, once its containers
   * and sandbox are gone; one marked for deletion, once its containers have stopped. The moment a
   * node of a cluster has the pod's API object deleted.
   */
  | 'PodTerminated'
  /**
   * The node's admission refused a pod (its reason the kubelet's: `OutOfcpu`, `OutOfmemory`,
   * `OutOfpods`, `NodeAffinity`): it never runs, and its status is `Failed` with that reason.
   */
  | 'PodRejected';

/** What the agent reports to its `EventSink`s: what happened, when, to which pod and container, and why. */
export interface KubeletEvent {
  readonly type: KubeletEventType;
  /** Milliseconds since the epoch, from the agent's clock. */
  readonly time: number;
  readonly podId?: string;
  readonly container?: string;
  readonly source?: string;
  readonly reason?: string;
  readonly message: string;
}

/** Where the agent records what it did. `emit` must not throw; an async sink handles its own errors. */
export interface EventSink {
  emit(event: KubeletEvent): void;
}

/**
 * An event as the agent keeps it for `GET /events` and `kubelet-ts get events`: identical ones
 * (same type, pod, container, source, reason and message) are folded into one with a count, as
 * the API server's event correlator does; `time` is the last occurrence.
 */
export interface RecordedEvent extends KubeletEvent {
  /** Which record this is (stable while it is kept; a fold keeps it). */
  readonly id: number;
  readonly count: number;
  /** The first occurrence (ms since the epoch). */
  readonly firstTime: number;
  /** The pod's namespace and uid when the event names a pod the agent knew at the time. */
  readonly namespace?: string;
  readonly podUid?: string;
}

/** Which recorded events a reader wants: those of one namespace, one pod, or all. */
export interface EventFilter {
  readonly namespace?: string;
  readonly pod?: string;
}

/**
 * Whether `event` is one `filter` selects. An event of a pod the agent did not know, or of no pod
 * (the node's, a source's), is the default namespace's, as the kubelet files node events; a pod is
 * named as `/pods` names it (a v1 pod's name, without the `.<namespace>` of its manifest id), or by
 * its manifest id.
 */
export function eventMatches(event: RecordedEvent, filter: EventFilter): boolean {
  const namespace = event.namespace ?? 'default';
  if (filter.namespace !== undefined && namespace !== filter.namespace) return false;
  if (filter.pod === undefined) return true;
  return event.podId !== undefined && (event.podId === filter.pod || podNameOf(event.podId, event.namespace) === filter.pod);
}
