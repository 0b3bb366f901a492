import { EventEmitter } from 'node:events';
import { availableParallelism, hostname as osHostname } from 'node:os';
import {
  identityOf,
  isManagedBy,
  nodeNameProblem,
  plan,
  reportPlan,
  silentLogger,
  systemClock,
  toKubeletError,
  type AgentView,
  type BackOff,
  type Clock,
  type ContainerDetails,
  type ContainerManifest,
  type ContainerRuntime,
  type ContainerSummary,
  type DesiredPod,
  type EventSink,
  type HealthView,
  type KubeletError,
  type KubeletEvent,
  type Logger,
  type ManifestSource,
  type PlanInput,
  type PlanReport,
  type PodView,
  type TimerHandle,
} from '@kubelet-ts/core';
import { withExitTimes } from './exit-times.js';
import { PlanExecutor, type ExecutionResult } from './executor.js';
import { podViews } from './pod-views.js';
import { PodWorkers } from './pod-workers.js';
import { probeTargets } from './probe-targets.js';
import { TransitionReporter } from './transition-reporter.js';
import { LivenessProber, type NetworkCheck } from './prober.js';
import { KubeletMetrics } from './metrics.js';
import { LogEventSink } from './log-event-sink.js';
import { SourceMux, type DesiredState } from './mux.js';
import { SourceSupervisor } from './supervisor.js';

export interface KubeletOptions {
  readonly runtime: ContainerRuntime;
  /** In priority order: when two give the same manifest id, the earlier source's manifest runs. */
  readonly sources: readonly ManifestSource[];
  /** Default: events are written to the logger. */
  readonly events?: EventSink;
  readonly logger?: Logger;
  readonly clock?: Clock;
  /** This host's name; labels every container so agents sharing an engine keep apart. Default: the OS's. */
  readonly hostname?: string;
  /** A pass runs after every change and at least this often. Default 10 s. */
  readonly syncFrequencyMs?: number;
  /**
   * Pods acted on at once. Default twice the CPU count (2 to 16): the engine does the work, and the
   * bench found a 2-core engine faster at 4 concurrent pod starts than at 8.
   */
  readonly concurrency?: number;
  /** `health()` turns unhealthy when no pass has completed for this long. Default: 3 × syncFrequencyMs, at least 30 s. */
  readonly healthThresholdMs?: number;
  /** Crash back-off of exited containers. Default the kubelet's: 10 s doubling to 300 s. */
  readonly crashBackOff?: { readonly initialMs: number; readonly maxMs: number };
  /** Liveness probes: the address published ports are dialled on (default 127.0.0.1), and the checker. */
  readonly probes?: { readonly host?: string; readonly network?: NetworkCheck };
  /** Restart back-off for crashed sources. Default 1 s doubling to 60 s. */
  readonly sourceBackoff?: { readonly initialMs: number; readonly maxMs: number };
}

export interface PassResult {
  readonly startedAt: number;
  readonly durationMs: number;
  /** Pods desired by the union of all sources. */
  readonly desired: number;
  readonly actions: number;
  readonly failures: number;
  /** Removals withheld because not every source has delivered yet. */
  readonly held: number;
  /** Pods left out of the pass because their worker was still acting on them. */
  readonly busy: number;
  /** Set when the pass could not run at all (the runtime could not list). */
  readonly error?: KubeletError;
}

export interface SourceStatus {
  readonly name: string;
  readonly seen: boolean;
  readonly manifests: number;
  readonly lastError?: string;
}

export interface KubeletStatus {
  readonly hostname: string;
  readonly sources: readonly SourceStatus[];
  readonly passes: number;
  readonly lastPass?: PassResult;
}

type KubeletEvents = { pass: [PassResult] };

/**
 * The agent: sources → mux (latest set per source) → desired state → planner → executor → events.
 * One pass at a time; a change during a pass makes exactly one more pass after it.
 */
