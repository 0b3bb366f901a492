import { EventEmitter } from 'node:events';
import { hostname as osHostname } from 'node:os';
import type { Duplex } from 'node:stream';
import {
  isManagedBy,
  nodeNameProblem,
  silentLogger,
  systemClock,
  type AgentView,
  type Clock,
  type ContainerDetails,
  type ContainerLogRequest,
  type ContainerTextRequest,
  type ContainerTarget,
  type PodTarget,
  type StreamOptions,
  type StreamSession,
  type ContainerRuntime,
  type ContainerStats,
  type EventSink,
  type HealthView,
  type ImageRecord,
  type KubeletEvent,
  type LogLine,
  type Logger,
  type PlanReport,
  type PodListing,
  type PodView,
  type ResourceUsage,
  type SourceView,
  type EventFilter,
  type RecordedEvent,
  hostAccessOf,
  nodeLabelsOf,
} from '@kubelet-ts/core';
import { AdaptiveSlots, MAX_CONCURRENCY } from './adaptive-slots.js';
import { AgentReadApi } from './agent-api.js';
import { checkCapabilities } from './capabilities.js';
import { PodFiles } from './pod-files.js';
import { PodStatusManager, type PodStatusRecord } from './pod-status-manager.js';
import { PodTerminations } from './pod-terminations.js';
import { HookRunner } from './hooks.js';
import { PlanExecutor } from './executor.js';
import { EventLog } from './event-log.js';
import { FanOutEventSink, LogEventSink } from './log-event-sink.js';
import { KubeletMetrics } from './metrics.js';
import type { DesiredState } from './mux.js';
import { AgentInbox } from './inbox.js';
import { PodCache } from './pod-cache.js';
import { PodWorkers } from './pod-workers.js';
import { Slots } from './slots.js';
import { Prober } from './prober.js';
import { housekeepingOf, type Housekeeping } from './housekeeping.js';
import type { KubeletOptions, KubeletStatus } from './kubelet-options.js';
import { ProbeMetrics } from './probe-metrics.js';
import { SourceIntake } from './source-intake.js';
import { DEFAULT_RUNTIME_DEADLINES, withDeadlines } from './runtime-deadlines.js';
import { DEFAULT_EVENTED_RELIST_MS, RuntimeWatch, relistDue } from './runtime-watch.js';
import { nodeFields } from './node-address.js';
import { SyncLoop, type PassResult } from './sync-loop.js';
import { SyncPass } from './sync-pass.js';
import { TransitionReporter } from './transition-reporter.js';

export type { KubeletOptions, KubeletStatus } from './kubelet-options.js';

type KubeletEvents = { pass: [PassResult] };

/**
 * The agent: sources → mux (latest set per source) → desired state → planner → pod workers →
 * events. This class wires the parts and owns their lifecycle; each part is one idea:
 * `SourceIntake` (sources in), `SyncLoop` (when to pass), `SyncPass` (what to do), `PodWorkers`
 * (the only ones that act), `Prober` (records probe results), `AgentReadApi` (what it shows).
 */
export class Kubelet extends EventEmitter<KubeletEvents> implements AgentView {
  readonly hostname: string;
  /** The node's name, as `/pods` and `/events` give it: the hostname. */
  readonly nodeName: string;
  private readonly runtime: ContainerRuntime;
  /** The runtime as last seen: passes write it, everything else reads it. */
  private readonly cache: PodCache;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly events: EventSink;
  private readonly syncFrequencyMs: number;
  private readonly intake: SourceIntake;
  private readonly terminations: PodTerminations;
  private readonly statuses: PodStatusManager;
  private readonly workers: PodWorkers;
  private readonly prober: Prober;
  private readonly probeCounts = new ProbeMetrics();
  private readonly eventLog: EventLog;
  /** Samples what the node and pods use; undefined with `housekeeping.intervalMs: 0`. */
  private readonly housekeeping: Housekeeping | undefined;
  private readonly passes: SyncPass;
  private readonly loop: SyncLoop;
  /** Follows the runtime's container events, when it has them. */
  private readonly watch: RuntimeWatch | undefined;
  private readonly api: AgentReadApi;
  private state: 'new' | 'running' | 'closed' = 'new';
  private startedAt = 0;

