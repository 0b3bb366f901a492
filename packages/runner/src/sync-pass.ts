import {
  identityOf,
  Labels,
  plan,
  toKubeletError,
  type BackOff,
  type Clock,
  type ContainerRuntime,
  type ContainerEvent,
  type ContainerSummary,
  type DesiredPod,
  type KubeletError,
  type Logger,
  type Plan,
  type ContainerManifest,
  type PlanInput,
  type PodPlan,
  type SandboxSummary,
} from '@kubelet-ts/core';
import type { ExecutionResult } from './executor.js';
import type { KubeletMetrics } from './metrics.js';
import type { Inbox } from './inbox.js';
import type { PodCache, Relisted } from './pod-cache.js';
import type { DesiredState } from './mux.js';
import { hasAnyProbe, probeTargets } from './probe-targets.js';
import type { Prober } from './prober.js';
import type { PodFiles } from './pod-files.js';
import type { PodWorkers } from './pod-workers.js';
import { QuietPass } from './quiet-pass.js';
import type { PodTerminations } from './pod-terminations.js';
import type { SourceIntake } from './source-intake.js';
import type { PassResult } from './sync-loop.js';
import type { TransitionReporter } from './transition-reporter.js';

export interface SyncPassOptions {
  readonly runtime: ContainerRuntime;
  /** What the runtime showed: a full pass relists it, a pod pass refreshes its pods. */
  readonly cache: PodCache;
  readonly hostname: string;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly intake: SourceIntake;
  /** The pods on their way out (see `PodTerminations`): told what each full pass sees. */
  readonly terminations?: PodTerminations;
  readonly workers: PodWorkers;
  readonly prober: Prober;
  readonly transitions: TransitionReporter;
  readonly metrics: KubeletMetrics;
  readonly crashBackOff?: { readonly initialMs: number; readonly maxMs: number };
  /** What containers' env reads of the node (see `PlanInput.podFields`). */
  readonly podFields?: PlanInput['podFields'];
  /** The volumes of files, rewritten when what the pods or their sources give changes. */
  readonly files?: PodFiles;
  /** Where a pass says that a pod it left out has been planned by nobody (`pod-missed`). */
  readonly inbox: Inbox;
  /**
   * Whether a full pass must list the host, or may plan from the pod cache (the runtime's event
   * stream keeps it current: the evented PLEG's long relist period). Default: always list.
   */
  readonly relistDue?: () => boolean;
}

/**
 * One pass: desired state × one relist (into the pod cache) → plan → each pod's plan to its worker. It decides
 * and dispatches; only the pod workers act. Remembers what the agent's read API shows between
 * passes (the back-offs, the last result).
 */
export class SyncPass {
  private readonly quiet = new QuietPass();
  private backOffs: readonly BackOff[] = [];
  /** The desired state whose volumes of files were last brought up to date. */
  private filesOf: unknown;
  private filesAwaiting = 0;
  /** The pods found finished, by manifest object (see `PlanInput.finished`). */
  private readonly finished = new WeakSet<ContainerManifest>();
  private refreshing: Promise<void> = Promise.resolve();
  /** This node's containers in the last list, by id → pod (to place runtime events). */
  private ours = new Map<string, string>();
  /** Pods with probes, per desired state (recomputed only when that changes). */
  private probed: { of: DesiredState; ids: Set<string> } | undefined;
  passes = 0;
  lastPass: PassResult | undefined;

  constructor(private readonly options: SyncPassOptions) {}

  /** Exited containers waiting out their crash back-off, as the last pass saw them. */
  currentBackOffs(): readonly BackOff[] {
    return this.backOffs;
  }

  /**
   * The agent's pod a runtime event is about: the pod it names when that pod is desired or has
   * containers of ours, else the pod of that container in the last list; undefined for a foreign
   * or unknown container (no pass is asked for it).
   */
  podOf(event: ContainerEvent): string | undefined {
    const known = this.ours.get(event.containerId);
    if (known !== undefined) return known;
    const podId = event.podId;
    if (podId === undefined) return undefined;
    return this.options.intake.desired().pods.some((p) => p.manifest.id === podId) ? podId : undefined;
  }