export class Kubelet extends EventEmitter<KubeletEvents> implements AgentView {
  readonly hostname: string;
  private readonly runtime: ContainerRuntime;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly events: EventSink;
  private readonly syncFrequencyMs: number;
  private readonly healthThresholdMs: number;
  private readonly crashBackOff: KubeletOptions['crashBackOff'];
  private startedAt = 0;
  private readonly mux: SourceMux;
  private readonly supervisors: SourceSupervisor[];
  private readonly workers: PodWorkers;
  private readonly metricsRegistry: KubeletMetrics;
  private readonly prober: LivenessProber;
  private readonly transitions: TransitionReporter;
  private backOffs: readonly BackOff[] = [];
  /** Busy pods left out of a pass planned from a newer desired state: look again when each is done. */
  private readonly recheck = new Set<string>();
  /** The desired state each busy pod's worker was planned from. */
  private readonly dispatchedWith = new Map<string, DesiredState>();
  private lastDone: Promise<PassResult> | undefined;
  /** The inputs of the last pass that found nothing to do, to recognise the next one. */
  private quiet: { desired: DesiredState; listed: readonly ContainerSummary[]; allowRemovals: boolean; held: number } | undefined;
  /** Pods with liveness probes, per desired state (recomputed only when that changes). */
  private probed: { of: DesiredState; ids: Set<string> } | undefined;
  private readonly sourceErrors = new Map<string, string>();
  private conflictText = '';
  private timer: TimerHandle | undefined;
  private loop: Promise<void> | undefined;
  private pending = false;
  private waiters: Array<(result: PassResult) => void> = [];
  private passes = 0;
  private lastPass: PassResult | undefined;
  private state: 'new' | 'running' | 'closed' = 'new';

  constructor(options: KubeletOptions) {
    super();
    this.metricsRegistry = new KubeletMetrics(async () => (await this.runtime.list()).filter((c) => isManagedBy(c.labels, this.hostname)));
    this.runtime = this.metricsRegistry.instrument(options.runtime);
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? silentLogger;
    this.events = this.metricsRegistry.events(options.events ?? new LogEventSink(this.logger));
    this.hostname = (options.hostname ?? osHostname()).toLowerCase();
    const problem = nodeNameProblem(this.hostname);
    if (problem !== undefined) throw new Error(problem);
    this.syncFrequencyMs = options.syncFrequencyMs ?? 10_000;
    this.healthThresholdMs = options.healthThresholdMs ?? Math.max(3 * this.syncFrequencyMs, 30_000);
    this.crashBackOff = options.crashBackOff;
    this.mux = new SourceMux(options.sources.map((s) => s.name));
    this.transitions = new TransitionReporter(this.hostname, (event) => this.emitEvent(event), () => this.startedAt);
    this.prober = new LivenessProber({
      runtime: this.runtime,
      clock: this.clock,
      events: this.events,
      logger: this.logger,
      ...(options.probes?.host === undefined ? {} : { host: options.probes.host }),
      ...(options.probes?.network === undefined ? {} : { network: options.probes.network }),
      // A killed container is for the restart policy now: look at once.
      onKilled: () => this.requestSync(),
    });
    this.workers = new PodWorkers(new PlanExecutor({ runtime: this.runtime, events: this.events, clock: this.clock }), options.concurrency ?? defaultConcurrency());
    this.supervisors = options.sources.map(
      (source) =>
        new SourceSupervisor(
          source,
          {
            update: (manifests) => this.onUpdate(source.name, manifests),
            error: (error) => this.onSourceError(source.name, error),
            restarting: (error, delayMs) => {
              this.sourceErrors.set(source.name, error.message);
              this.emitEvent({ type: 'SourceRestarted', source: source.name, reason: error.code, message: `source crashed (${error.message}); restarting in ${delayMs} ms` });
            },
          },
          { clock: this.clock, initialBackoffMs: options.sourceBackoff?.initialMs, maxBackoffMs: options.sourceBackoff?.maxMs },
        ),
    );
  }

  /** Starts every source and the sync loop. Resolves once each source has had its first start. */
  async start(): Promise<void> {
    if (this.state !== 'new') throw new Error(`kubelet cannot start: it is ${this.state}`);
    this.state = 'running';
    this.startedAt = this.clock.now();
    this.logger.info({ hostname: this.hostname, runtime: this.runtime.name, sources: this.supervisors.map((s) => s.source.name) }, 'kubelet starting');
    for (const s of this.supervisors) s.start();
    await Promise.all(this.supervisors.map((s) => s.started));
    // Sources that delivered while starting have already asked for a pass; ask only if none did,
    // so that the agent adopts what the runtime runs even before any source speaks.
    if (this.loop === undefined && this.passes === 0) this.requestSync();
  }