  constructor(options: KubeletOptions) {
    super();
    this.hostname = this.nodeName = (options.hostname ?? osHostname()).toLowerCase();
    const problem = nodeNameProblem(this.hostname);
    if (problem !== undefined) throw new Error(problem);
    const metrics = new KubeletMetrics(async () => this.cache.snapshot().containers.filter((c) => isManagedBy(c.labels, this.hostname)));
    checkCapabilities(options.runtime);
    this.clock = options.clock ?? systemClock;
    this.runtime = metrics.instrument(
      withDeadlines(options.runtime, this.clock, { ...DEFAULT_RUNTIME_DEADLINES, ...options.runtimeDeadlines }),
    );
    this.cache = new PodCache({ runtime: this.runtime, hostname: this.hostname, clock: this.clock });
    this.logger = options.logger ?? silentLogger;
    const { maxEvents = 1_000, maxAgeMs = 3_600_000 } = options.eventLog ?? {};
    this.eventLog = new EventLog({ clock: this.clock, maxEvents, maxAgeMs, podOf: (podId) => this.api.podOf(podId) });
    this.events = metrics.events(new FanOutEventSink([options.events ?? new LogEventSink(this.logger), this.eventLog]));
    this.syncFrequencyMs = options.syncFrequencyMs ?? 10_000;
    const emit = (event: Omit<KubeletEvent, 'time'>) => this.emitEvent(event);
    // Every part posts here; the inbox alone decides what follows (wired below, once all exist).
    const inbox = new AgentInbox();
    this.intake = new SourceIntake({
      sources: options.sources,
      clock: this.clock,
      logger: this.logger,
      metrics,
      emit,
      ...(options.sourceBackoff === undefined ? {} : { backoff: options.sourceBackoff }),
      ...hostAccessOf({ ...options, nodeLabels: nodeLabelsOf(options.nodeLabels, this.hostname) }),
      admission: { labels: nodeLabelsOf(options.nodeLabels, this.hostname), allocatable: options.allocatable ?? {} },
      ...(options.checkpoints === undefined ? {} : { checkpoints: options.checkpoints }),
      inbox,
    });
    this.terminations = new PodTerminations(this.hostname, this.clock, emit);
    this.statuses = new PodStatusManager(this.clock);
    const { runtime, clock, logger } = this;
    this.prober = new Prober({ runtime, clock, events: this.events, logger, ...options.probes, inbox, metrics: this.probeCounts });
    this.housekeeping = housekeepingOf(options.housekeeping, {
      runtime: this.runtime,
      cache: this.cache,
      pods: () => this.intake.desired().pods,
      hostname: this.hostname,
      clock: this.clock,
      logger: this.logger,
    });
    // A fixed concurrency when asked for; else the limit is found while the agent works.
    const startSlots =
      options.concurrency === undefined
        ? new AdaptiveSlots({ clock: this.clock, max: MAX_CONCURRENCY, onLimit: (limit) => metrics.startConcurrency.set(limit) })
        : new Slots(options.concurrency);
    if (options.concurrency !== undefined) metrics.startConcurrency.set(options.concurrency);
    const files = new PodFiles(options.volumeFilesDir, this.logger);
    const hooks = new HookRunner(this.runtime, this.clock, options.probes);
    const executor = new PlanExecutor({ runtime: this.runtime, events: this.events, clock: this.clock, startSlots, files, hooks });
    this.workers = new PodWorkers(executor, {
      inbox,
      observe: (podId) =>
        this.cache.refresh([podId]).then(
          () => {
            this.terminations.settle(this.cache.snapshot());
            return true;
          },
          (error: unknown) => {
            // The next look at the pod sees it; until then the agent shows the pod as it was.
            this.logger.debug({ podId, err: error }, 'could not list the pod its worker acted on');
            return false;
          },
        ),
      planPod: (podId) => this.passes.planPod(podId),
    });
    this.passes = new SyncPass({
      runtime: this.runtime,
      cache: this.cache,
      hostname: this.hostname,
      clock: this.clock,
      logger: this.logger,
      intake: this.intake,
      terminations: this.terminations,
      workers: this.workers,
      prober: this.prober,
      transitions: new TransitionReporter(this.hostname, emit, () => this.startedAt),
      metrics,
      ...(options.crashBackOff === undefined ? {} : { crashBackOff: options.crashBackOff }),
      podFields: nodeFields(options.probes?.host, options),
      files,
      inbox,
      relistDue: () =>
        relistDue(
          this.watch?.streamingSince,
          this.cache.relistedAt,
          this.clock.now(),
          options.eventedRelistMs ?? DEFAULT_EVENTED_RELIST_MS,
        ),
    });
    this.loop = new SyncLoop({
      clock: this.clock,
      pass: (pods, fresh) => this.passes.run(pods, fresh),
      wakeIn: () => this.nextWakeIn(),
      idle: () => this.workers.idle(),
      onDone: (result) => this.notify(result),
    });
    // Through the instrumented runtime: a wrapper built with `wrapRuntime` keeps the power.
    const events = this.runtime.capabilities.events;
    this.watch =
      events === undefined
        ? undefined
        : new RuntimeWatch({
            runtime: { name: this.runtime.name, events: (signal) => events.events(signal) },
            clock: this.clock,
            logger: this.logger,
            podOf: (event) => this.passes.podOf(event),
            inbox,
          });
    inbox.connect({
      requestPass: () => this.loop.request(),
      requestPods: (ids) => this.loop.requestPods(ids),
      newsFor: (podId) => this.workers.news(podId),
      passedOnce: () => this.passes.passes > 0,
      hasProbes: (podId) => this.passes.hasProbes(podId),
      count: {
        runtimeEvent: (event) => metrics.runtimeEvents.inc({ type: event.type }),
        eventStreamLost: () => metrics.eventStreamReconnects.inc(),
      },
    });
    this.api = new AgentReadApi({
      runtime: this.runtime,
      cache: this.cache,
      hostname: this.hostname,
      clock: this.clock,
      intake: this.intake,
      terminations: this.terminations,
      statuses: this.statuses,
      pass: this.passes,
      prober: this.prober,
      pullBackOff: (image, podId) => executor.pullBackOff(image, podId),
      refusedBackOff: (podId, container) => executor.refusedBackOff(podId, container),
      ...(options.probes?.host === undefined ? {} : { hostIP: options.probes.host }),
      metrics,
      healthThresholdMs: options.healthThresholdMs ?? Math.max(3 * this.syncFrequencyMs, 30_000),
      lifecycle: () => ({ state: this.state, startedAt: this.startedAt }),
    });
  }

