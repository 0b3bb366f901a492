import { eventMatches, type Clock, type EventFilter, type EventSink, type KubeletEvent, type RecordedEvent } from '@kubelet-ts/core';

export interface EventLogOptions {
  readonly clock: Clock;
  /** The most events kept (the oldest go first). */
  readonly maxEvents: number;
  /** How long an event is kept after its last occurrence (ms). */
  readonly maxAgeMs: number;
  /** The namespace and uid of a pod the agent knows, by its id; undefined for one it does not. */
  readonly podOf: (podId: string) => { readonly namespace: string; readonly uid: string } | undefined;
}

type Listener = (event: RecordedEvent) => void;

/**
 * The agent's recent events, as `GET /events` serves them: bounded by count and by age, identical
 * ones folded with a count (the API server's event correlator; a crash loop is one line that
 * counts, not a flood). Listeners hear every new or folded event at once.
 */
export class EventLog implements EventSink {
  /** By fold key, in order of last occurrence (a fold moves the record to the end). */
  private readonly records = new Map<string, RecordedEvent>();
  private readonly listeners = new Set<Listener>();
  private nextId = 1;

  constructor(private readonly options: EventLogOptions) {}

  emit(event: KubeletEvent): void {
    const key = [event.type, event.podId, event.container, event.source, event.reason, event.message].join('\u0000');
    const earlier = this.records.get(key);
    this.records.delete(key);
    const pod = event.podId === undefined ? undefined : this.options.podOf(event.podId);
    const record: RecordedEvent =
      earlier === undefined
        ? {
            ...event,
            id: this.nextId++,
            count: 1,
            firstTime: event.time,
            ...(pod === undefined ? {} : { namespace: pod.namespace, podUid: pod.uid }),
          }
        : { ...earlier, time: event.time, count: earlier.count + 1 };
    this.records.set(key, record);
    this.prune();
    for (const listener of this.listeners) {
      try {
        listener(record);
      } catch {
        // A listener's failure is its own (a watcher that went away); the log goes on.
      }
    }
  }

  /** The kept events that `filter` selects, oldest first. */
  list(filter: EventFilter = {}): RecordedEvent[] {
    this.prune();
    return [...this.records.values()].filter((e) => eventMatches(e, filter));
  }

  /** Hears every event recorded from now on (folds included) until the returned function is called. */
  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private prune(): void {
    const oldest = this.options.clock.now() - this.options.maxAgeMs;
    for (const [key, record] of this.records) {
      // In order of last occurrence: the first one young enough ends the pruning.
      if (this.records.size <= this.options.maxEvents && record.time >= oldest) break;
      this.records.delete(key);
    }
  }
}