  /** Stops watching and syncing and closes every source. Containers are left running. */
  async close(): Promise<void> {
    if (this.state === 'closed') return;
    this.state = 'closed';
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    await Promise.all(this.supervisors.map((s) => s.close()));
    await this.loop;
    await this.prober.close();
    await this.workers.idle();
    this.logger.info({ passes: this.passes }, 'kubelet stopped');
  }

  /** Runs a pass (after the one in progress, if any) and resolves with its result. */
  /**
   * Runs a pass over every pod and resolves once its work is done: work already in flight is
   * waited for first, and a pass that had to leave a busy pod out is followed by another.
   */
  async sync(): Promise<PassResult> {
    for (;;) {
      await this.workers.idle();
      const result = await new Promise<PassResult>((resolve) => {
        this.waiters.push(resolve);
        this.requestSync();
      });
      if (result.busy === 0 || this.state !== 'running') return result;
    }
  }

  desired(): DesiredState {
    return this.mux.desired();
  }

  status(): KubeletStatus {
    const desired = this.mux.desired();
    const unseen = new Set(this.mux.unseen());
    return {
      hostname: this.hostname,
      sources: this.supervisors.map(({ source }) => {
        const lastError = this.sourceErrors.get(source.name);
        return {
          name: source.name,
          seen: !unseen.has(source.name),
          manifests: desired.pods.filter((p) => p.source === source.name).length,
          ...(lastError === undefined ? {} : { lastError }),
        };
      }),
      passes: this.passes,
      ...(this.lastPass === undefined ? {} : { lastPass: this.lastPass }),
    };
  }

  async pods(): Promise<PodView[]> {
    return podViews(this.mux.desired().pods, await this.runtime.list(), this.hostname, this.backOffs);
  }

  async plan(): Promise<PlanReport> {
    const desired = this.mux.desired();
    const allowRemovals = this.mux.allSeen();
    const actual = await withExitTimes(this.runtime, await this.runtime.list(), this.hostname);
    const p = plan(this.planInput(desired.pods, allowRemovals, actual, new Set()));
    return reportPlan(p, this.mux.unseen());
  }

  metrics(): Promise<{ contentType: string; body: string }> {
    return this.metricsRegistry.text();
  }