  /** Starts every source and the sync loop. Resolves once each source has had its first start. */
  async start(): Promise<void> {
    if (this.state !== 'new') throw new Error(`kubelet cannot start: it is ${this.state}`);
    this.state = 'running';
    this.startedAt = this.clock.now();
    this.loop.start();
    this.housekeeping?.start();
    this.logger.info({ hostname: this.hostname, runtime: this.runtime.name, sources: this.intake.names }, 'kubelet starting');
    // Subscribed before the first pass lists, so no exit falls between that list and the stream.
    this.watch?.start();
    await this.intake.start();
    // Sources that delivered have asked for a pass; if none did, one adopts what the runtime runs.
    if (!this.loop.planning && this.passes.passes === 0) this.loop.request();
  }

  /** Stops watching and syncing and closes every source. Containers are left running. */
  async close(): Promise<void> {
    if (this.state === 'closed') return;
    this.state = 'closed';
    const closing = this.loop.close();
    await this.watch?.close();
    await this.intake.close();
    await closing;
    await this.prober.close();
    await this.housekeeping?.close();
    await this.workers.idle();
    await this.passes.settled();
    this.logger.info({ passes: this.passes.passes }, 'kubelet stopped');
  }

  /**
   * Runs a pass over every pod and resolves once its work is done: work already in flight is
   * waited for first, and a pass that had to leave a busy pod out is followed by another.
   */
  sync(): Promise<PassResult> {
    return this.loop.sync();
  }

  desired(): DesiredState {
    return this.intake.desired();
  }

  status(): KubeletStatus {
    const lastPass = this.passes.lastPass;
    return {
      hostname: this.hostname,
      sources: this.intake.statuses(),
      passes: this.passes.passes,
      ...(lastPass === undefined ? {} : { lastPass }),
    };
  }

  pods(): Promise<PodView[]> {
    return this.api.pods();
  }

  /**
   * The desired pods with their manifests and the node, which the agent's server renders as the
   * kubelet's `/pods` does, a v1 `PodList` (`renderPodList` of `@kubelet-ts/source-server`).
   */
  podListing(): Promise<PodListing> {
    return this.api.podListing();
  }

