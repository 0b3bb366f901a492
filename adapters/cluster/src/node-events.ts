import { podNameOf, type KubeletEventType, type Logger, type PodKey, type RecordedEvent } from '@kubelet-ts/core';
import { PatchStrategy, setHeaderOptions, type EventsV1Api, type EventsV1Event, type V1ObjectReference } from '@kubernetes/client-node';
import { microTime } from './node-lease.js';

/** The agent's events as the kubelet's recorder names them: its reason, and whether it is a warning. */
const REASONS: Partial<Record<KubeletEventType, { readonly reason: string; readonly warning?: true }>> = {
  ImagePulled: { reason: 'Pulled' },
  ImagePullFailed: { reason: 'Failed', warning: true },
  ContainerCreated: { reason: 'Created' },
  ContainerStarted: { reason: 'Started' },
  ContainerKilled: { reason: 'Killing' },
  ContainerFailed: { reason: 'Failed', warning: true },
  BackOff: { reason: 'BackOff', warning: true },
  ProbeFailed: { reason: 'Unhealthy', warning: true },
  // Its reason is the admission's (OutOfcpu, NodeAffinity…), as the kubelet's `rejectPod` records it.
  PodRejected: { reason: '', warning: true },
};

/** How many events one object may have at once, and how often one more is allowed (the kubelet's spam filter: 25, then one per 5 min). */
const BURST = 25;
const REFILL_MS = 5 * 60_000;
/** An event the same as one of the last 10 minutes (the same object, reason and note) adds to its series. */
const FOLD_MS = 10 * 60_000;

/** What `NodeEvents` needs: the events API, the node's name, the agent's events and which pods are the API's. */
export interface NodeEventsOptions {
  readonly api: EventsV1Api;
  readonly nodeName: string;
  readonly agent: { watchEvents(listener: (event: RecordedEvent) => void): () => void };
  /** Whether the pod `podId` is one of the API's (an agent's event names its pod by id, not always its source): its events regard it. */
  readonly isApiPod: (podId: string) => boolean;
  /** The mirror pod of a static pod, when it has one: events of a static pod regard it. */
  readonly mirrorOf: (podId: string) => PodKey | undefined;
  readonly logger: Logger;
}

/**
 * The agent's events, recorded in the API as the kubelet's recorder records them (`events.k8s.io/v1`,
 * `reportingController: kubelet`, the node as `reportingInstance`): each regarding the API pod (or
 * the static pod's mirror) it is about, with the kubelet's reason (`Pulled`, `Created`, `Started`,
 * `Killing`, `BackOff`, `Unhealthy`, `Failed`, an admission's `OutOfcpu`…); the node's own
 * (`Starting`, `NodeReady`) regarding the Node. The same event again within 10 minutes adds to the
 * first one's `series`; each object may have 25 events at once, then one every 5 minutes, as the
 * kubelet's spam filter allows; an event the API refuses is dropped, said once in the log.
 */
export class NodeEvents {
  private stop: (() => void) | undefined;
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly recent = new Map<string, { name: string; namespace: string; count: number; at: number }>();
  private warned = false;
  private sequence = 0;
  /** Events written, for tests and the node's figures. */
  written = 0;

  constructor(private readonly options: NodeEventsOptions) {}

  start(): void {
    this.stop = this.options.agent.watchEvents((event) => void this.onEvent(event));
  }

  close(): void {
    this.stop?.();
  }

  /** Records a node event (`Starting`, `NodeReady`) regarding the Node. */
  node(reason: string, note: string): Promise<void> {
    const { nodeName } = this.options;
    return this.record({ kind: 'Node', apiVersion: 'v1', name: nodeName, uid: nodeName }, 'default', reason, note, false);
  }

  private async onEvent(event: RecordedEvent): Promise<void> {
    const mapped = REASONS[event.type];
    if (mapped === undefined || event.podId === undefined) return;
    const regarding = this.regarding(event);
    if (regarding === undefined) return;
    const reason = mapped.reason === '' ? (event.reason ?? event.type) : mapped.reason;
    const note = event.container === undefined ? event.message : `${event.message} (container ${event.container})`;
    await this.record(
      { kind: 'Pod', apiVersion: 'v1', name: regarding.name, namespace: regarding.namespace, uid: regarding.uid },
      regarding.namespace,
      reason,
      note,
      mapped.warning === true,
    );
  }

  private regarding(event: RecordedEvent): PodKey | undefined {
    const podId = event.podId!;
    if (this.options.isApiPod(podId)) {
      if (event.namespace === undefined || event.podUid === undefined) return undefined;
      return { namespace: event.namespace, name: podNameOf(podId, event.namespace), uid: event.podUid };
    }
    return this.options.mirrorOf(podId);
  }

  private async record(regarding: V1ObjectReference, namespace: string, reason: string, note: string, warning: boolean): Promise<void> {
    const { api, nodeName, logger } = this.options;
    const now = Date.now();
    const object = `${regarding.kind}/${regarding.namespace ?? ''}/${regarding.name}/${regarding.uid}`;
    if (!this.allowed(object, now)) return;
    const same = `${object}\n${reason}\n${note}`;
    const folded = this.recent.get(same);
    try {
      if (folded !== undefined && now - folded.at < FOLD_MS) {
        folded.count++;
        folded.at = now;
        await api.patchNamespacedEvent(
          {
            name: folded.name,
            namespace: folded.namespace,
            body: { series: { count: folded.count, lastObservedTime: microTime(new Date(now)) } },
          },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        );
      } else {
        const body: EventsV1Event = {
          apiVersion: 'events.k8s.io/v1',
          kind: 'Event',
          // The recorder's name: the object's, then the time in hex (a sequence number keeps two of one millisecond apart).
          metadata: { name: `${regarding.name}.${(now * 1000 + (this.sequence++ % 1000)).toString(16)}`.slice(-253), namespace },
          eventTime: microTime(new Date(now)),
          reportingController: 'kubelet',
          reportingInstance: nodeName,
          action: reason,
          reason,
          note: note.slice(0, 1024),
          type: warning ? 'Warning' : 'Normal',
          regarding,
        };
        const made = await api.createNamespacedEvent({ namespace, body });
        this.recent.set(same, { name: made.metadata?.name ?? '', namespace, count: 1, at: now });
        if (this.recent.size > 10_000 || this.buckets.size > 10_000) this.forgetOld(now);
      }
      this.written++;
    } catch (error) {
      if (this.warned) return;
      this.warned = true;
      logger.warn({ err: error }, `api: an event was not recorded (said once): ${(error as Error).message}`);
    }
  }

  /** The spam filter: a token per event, `BURST` at most, one more every `REFILL_MS`. */
  private allowed(object: string, now: number): boolean {
    const bucket = this.buckets.get(object) ?? { tokens: BURST, at: now };
    const refilled = Math.min(BURST, bucket.tokens + Math.floor((now - bucket.at) / REFILL_MS));
    const at = refilled > bucket.tokens ? now : bucket.at;
    if (refilled < 1) {
      this.buckets.set(object, { tokens: refilled, at });
      return false;
    }
    this.buckets.set(object, { tokens: refilled - 1, at });
    return true;
  }

  /** Forgets the folds older than 10 minutes, and the buckets that have filled again (an object not heard of since). */
  private forgetOld(now: number): void {
    for (const [key, r] of this.recent) if (now - r.at >= FOLD_MS) this.recent.delete(key);
    for (const [key, b] of this.buckets) if (b.tokens + Math.floor((now - b.at) / REFILL_MS) >= BURST) this.buckets.delete(key);
  }
}