  /** Plans every pod from `seen` (the ones `busy` left out), and what follows from it: where containers are, exits, forgotten pods. */
  private planSeen(seen: Relisted, desired: DesiredState, allowRemovals: boolean, busy: ReadonlySet<string>): Plan {
    this.ours = oursById(seen.containers, this.options.hostname);
    this.forgetGone(seen.sandboxes);
    this.options.transitions.exits(seen.containers, busy);
    return this.planned(this.planInput(desired.pods, allowRemovals, seen.containers, seen.sandboxes, busy));
  }

  /** The plan, with the pods it found finished remembered: they never run again (`PlanInput.finished`). */
  private planned(input: PlanInput): Plan {
    const p = plan(input);
    for (const manifest of p.finished) this.finished.add(manifest);
    return p;
  }

  /** Lets the intake forget the pods it named that are neither desired nor on the runtime any more. */
  private forgetGone(sandboxes: readonly SandboxSummary[]): void {
    const present = new Set(this.ours.values());
    for (const s of sandboxes) {
      const podId = s.labels[Labels.sandbox];
      if (podId !== undefined && s.labels[Labels.node] === this.options.hostname) present.add(podId);
    }
    this.options.intake.forget((podId) => present.has(podId));
  }

  /** The planner's input for this node now (also what `plan()` previews). */
  planInput(
    desired: readonly DesiredPod[],
    allowRemovals: boolean,
    actual: readonly ContainerSummary[],
    sandboxes: readonly SandboxSummary[],
    busy: ReadonlySet<string>,
  ): PlanInput {
    const { crashBackOff } = this.options;
    return {
      desired,
      actual,
      sandboxes,
      node: this.options.hostname,
      allowRemovals,
      now: this.options.clock.now(),
      busy,
      unhealthy: this.options.prober.unhealthy(),
      known: this.options.intake.known(),
      finished: this.finished,
      objects: (source) => this.options.intake.objects(source),
      ...(crashBackOff === undefined ? {} : { crashBackOff }),
      ...(this.options.podFields === undefined ? {} : { podFields: this.options.podFields }),
    };
  }