  plan(): Promise<PlanReport> {
    return this.api.plan();
  }

  metrics(): Promise<{ contentType: string; body: string }> {
    return this.api.metrics();
  }

  containerInfo(name: string): Promise<ContainerDetails | undefined> {
    return this.api.containerInfo(name);
  }

  stats(name: string): Promise<ContainerStats | undefined> {
    return this.api.stats(name);
  }

  /** What a container of a desired pod printed; see `AgentView.containerLogs`. */
  containerLogs(request: ContainerLogRequest): Promise<AsyncIterable<LogLine>> {
    return this.api.containerLogs(request);
  }

  containerText(request: ContainerTextRequest): Promise<AsyncIterable<Uint8Array>> {
    return this.api.containerText(request);
  }

  /** A command run in a container of a desired pod, streamed; see `AgentView.exec`. */
  exec(target: ContainerTarget, command: readonly string[], options: StreamOptions): Promise<StreamSession> {
    return this.api.exec(target, command, options);
  }

  /** Attached to a container of a desired pod; see `AgentView.attach`. */
  attach(target: ContainerTarget, options: StreamOptions): Promise<StreamSession> {
    return this.api.attach(target, options);
  }

  /** A connection into a desired pod's network namespace; see `AgentView.portForward`. */
  portForward(target: PodTarget, port: number): Promise<Duplex> {
    return this.api.portForward(target, port);
  }

  /** From the last housekeeping sample; see `AgentView.resourceUsage`. */
  resourceUsage(): ResourceUsage {
    return (
      this.housekeeping?.current() ?? {
        nodeName: this.hostname,
        node: undefined,
        pods: [],
        error: 'housekeeping is off (housekeeping.intervalMs 0)',
      }
    );
  }

  recentEvents(filter?: EventFilter): readonly RecordedEvent[] {
    return this.eventLog.list(filter);
  }

  watchEvents(listener: (event: RecordedEvent) => void): () => void {
    return this.eventLog.subscribe(listener);
  }

  sources(): readonly SourceView[] {
    return this.intake.statuses();
  }

  /**
   * Each pod's status in the agent's model (see `PodStatusManager`), brought up to date now: by
   * uid, versioned, with a terminal phase kept and each condition's last transition.
   */
  podStatuses(): Promise<PodStatusRecord[]> {
    return this.api.podStatuses();
  }

  /**
   * Told the uids of the pods whose status changed, once per change (and of those that went), as
   * the agent sees them change (after each pass and event); returns the way to stop.
   */
  watchPodStatuses(listener: (uids: readonly string[]) => void): () => void {
    const stopStatuses = this.statuses.watch(listener);
    const stopChanges = this.watchChanges(() => {
      this.api.podStatuses().catch((error: unknown) => this.logger.debug({ err: error }, 'pod statuses not brought up to date'));
    });
    return () => {
      stopStatuses();
      stopChanges();
    };
  }

  watchChanges(listener: () => void): () => void {
    const stopEvents = this.eventLog.subscribe(() => listener());
    this.on('pass', listener);
    return () => {
      stopEvents();
      this.off('pass', listener);
    };
  }

  probeMetrics(): Promise<{ contentType: string; body: string }> {
    return this.probeCounts.text();
  }

  /** The images the runtime holds (a Node's `status.images`). */
  images(): Promise<ImageRecord[]> {
    return this.runtime.images.list();
  }

  health(): HealthView {
    return this.api.health();
  }

  /** At least every sync period, sooner when a crash back-off ends. */
  private nextWakeIn(): number {
    const now = this.clock.now();
    let delay = this.syncFrequencyMs;
    for (const b of this.passes.currentBackOffs()) delay = Math.min(delay, Math.max(0, b.until - now));
    return delay;
  }

  /** A listener that throws must not stop the sync loop. */
  private notify(result: PassResult): void {
    try {
      this.emit('pass', result);
    } catch (error) {
      this.logger.error({ err: error }, 'a pass listener threw');
    }
  }

  private emitEvent(event: Omit<KubeletEvent, 'time'>): void {
    this.events.emit({ ...event, time: this.clock.now() });
  }
}

/** The plain-function door: an agent from its parts, without DI. Call `start()` on it. */
export function createKubelet(options: KubeletOptions): Kubelet {
  return new Kubelet(options);
}