  async containerInfo(name: string): Promise<ContainerDetails | undefined> {
    const wanted = name.replace(/^\//, '');
    for (const c of await this.runtime.list()) {
      const identity = identityOf(c.labels);
      if (identity === undefined || identity.node !== this.hostname) continue;
      if (c.name === wanted || c.id === wanted || `${identity.podId}/${identity.container}` === wanted) return this.runtime.inspect(c.id);
    }
    return undefined;
  }

  health(): HealthView {
    const now = this.clock.now();
    if (this.state !== 'running') return { healthy: false, message: `the agent is ${this.state}` };
    const since = this.lastPass === undefined ? this.startedAt : this.lastPass.startedAt + this.lastPass.durationMs;
    const age = now - since;
    const last = this.lastPass === undefined ? {} : { lastPassAt: this.lastPass.startedAt + this.lastPass.durationMs };
    if (age > this.healthThresholdMs) {
      return { healthy: false, ...last, message: `no sync pass has completed for ${age} ms (threshold ${this.healthThresholdMs} ms)` };
    }
    const error = this.lastPass?.error === undefined ? '' : `; the last pass failed: ${this.lastPass.error.message}`;
    return { healthy: true, ...last, message: `last pass ${this.lastPass === undefined ? 'not yet run' : `completed ${age} ms ago`}${error}` };
  }

  private onUpdate(source: string, manifests: readonly ContainerManifest[]): void {
    this.metricsRegistry.sourceUpdates.inc({ source });
    this.sourceErrors.delete(source);
    if (!this.mux.update(source, manifests) && this.passes > 0) return;
    this.logger.debug({ source, manifests: manifests.length }, 'source update');
    this.reportConflicts();
    this.requestSync();
  }

  private onSourceError(source: string, error: KubeletError): void {
    this.metricsRegistry.sourceErrors.inc({ source });
    this.sourceErrors.set(source, error.message);
    const type: KubeletEvent['type'] =
      error.code === 'InvalidManifest' ? 'ManifestRejected' : error.code === 'Conflict' ? 'ManifestConflict' : 'SourceError';
    this.emitEvent({ type, source, reason: error.code, message: error.message });
  }

  private reportConflicts(): void {
    const { conflicts } = this.mux.desired();
    const text = conflicts.map((c) => `${c.podId}:${c.winner}:${c.loser}`).join(',');
    if (text === this.conflictText) return;
    this.conflictText = text;
    for (const c of conflicts) {
      this.emitEvent({
        type: 'ManifestConflict',
        podId: c.podId,
        source: c.loser,
        reason: 'Conflict',
        message: `manifest id "${c.podId}" is given by sources ${c.winner} and ${c.loser}; running the one from ${c.winner}`,
      });
    }
  }

  private requestSync(): void {
    if (this.state !== 'running') {
      this.flushWaiters();
      return;
    }
    if (this.loop !== undefined) {
      this.pending = true;
      return;
    }
    this.loop = this.runLoop();
  }

  private async runLoop(): Promise<void> {
    try {
      do {
        this.pending = false;
        if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
        const waiters = this.waiters;
        this.waiters = [];
        // The loop goes on as soon as the pass has dispatched its work; callers of sync() and
        // 'pass' listeners hear when that work is done.
        const { done } = await this.pass();
        this.lastDone = done;
        void done.then((result) => {
          for (const resolve of waiters) resolve(result);
          this.notify(result);
        });
      } while (this.pending && this.state === 'running');
    } finally {
      // Cleared in the same turn as the last `pending` check: a request arriving after this point
      // starts a new loop instead of setting a flag that nobody reads.
      this.loop = undefined;
    }
    if (this.state === 'running') this.timer = this.clock.setTimeout(() => this.requestSync(), this.nextWakeIn());
    else this.flushWaiters();
  }

  private planInput(desired: readonly DesiredPod[], allowRemovals: boolean, actual: readonly ContainerSummary[], busy: ReadonlySet<string>): PlanInput {
    return {
      desired,
      actual,
      node: this.hostname,
      allowRemovals,
      now: this.clock.now(),
      busy,
      ...(this.crashBackOff === undefined ? {} : { crashBackOff: this.crashBackOff }),
    };
  }

  private hasProbes(podId: string): boolean {
    const desired = this.mux.desired();
    if (this.probed?.of !== desired) {
      const ids = new Set(desired.pods.filter((p) => p.manifest.containers.some((c) => c.livenessProbe !== undefined)).map((p) => p.manifest.id));
      this.probed = { of: desired, ids };
    }
    return this.probed.ids.has(podId);
  }

  /** At least every sync period, sooner when a crash back-off ends. */
  private nextWakeIn(): number {
    const now = this.clock.now();
    let delay = this.syncFrequencyMs;
    for (const b of this.backOffs) delay = Math.min(delay, Math.max(0, b.until - now));
    return delay;
  }

  /** Plans and dispatches; `done` resolves with the pass's result once its work is done. */
  private async pass(): Promise<{ done: Promise<PassResult> }> {
    const startedAt = this.clock.now();
    // Taken together, before anything is awaited: a source that first delivers while the runtime
    // lists would otherwise allow removals against a desired state from before its delivery, and
    // every pod of that source would be stopped as not desired (seen after an agent restart).
    const desired = this.mux.desired();
    const allowRemovals = this.mux.allSeen();
    const finish = (executed: ExecutionResult, held: number, busy: number, error?: KubeletError): PassResult => {
      const result: PassResult = { startedAt, desired: desired.pods.length, durationMs: this.clock.now() - startedAt, ...executed, held, busy, ...(error === undefined ? {} : { error }) };
      this.passes += 1;
      this.lastPass = result;
      this.metricsRegistry.passDuration.observe(result.durationMs / 1000);
      const level = executed.actions > 0 || held > 0 ? 'info' : 'debug';
      this.logger[level]({ desired: result.desired, actions: result.actions, failures: result.failures, held, durationMs: result.durationMs }, 'sync pass');
      return result;
    };
    try {
      const listed = await this.runtime.list();
      const busy = this.workers.busy();
      this.metricsRegistry.desiredPods.set(desired.pods.length);
      // Nothing changed since a pass that found nothing to do (same desired state, the very same
      // container records, no back-off running): the plan is empty again, so skip planning. Runtimes
      // that hand out unchanged records as the same objects (the in-memory one) make the steady
      // state cost one list and one pointer comparison per container.
      const last = this.quiet;
      if (last !== undefined && last.desired === desired && last.allowRemovals === allowRemovals && busy.size === 0 && sameRecords(last.listed, listed)) {
        return { done: Promise.resolve(finish({ actions: 0, failures: 0 }, last.held, 0)) };
      }
      const actual = await withExitTimes(this.runtime, listed, this.hostname);
      this.transitions.exits(actual);
      const p = plan(this.planInput(desired.pods, allowRemovals, actual, busy));
      this.quiet = p.pods.length === 0 && p.backOffs.length === 0 && busy.size === 0 ? { desired, listed, allowRemovals, held: p.held } : undefined;
      this.backOffs = p.backOffs;
      this.transitions.backOffs(p.backOffs);
      this.prober.update(probeTargets(desired.pods, actual, this.hostname));
      if (p.held > 0) this.logger.info({ held: p.held, waitingFor: this.mux.unseen() }, 'keeping containers until every source has been seen');
      // A busy pod was left out of this plan. If the desired state changed since its worker was
      // sent, look again as soon as that worker finishes rather than at the next period; if not, the
      // worker is already doing what this pass would have asked (and looking again would only load
      // the engine with lists while it works). Only that worker's end can change what a pass does
      // for it: another worker's end must not ask, or a pod that fails at once (in pull back-off)
      // would make pass after pass at one instant while the busy pod works.
      for (const id of busy) {
        const plannedWith = this.dispatchedWith.get(id);
        if (plannedWith === undefined) this.requestSync(); // its worker ended while this pass listed
        else if (plannedWith !== desired) this.recheck.add(id);
      }
      const work = p.pods.map((pod) => {
        this.dispatchedWith.set(pod.podId, desired);
        return this.workers.dispatch(pod).then((r) => {
          this.dispatchedWith.delete(pod.podId);
          // New containers with liveness probes: a pass hands them to the prober now, not a period later.
          const probed = r.failures === 0 && this.hasProbes(pod.podId);
          if (this.recheck.delete(pod.podId) || probed) this.requestSync();
          return r;
        });
      });
      return { done: Promise.all(work).then((results) => finish({ actions: sum(results, 'actions'), failures: sum(results, 'failures') }, p.held, busy.size)) };
    } catch (error) {
      const e = toKubeletError(error, this.runtime.name);
      this.logger.error({ code: e.code, err: e }, `sync pass failed: ${e.message}`);
      return { done: Promise.resolve(finish({ actions: 0, failures: 0 }, 0, 0, e)) };
    }
  }

  /** A listener that throws must not stop the sync loop. */
  private notify(result: PassResult): void {
    try {
      this.emit('pass', result);
    } catch (error) {
      this.logger.error({ err: error }, 'a pass listener threw');
    }
  }

  /** Answers sync() calls that no pass will serve (the agent is closed) with the last pass's result. */
  private flushWaiters(): void {
    const waiters = this.waiters;
    this.waiters = [];
    const empty: PassResult = { startedAt: this.clock.now(), durationMs: 0, desired: 0, actions: 0, failures: 0, held: 0, busy: 0 };
    void (async () => {
      await this.loop; // a pass still planning will set lastDone
      const result = await (this.lastDone ?? Promise.resolve(empty));
      for (const resolve of waiters) resolve(result);
    })();
  }

  private emitEvent(event: Omit<KubeletEvent, 'time'>): void {
    this.events.emit({ ...event, time: this.clock.now() });
  }
}

/** The plain-function door: an agent from its parts, without DI. Call `start()` on it. */
export function createKubelet(options: KubeletOptions): Kubelet {
  return new Kubelet(options);
}

function defaultConcurrency(): number {
  return Math.min(16, Math.max(2, 2 * availableParallelism()));
}

function sameRecords(a: readonly ContainerSummary[], b: readonly ContainerSummary[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function sum(results: readonly ExecutionResult[], key: keyof ExecutionResult): number {
  return results.reduce((total, r) => total + r[key], 0);
}