  /**
   * Plans and dispatches; `done` resolves with the pass's result once its work is done. With
   * `pods`, a pass of those pods only (a runtime event named them): only those pods are listed
   * (their entries in the pod cache refreshed) and planned, nothing else is removed, and the quiet-pass memory,
   * the other pods' back-offs and the prober's targets are left as the last full pass set them.
   * A full pass lists the host when `fresh` or when `relistDue` says so; else it plans from the pod
   * cache, and lists before it acts if that plan has work.
   */
  async run(pods?: ReadonlySet<string>, fresh = false): Promise<{ done: Promise<PassResult> }> {
    if (pods !== undefined) return this.runPods(pods);
    const { clock, intake, runtime, cache, workers, metrics, logger, hostname } = this.options;
    const startedAt = clock.now();
    // Taken together, before anything is awaited: a source that first delivers while the runtime
    // lists would otherwise allow removals against a desired state from before its delivery, and
    // every pod of that source would be stopped as not desired (seen after an agent restart).
    const desired = intake.desired();
    const allowRemovals = intake.allSeen();
    const finish = (executed: ExecutionResult, held: number, busy: number, error?: KubeletError): PassResult => {
      const result: PassResult = {
        startedAt,
        desired: desired.pods.length,
        durationMs: clock.now() - startedAt,
        ...executed,
        held,
        busy,
        ...(error === undefined ? {} : { error }),
      };
      this.passes += 1;
      this.lastPass = result;
      metrics.passDuration.observe(result.durationMs / 1000);
      const level = executed.actions > 0 || held > 0 ? 'info' : 'debug';
      logger[level](
        { desired: result.desired, actions: result.actions, failures: result.failures, held, durationMs: result.durationMs },
        'sync pass',
      );
      return result;
    };
    try {
      // Busy as the lists begin: a worker that ends while they run may have acted after one of them
      // looked (the two lists are not one snapshot), so its pod waits for the next pass, which
      // `deferred` asks for at once.
      const busy = workers.busy();
      const listed = fresh || (this.options.relistDue?.() ?? true);
      let seen = listed ? await cache.relist() : cache.current();
      metrics.desiredPods.set(desired.pods.length);
      const idle = busy.size === 0 && this.options.prober.unhealthy().size === 0;
      const quietHeld = idle ? this.quiet.matches({ desired, listed: seen.listed, sandboxes: seen.sandboxes, allowRemovals }) : undefined;
      if (quietHeld !== undefined) return { done: Promise.resolve(finish({ actions: 0, failures: 0 }, quietHeld, 0)) };
      let p = this.planSeen(seen, desired, allowRemovals, busy);
      // A pass from the cache acts only on what it has just seen: with work to do, it lists first.
      if (!listed && p.pods.length > 0) {
        seen = await cache.relist();
        p = this.planSeen(seen, desired, allowRemovals, busy);
      }
      this.options.terminations?.observe(desired.pods, seen, allowRemovals);
      const inputs = { desired, listed: seen.listed, sandboxes: seen.sandboxes, allowRemovals };
      this.quiet.record(inputs, p.pods.length === 0 && p.backOffs.length === 0 && idle, p.held);
      this.backOffs = p.backOffs;
      this.options.transitions.backOffs(p.backOffs);
      this.options.prober.update(probeTargets(desired.pods, seen.containers, hostname, seen.sandboxes));
      this.refreshFiles(desired.pods);
      if (p.held > 0) logger.info({ held: p.held, waitingFor: intake.unseen() }, 'keeping containers until every source has been seen');
      // A busy pod was left out of this plan: its worker plans it again when it is done (see
      // PodWorkers). One whose worker ended while this pass listed was planned by nobody.
      this.leftOut(busy);
      const work = p.pods.map((pod) => workers.dispatch(pod));
      return {
        done: Promise.all(work).then((results) =>
          finish({ actions: sum(results, 'actions'), failures: sum(results, 'failures') }, p.held, busy.size),
        ),
      };
    } catch (error) {
      const e = toKubeletError(error, runtime.name);
      logger.error({ code: e.code, err: e }, `sync pass failed: ${e.message}`);
      return { done: Promise.resolve(finish({ actions: 0, failures: 0 }, 0, 0, e)) };
    }
  }

  /**
   * Rewrites the volumes of files when the pods or their sources' objects changed (a new desired
   * state), as the kubelet updates a mounted ConfigMap; in the background, one refresh at a time.
   */
  private refreshFiles(pods: readonly DesiredPod[]): void {
    const { files, intake, hostname, podFields, logger } = this.options;
    // A source's first delivery after a restart brings its objects: the files are refreshed then too.
    const awaiting = intake.awaitingCount;
    if (files === undefined || (this.filesOf === pods && this.filesAwaiting === awaiting)) return;
    this.filesOf = pods;
    this.filesAwaiting = awaiting;
    // A pod still run from its source's checkpoint keeps its files as they are, without a word:
    // its ConfigMaps and Secrets were never checkpointed, and come when the source delivers.
    const delivered = awaiting === 0 ? pods : pods.filter((pod) => intake.delivered(pod.source));
    this.refreshing = this.refreshing
      .then(() =>
        files.refresh(
          delivered,
          (pod) => ({ node: hostname, source: pod.source, ...podFields }),
          (source) => intake.objects(source),
        ),
      )
      .catch((error: unknown) => logger.warn({ err: error }, `volume files not brought up to date: ${(error as Error).message}`));
  }

  /** Waits for the refresh of volume files under way (for `close`). */
  async settled(): Promise<void> {
    await this.refreshing;
  }

