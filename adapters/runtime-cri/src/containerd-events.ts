import * as grpc from '@grpc/grpc-js';
import { KubeletError, Labels, type ContainerEvent } from '@kubelet-ts/core';
import { CONTAINERD_CRI_NAMESPACE, containerdService, criNamespaceMetadata } from './containerd-api.js';
import { grpcTarget } from './cri-client.js';
import { ADAPTER, translate } from './errors.js';

/** A protobuf Timestamp as proto-loader gives it (`longs: String`). */
interface Timestamp {
  seconds?: string | number;
  nanos?: number;
}

/** An envelope of `Events/Subscribe`, its `event` decoded by the name in its type URL (`@type`). */
export interface ContainerdEnvelope {
  timestamp?: Timestamp | null;
  namespace?: string;
  topic?: string;
  event?: { '@type'?: string; containerId?: string; id?: string; exitStatus?: number; exitedAt?: Timestamp | null } | null;
}

/** An open `Subscribe` call: its envelopes, and how to end it. */
export interface ContainerdSubscription {
  readonly envelopes: AsyncIterable<ContainerdEnvelope>;
  /** Cancels the call and lets go of its connection. */
  close(): void;
}

export type SubscribeContainerd = (filters: readonly string[]) => ContainerdSubscription;

export interface ContainerdEventsOptions {
  readonly endpoint: string;
  /**
   * The labels of a container the adapter has not seen, from the runtime (CRI ContainerStatus);
   * `undefined` when it is no container of the runtime's: a pod sandbox, or one already gone.
   */
  readonly labelsOf: (containerId: string) => Promise<Readonly<Record<string, string>> | undefined>;
  /**
   * Resolves once the runtime's own view (CRI) shows the container's exit, or gives up. containerd's
   * CRI plugin hears the same `/tasks/exit` and records it on its own time: a list made on this
   * event before it has still says running, and with the event spent nothing would look again
   * until the next relist (minutes). Called before an exit of ours is passed on.
   */
  readonly exitShown?: (containerId: string) => Promise<void>;
  /** Told of the exit of a task that is no container of ours: a pod sandbox's (its pause process), or a foreign container's. */
  readonly onOtherExit?: (id: string) => void;
  /** How to subscribe; by default a gRPC call on `endpoint`. */
  readonly subscribe?: SubscribeContainerd;
}

// A busy node's containers fit many times; the map is emptied past it rather than growing on missed deletes.
const MAX_KNOWN = 10_000;

/**
 * Container events from containerd's own event service on the CRI socket (containerd 1.6 does not
 * implement CRI's GetContainerEvents): `/tasks/start` → started, `/tasks/exit` of a container's
 * init process → exited with its status (exec processes' exits are dropped), `/containers/delete`
 * → removed. Task events do not carry labels, so the adapter keeps which pod each container id
 * belongs to (`remember`, from create and list; for an exit of an id it has not seen, one CRI
 * ContainerStatus), and drops pod sandboxes (no CRI container) and foreign containers. An exit
 * is passed on once CRI shows it (`exitShown`), so that what the agent lists on it is the exit. A start is
 * only ever of a container the adapter made or listed first, so the start of an id it has not
 * seen is dropped without asking.
 */
export class ContainerdEvents {
  /** Container id → its pod (manifest id), or `null` for a sandbox or a foreign container. */
  private readonly owners = new Map<string, string | null>();
  private readonly open = new Set<ContainerdSubscription>();
  private readonly subscribe: SubscribeContainerd;

  constructor(private readonly options: ContainerdEventsOptions) {
    this.subscribe = options.subscribe ?? grpcSubscription(options.endpoint);
  }

  /** What the adapter learnt of a container from a create or a list. */
  remember(containerId: string, labels: Readonly<Record<string, string>> | undefined): void {
    if (this.owners.size >= MAX_KNOWN && !this.owners.has(containerId)) this.owners.clear();
    this.owners.set(containerId, labels?.[Labels.manifestId] ?? null);
  }

  /** Ends every open stream (with `Unavailable`): the runtime is closing. */
  close(): void {
    for (const s of this.open) s.close();
  }

