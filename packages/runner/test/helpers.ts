import { checkedManifest } from '@kubelet-ts/conformance';
import type { AgentView, ContainerManifest, EventSink, KubeletEvent, KubeletEventType, ManifestSource, SourceSink } from '@kubelet-ts/core';
import { renderPodList, type V1PodList } from '@kubelet-ts/source-server';

/** A container of a test manifest, in the raw (pre-validation) shape a source would read. */
export interface RawContainer {
  readonly name: string;
  readonly image: string;
  readonly [field: string]: unknown;
}

/** A validated manifest; throws (failing the test) if the test wrote an invalid one. */
export function manifest(id: string, containers: readonly RawContainer[]): ContainerManifest {
  return checkedManifest({ version: 'v1beta1', id, containers });
}

/** What `/pods` answers for `view`: its listing, rendered by the agent's server. */
export async function podListOf(view: Pick<AgentView, 'podListing'>): Promise<V1PodList> {
  const listing = await view.podListing();
  return renderPodList(listing.pods, listing);
}

/** A one-container manifest: container `web` running `image`. */
export function pod(id: string, image = 'nginx:1'): ContainerManifest {
  return manifest(id, [{ name: 'web', image }]);
}

export interface ScriptedSourceOptions {
  /** How many calls to `start` reject before one succeeds. Default 0. */
  readonly rejectStarts?: number;
  /** What a rejected `start` rejects with. */
  readonly startError?: Error;
  /** Delivered from within every successful `start`. */
  readonly initial?: readonly ContainerManifest[];
}

/**
 * A ManifestSource driven by the test: `push` delivers a set, `fail` reports an error, through the
 * sink of the latest successful `start`. Counts `start` and `close` calls and keeps every sink it
 * was given, so that a test can call an old (crashed) instance's sink.
 */
export class ScriptedSource implements ManifestSource {
  starts = 0;
  closes = 0;
  readonly sinks: SourceSink[] = [];
  private rejectionsLeft: number;
  private readonly startError: Error;
  private readonly initial: readonly ContainerManifest[] | undefined;

  constructor(
    readonly name: string,
    options: ScriptedSourceOptions = {},
  ) {
    this.rejectionsLeft = options.rejectStarts ?? 0;
    this.startError = options.startError ?? new Error(`${name}: backend unreachable`);
    this.initial = options.initial;
  }

  async start(sink: SourceSink): Promise<void> {
    this.starts += 1;
    if (this.rejectionsLeft > 0) {
      this.rejectionsLeft -= 1;
      throw this.startError;
    }
    this.sinks.push(sink);
    if (this.initial !== undefined) sink.update(this.initial);
  }

  async close(): Promise<void> {
    this.closes += 1;
  }

  /** Makes the next `times` starts reject. */
  rejectNextStarts(times: number): void {
    this.rejectionsLeft = times;
  }

  /** The sink of the latest successful start. */
  get sink(): SourceSink {
    const sink = this.sinks.at(-1);
    if (sink === undefined) throw new Error(`source ${this.name} has not been started successfully`);
    return sink;
  }

  push(manifests: readonly ContainerManifest[]): void {
    this.sink.update(manifests);
  }

  fail(error: Error, fatal = false): void {
    this.sink.error(error, { fatal });
  }
}

/** Keeps every event, in order. */
export class RecordingEventSink implements EventSink {
  readonly events: KubeletEvent[] = [];

  emit(event: KubeletEvent): void {
    this.events.push(event);
  }

  ofType(type: KubeletEventType, podId?: string): KubeletEvent[] {
    return this.events.filter((e) => e.type === type && (podId === undefined || e.podId === podId));
  }

  types(podId?: string): KubeletEventType[] {
    return this.events.filter((e) => podId === undefined || e.podId === podId).map((e) => e.type);
  }
}

export { RecordingLogger } from '@kubelet-ts/conformance';

/**
 * Lets every queued promise chain run: a few macrotask turns (no timers, no real waiting). Work on
 * the MemoryRuntime without latency is all promise continuations, so it is done afterwards.
 */
export async function settle(turns = 10): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}