  /** A pass of `pods` only (see `run`). */
  private async runPods(pods: ReadonlySet<string>): Promise<{ done: Promise<PassResult> }> {
    const { clock, runtime, cache, workers, logger, hostname } = this.options;
    const startedAt = clock.now();
    let desired = 0;
    const finish = (executed: ExecutionResult, busy: number, error?: KubeletError): PassResult => {
      const result: PassResult = {
        startedAt,
        desired,
        durationMs: clock.now() - startedAt,
        ...executed,
        held: 0,
        busy,
        pods: [...pods],
        ...(error === undefined ? {} : { error }),
      };
      logger[executed.actions > 0 ? 'info' : 'debug'](
        { pods: result.pods, actions: result.actions, failures: result.failures, durationMs: result.durationMs },
        'pod pass',
      );
      return result;
    };
    try {
      // A busy pod's worker is acting: it is given the news below (`leftOut`) and plans the pod
      // again when it is done.
      const busy = new Set([...workers.busy()].filter((id) => pods.has(id)));
      await cache.refresh(pods);
      const { containers } = cache.snapshot();
      this.ours = oursById(containers, hostname);
      this.options.transitions.exits(containers, workers.busy());
      const scoped = this.planScope(pods, busy);
      desired = scoped.desired;
      this.leftOut(busy);
      const work = scoped.plan.pods.map((pod) => workers.dispatch(pod));
      return {
        done: Promise.all(work).then((results) =>
          finish({ actions: sum(results, 'actions'), failures: sum(results, 'failures') }, busy.size),
        ),
      };
    } catch (error) {
      const e = toKubeletError(error, runtime.name);
      logger.error({ code: e.code, err: e, pods: [...pods] }, `pod pass failed: ${e.message}`);
      return { done: Promise.resolve(finish({ actions: 0, failures: 0 }, 0, e)) };
    }
  }

  /**
   * One pod's plan from the newest desired state and what the pod cache holds of it: what its
   * worker acts on next when news arrived while it worked. Undefined when there is nothing to do.
   */
  planPod(podId: string): PodPlan | undefined {
    return this.planScope(new Set([podId]), new Set()).plan.pods[0];
  }

  /** Plans `pods` (but the `busy` ones) from the pod cache, and records their back-offs. */
  private planScope(pods: ReadonlySet<string>, busy: ReadonlySet<string>): { readonly plan: Plan; readonly desired: number } {
    const { intake, cache } = this.options;
    const { containers, sandboxes } = cache.snapshot();
    const desired = intake.desired().pods.filter((p) => pods.has(p.manifest.id));
    const actual = containers.filter((c) => pods.has(c.labels[Labels.manifestId] ?? ''));
    const mine = sandboxes.filter((s) => pods.has(s.labels[Labels.sandbox] ?? ''));
    const p = this.planned(this.planInput(desired, intake.allSeen(), actual, mine, busy));
    // A busy pod was not planned: its back-offs stand until a plan of it is made.
    this.backOffs = [...this.backOffs.filter((b) => !pods.has(b.podId) || busy.has(b.podId)), ...p.backOffs];
    this.options.transitions.backOffs(this.backOffs);
    return { plan: p, desired: desired.length };
  }

  /** Busy pods a pass left out: news for their workers; one that has ended was planned by nobody. */
  private leftOut(busy: ReadonlySet<string>): void {
    for (const id of busy) if (!this.options.workers.news(id)) this.options.inbox.post({ type: 'pod-missed', podId: id });
  }

  /** Whether a pod has containers with probes (their new containers are handed to the prober at once). */
  hasProbes(podId: string): boolean {
    const desired = this.options.intake.desired();
    if (this.probed?.of !== desired) {
      const ids = new Set(desired.pods.filter((p) => p.manifest.containers.some(hasAnyProbe)).map((p) => p.manifest.id));
      this.probed = { of: desired, ids };
    }
    return this.probed.ids.has(podId);
  }
}

/** This node's containers, by id → pod. */
function oursById(actual: readonly ContainerSummary[], node: string): Map<string, string> {
  const ours = new Map<string, string>();
  for (const c of actual) {
    const identity = identityOf(c.labels);
    if (identity !== undefined && identity.node === node) ours.set(c.id, identity.podId);
  }
  return ours;
}

function sum(results: readonly ExecutionResult[], key: keyof ExecutionResult): number {
  return results.reduce((total, r) => total + r[key], 0);
}
