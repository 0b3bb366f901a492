import { podNameOf, type KubeletEventType, type RecordedEvent } from '@kubelet-ts/core';
import { rfc3339 } from './pod-list.js';

/** The kubelet's reason for what the agent did, where it has its own word for it. */
const REASONS: Partial<Record<KubeletEventType, string>> = {
  ContainerCreated: 'Created',
  ContainerStarted: 'Started',
  ContainerKilled: 'Killing',
  ContainerFailed: 'Failed',
  ProbeFailed: 'Unhealthy',
  ImagePulled: 'Pulled',
  ImagePullFailed: 'Failed',
};

/** What a person should look at: the kubelet's `Warning` events. */
const WARNINGS: ReadonlySet<KubeletEventType> = new Set<KubeletEventType>([
  'ContainerFailed',
  'BackOff',
  'ProbeFailed',
  'ContainerNotReady',
  'ImagePullFailed',
  'ManifestRejected',
  'ManifestConflict',
  'DeprecatedField',
  'SourceError',
  'SourceRestarted',
]);

/** A core/v1 `Event`, as `kubectl get events` and `kubectl describe` read one. */
export interface V1Event {
  readonly metadata: { readonly name: string; readonly namespace: string };
  readonly involvedObject: {
    readonly kind: 'Pod' | 'Node';
    readonly name: string;
    readonly namespace?: string;
    readonly uid?: string;
    readonly fieldPath?: string;
  };
  readonly reason: string;
  readonly message: string;
  readonly source: { readonly component: 'kubelet'; readonly host: string };
  readonly firstTimestamp: string;
  readonly lastTimestamp: string;
  readonly count: number;
  readonly type: 'Normal' | 'Warning';
  readonly reportingComponent: 'kubelet';
  readonly reportingInstance: string;
}

/**
 * One recorded event as a core/v1 `Event`: about its pod (a container's as `fieldPath`
 * `spec.containers{name}`, the pod by its v1 name), or about the node when it names no pod (a
 * source's); its reason in the kubelet's words where it has one, else the agent's event type.
 */
export function toV1Event(event: RecordedEvent, nodeName: string): V1Event {
  const namespace = event.namespace ?? 'default';
  const involvedObject =
    event.podId === undefined
      ? { kind: 'Node' as const, name: nodeName }
      : {
          kind: 'Pod' as const,
          name: podNameOf(event.podId, event.namespace),
          namespace,
          ...(event.podUid === undefined ? {} : { uid: event.podUid }),
          ...(event.container === undefined ? {} : { fieldPath: `spec.containers{${event.container}}` }),
        };
  return {
    metadata: { name: `${involvedObject.name}.${event.id.toString(16).padStart(8, '0')}`, namespace },
    involvedObject,
    // The kubelet's word for what happened; the agent's own reason (why: `new`, `restart`) is not it.
    reason: REASONS[event.type] ?? event.type,
    message: event.message,
    source: { component: 'kubelet', host: nodeName },
    firstTimestamp: rfc3339(event.firstTime),
    lastTimestamp: rfc3339(event.time),
    count: event.count,
    type: WARNINGS.has(event.type) ? 'Warning' : 'Normal',
    reportingComponent: 'kubelet',
    reportingInstance: nodeName,
  };
}

/** The recent events as a v1 `EventList` (what `kubectl get --raw /events` parses). */
export function renderEventList(events: readonly RecordedEvent[], nodeName: string) {
  return { kind: 'EventList', apiVersion: 'v1', metadata: {}, items: events.map((e) => toV1Event(e, nodeName)) };
}
