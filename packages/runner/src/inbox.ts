import type { ContainerEvent } from '@kubelet-ts/core';
import type { ExecutionResult } from './executor.js';
import type { ProbeTarget } from './prober.js';

/**
 * What the agent's parts tell the sync loop (the kubelet's `syncLoopIteration` selects over the
 * same channels: config, PLEG, probe results, pod workers, and its own timers, which stay inside
 * `SyncLoop`). A part posts and goes on; it never calls another part back.
 */
export type AgentMessage =
  /** A source delivered; `changed` is false when its set is the very one it delivered before. */
  | { readonly type: 'sources-changed'; readonly changed: boolean }
  /** The runtime said a container changed; `podId` when it is one of this agent's pods. */
  | { readonly type: 'runtime-event'; readonly event: ContainerEvent; readonly podId: string | undefined }
  /** The event stream broke: the watch reconnects with back-off. */
  | { readonly type: 'event-stream-lost' }
  /** The event stream is back after a break: events may have been missed in between. */
  | { readonly type: 'event-stream-reconnected' }
  /** A container failed its liveness or startup probe `failureThreshold` times. */
  | { readonly type: 'container-unhealthy'; readonly target: ProbeTarget }
  /** A pod's worker ended (after acting on every update it was given). */
  | { readonly type: 'worker-done'; readonly podId: string; readonly result: ExecutionResult }
  /**
   * Nobody has planned a pod since news of it arrived: a pass left it out as busy and its worker
   * ended meanwhile, or its worker could not look at what it did before planning again.
   */
  | { readonly type: 'pod-missed'; readonly podId: string };

/** Where parts post their messages. */
export interface Inbox {
  post(message: AgentMessage): void;
}

/** What the inbox acts on: the loop that schedules passes, the workers, and what it counts. */
export interface InboxTargets {
  /** Asks for a full pass (now, or right after the one being planned). */
  readonly requestPass: () => void;
  /** Asks for a pass of these pods. */
  readonly requestPods: (podIds: readonly string[]) => void;
  /** Gives a busy pod's worker news to act on when it ends; false when the pod has no worker. */
  readonly newsFor: (podId: string) => boolean;
  /** Whether a full pass has run yet (the first delivery always makes one, changed or not). */
  readonly passedOnce: () => boolean;
  /** Whether a pod has containers with probes (its new containers go to the prober at once). */
  readonly hasProbes: (podId: string) => boolean;
  readonly count: {
    readonly runtimeEvent: (event: ContainerEvent) => void;
    readonly eventStreamLost: () => void;
  };
}

/**
 * The agent's one inbox: every part posts here, and this is the one place that decides what
 * follows each message. Delivery is synchronous (the loop itself coalesces what it is asked for),
 * so the order of decisions is the order in which things happened.
 */
export class AgentInbox implements Inbox {
  private targets: InboxTargets | undefined;

  /** Wires what the inbox acts on; done once by the agent, after its parts are made. */
  connect(targets: InboxTargets): void {
    if (this.targets !== undefined) throw new Error('the inbox is already connected');
    this.targets = targets;
  }

  post(message: AgentMessage): void {
    const t = this.targets;
    if (t === undefined) throw new Error(`a ${message.type} message was posted before the agent was wired`);
    switch (message.type) {
      case 'sources-changed':
        if (message.changed || !t.passedOnce()) t.requestPass();
        return;
      case 'runtime-event':
        t.count.runtimeEvent(message.event);
        // A start is the agent's own doing (a pod worker's) or leaves a running container, which
        // needs nothing: only exits and removals of the agent's pods ask for a pass of the pod.
        if (message.event.type !== 'started' && message.podId !== undefined) t.requestPods([message.podId]);
        return;
      case 'event-stream-lost':
        t.count.eventStreamLost();
        return;
      case 'event-stream-reconnected':
        t.requestPass();
        return;
      case 'container-unhealthy':
        // The kill is planned by a pass and done by the pod's worker: a busy worker plans it itself
        // when it ends; otherwise a pass now, not a period later.
        if (!t.newsFor(message.target.podId)) t.requestPass();
        return;
      case 'worker-done':
        // New containers with probes: a pass hands them to the prober now, not a period later.
        if (message.result.failures === 0 && t.hasProbes(message.podId)) t.requestPass();
        return;
      case 'pod-missed':
        t.requestPods([message.podId]);
        return;
    }
  }
}