  async *stream(signal: AbortSignal): AsyncGenerator<ContainerEvent> {
    if (signal.aborted) return;
    const ns = `namespace==${JSON.stringify(CONTAINERD_CRI_NAMESPACE)}`;
    const subscription = this.subscribe(
      ['/tasks/start', '/tasks/exit', '/containers/delete'].map((topic) => `${ns},topic==${JSON.stringify(topic)}`),
    );
    this.open.add(subscription);
    const close = () => subscription.close();
    signal.addEventListener('abort', close, { once: true });
    let failure: unknown;
    try {
      for await (const envelope of subscription.envelopes) {
        if (signal.aborted) return;
        const event = await this.eventOf(envelope);
        if (signal.aborted) return;
        if (event !== undefined) yield event;
      }
    } catch (error) {
      failure = error;
    } finally {
      signal.removeEventListener('abort', close);
      this.open.delete(subscription);
      close();
    }
    if (signal.aborted) return;
    const what = 'watch container events (containerd Events/Subscribe)';
    const ended =
      failure === undefined
        ? new KubeletError('Unavailable', `${what}: containerd at ${this.options.endpoint} ended the stream`, { adapter: ADAPTER })
        : translate(failure, what, this.options.endpoint);
    throw ended.code === 'Unavailable'
      ? ended
      : new KubeletError('Unavailable', `${ended.message}; reconnect, and relist, since events may have been missed`, {
          adapter: ADAPTER,
          cause: failure,
        });
  }

  /** The envelope as one of our events; `undefined` for other namespaces, exec processes, sandboxes and foreign containers. */
  async eventOf(envelope: ContainerdEnvelope): Promise<ContainerEvent | undefined> {
    if (envelope.namespace !== CONTAINERD_CRI_NAMESPACE) return undefined;
    const payload = envelope.event ?? {};
    const time = millisOf(envelope.timestamp) ?? Date.now();
    switch (envelope.topic) {
      case '/tasks/start': {
        // The adapter knows each of its containers before it starts it (from its create, or a list):
        // a start of another id is a pod sandbox's or someone else's, dropped without asking. (Asking
        // cost each pod start a ContainerStatus: its sandbox's task starts before RunPodSandbox answers.)
        const podId = this.owners.get(payload.containerId ?? '');
        return podId === undefined || podId === null ? undefined : { type: 'started', containerId: payload.containerId!, time, podId };
      }
      case '/tasks/exit': {
        // An exec process's exit names the process (`id`); the container's own names the container.
        if (payload.id !== payload.containerId) return undefined;
        const podId = await this.ownerOf(payload.containerId);
        if (podId === null) {
          this.options.onOtherExit?.(payload.containerId ?? '');
          return undefined;
        }
        await this.options.exitShown?.(payload.containerId!);
        return withPod(
          {
            type: 'exited',
            containerId: payload.containerId!,
            exitCode: payload.exitStatus ?? 0,
            time: millisOf(payload.exitedAt) ?? time,
          },
          podId,
        );
      }
      case '/containers/delete': {
        const id = payload.id ?? '';
        const podId = this.owners.get(id);
        this.owners.delete(id);
        // A container never seen cannot be told apart from a sandbox any more: it is dropped.
        return podId === undefined || podId === null ? undefined : { type: 'removed', containerId: id, podId, time };
      }
      default:
        return undefined;
    }
  }

  /** The container's pod; `null` when it is not ours; `undefined` when the runtime could not say. */
  private async ownerOf(containerId: string | undefined): Promise<string | null | undefined> {
    if (containerId === undefined || containerId === '') return null;
    const known = this.owners.get(containerId);
    if (known !== undefined) return known;
    try {
      const labels = await this.options.labelsOf(containerId);
      this.remember(containerId, labels);
      return this.owners.get(containerId);
    } catch {
      // The event is passed on without its pod (the contract allows it) rather than lost.
      return undefined;
    }
  }
}

function withPod(event: ContainerEvent, podId: string | undefined): ContainerEvent {
  return podId === undefined ? event : { ...event, podId };
}

function millisOf(t: Timestamp | null | undefined): number | undefined {
  if (t === null || t === undefined || t.seconds === undefined) return undefined;
  const ms = Number(t.seconds) * 1000 + (t.nanos ?? 0) / 1e6;
  return ms > 0 ? ms : undefined;
}

type EventsClient = grpc.Client & {
  Subscribe(request: { filters: string[] }, metadata: grpc.Metadata): grpc.ClientReadableStream<ContainerdEnvelope>;
};

/** `Subscribe` on a channel of its own, closed with the call: an idle agent holds no extra connection. */
function grpcSubscription(endpoint: string): SubscribeContainerd {
  return (filters) => {
    // Each envelope's Any is decoded by its type URL into the messages of containerd-event-types.proto.
    const Events = containerdService<EventsClient>('containerd-events.proto', 'containerd.services.events.v1.Events');
    const client = new Events(grpcTarget(endpoint), grpc.credentials.createInsecure());
    const metadata = criNamespaceMetadata();
    const call = client.Subscribe({ filters: [...filters] }, metadata);
    return {
      envelopes: call,
      close() {
        call.cancel();
        client.close();
      },
    };
  };
}
