import {
  ChangeReporter,
  KubeletError,
  isValidatedManifest,
  validateManifest,
  type Clock,
  type ContainerManifest,
  type KubeletEvent,
  type Logger,
  type ManifestSource,
  type AdmissionNode,
  hostAccessOf,
  type HostAccess,
  type ObjectLookup,
  type SourceObject,
} from '@kubelet-ts/core';
import type { Inbox } from './inbox.js';
import type { KubeletMetrics } from './metrics.js';
import { PodAdmission } from './pod-admission.js';
import { SourceMux, type DesiredState } from './mux.js';
import { SourceSupervisor } from './supervisor.js';
import type { SourceCheckpoints } from './source-checkpoints.js';

/** One source as the agent sees it: whether it delivered yet, how many manifests, its last error, why it is down. */
export interface SourceStatus {
  readonly name: string;
  readonly seen: boolean;
  readonly manifests: number;
  readonly lastError?: string;
  /** Why the source is down (it crashed and waits to be started again: a server that cannot bind its port); absent while it runs. */
  readonly down?: string;
}

/** With the host access that manifests an embedder's source builds itself may take (see `HostAccess`). */
export interface SourceIntakeOptions extends HostAccess {
  /** In priority order: when two give the same manifest id, the earlier source's manifest runs. */
  readonly sources: readonly ManifestSource[];
  readonly clock: Clock;
  readonly logger: Logger;
  readonly metrics: KubeletMetrics;
  readonly emit: (event: Omit<KubeletEvent, 'time'>) => void;
  /** Where a delivery is told (`sources-changed`). */
  readonly inbox: Inbox;
  /** Restart back-off for crashed sources. Default 1 s doubling to 60 s. */
  readonly backoff?: { readonly initialMs: number; readonly maxMs: number };
  /**
   * Where each source's last good set is kept across restarts. Without it, a restarted agent
   * knows nothing of what its sources said before: the server's posted pods are lost, and a source
   * unreadable at start holds every removal until it delivers.
   */
  readonly checkpoints?: SourceCheckpoints;
  /**
   * The node a pod is admitted to (its labels and allocatable; see `PodAdmission`). Without it,
   * every valid pod is admitted.
   */
  readonly admission?: AdmissionNode;
}

/**
 * Where manifests come in: runs each source under a supervisor (restarted with back-off when it
 * crashes), keeps each source's latest set in the mux, and turns what sources say into events
 * (rejected manifests, conflicts between sources, errors, restarts). It reports; it never acts.
 */
export class SourceIntake {
  private readonly mux: SourceMux;
  private readonly supervisors: SourceSupervisor[];
  private readonly errors = new Map<string, string>();
  private readonly conflicts = new ChangeReporter();
  /** What each source's checkpoint held at start, validated again: what it runs until it delivers. */
  private readonly restored = new Map<string, readonly ContainerManifest[]>();
  /**
   * The sources whose set is still the one restored from their checkpoint: they have not delivered
   * in this process, so the ConfigMaps and Secrets they give (never checkpointed) are not here yet.
   */
  private readonly awaiting = new Set<string>();
  /** Every pod id a source has named (see `PlanInput.known`), until it is neither desired nor on the runtime. */
  private readonly named = new Set<string>();
  /** Checkpoint writes under way, waited for on close. */
  private readonly saving = new Set<Promise<void>>();

  constructor(private readonly options: SourceIntakeOptions) {
    const admission =
      options.admission === undefined
        ? undefined
        : new PodAdmission(options.admission, ({ pod, refusal }) => {
            options.logger.warn({ podId: pod.manifest.id, source: pod.source, reason: refusal.reason }, `pod rejected: ${refusal.message}`);
            options.emit({
              type: 'PodRejected',
              podId: pod.manifest.id,
              source: pod.source,
              reason: refusal.reason,
              message: refusal.message,
            });
          });
    this.mux = new SourceMux(
      options.sources.map((s) => s.name),
      admission,
    );
    this.supervisors = options.sources.map(
      (source) =>
        new SourceSupervisor(
          source,
          {
            restored: () => this.restored.get(source.name),
            update: (manifests, objects) => this.onUpdate(source.name, manifests, objects),
            error: (error) => this.onError(source.name, error),
            warning: (w) => options.emit({ type: w.reason, podId: w.podId, source: source.name, reason: w.reason, message: w.message }),
            restarting: (error, delayMs) => {
              this.errors.set(source.name, error.message);
              options.emit({
                type: 'SourceRestarted',
                source: source.name,
                reason: error.code,
                message: `source crashed (${error.message}); restarting in ${delayMs} ms`,
              });
            },
          },
          { clock: options.clock, initialBackoffMs: options.backoff?.initialMs, maxBackoffMs: options.backoff?.maxMs },
        ),
    );
  }

  get names(): string[] {
    return this.supervisors.map((s) => s.source.name);
  }

  /**
   * Restores each source's last good set from its checkpoint (it counts as that source's
   * delivery), then starts every source; resolves once each has had its first start.
   */
  async start(): Promise<void> {
    await this.restore();
    for (const s of this.supervisors) s.start();
    await Promise.all(this.supervisors.map((s) => s.started));
  }

  async close(): Promise<void> {
    await Promise.all(this.supervisors.map((s) => s.close()));
    while (this.saving.size > 0) await Promise.all(this.saving);
  }

  /** Pods a source has named, now or before (see `PlanInput.known`). */
  known(): ReadonlySet<string> {
    return this.named;
  }

  /** Forgets the named pods that are no longer desired and that the runtime no longer has (`present`). */
  forget(present: (podId: string) => boolean): void {
    if (this.named.size === 0) return;
    const desired = new Set(this.mux.desired().pods.map((p) => p.manifest.id));
    for (const id of this.named) if (!desired.has(id) && !present(id)) this.named.delete(id);
  }

  desired(): DesiredState {
    return this.mux.desired();
  }

  /** The ConfigMaps and Secrets `source` gives beside its pods (kept in memory only: no checkpoint holds a Secret). */
  objects(source: string): ObjectLookup | undefined {
    return this.mux.objects(source);
  }

  /** True once every source has delivered at least once: only then may the agent stop anything. */
  allSeen(): boolean {
    return this.mux.allSeen();
  }

  /**
   * Whether `source` has delivered in this process; false while what it runs is the set restored
   * from its checkpoint, whose objects come only with the source (a missing one is not missing yet).
   */
  delivered(source: string): boolean {
    return !this.awaiting.has(source);
  }

  /** How many sources still run their restored set (see `delivered`). */
  get awaitingCount(): number {
    return this.awaiting.size;
  }

  unseen(): string[] {
    return this.mux.unseen();
  }

  statuses(): SourceStatus[] {
    const desired = this.mux.desired();
    const unseen = new Set(this.mux.unseen());
    return this.supervisors.map(({ source }) => {
      const lastError = this.errors.get(source.name);
      const down = this.supervisors.find((s) => s.source === source)?.down;
      return {
        ...(down === undefined ? {} : { down: down.message }),
        name: source.name,
        seen: !unseen.has(source.name),
        manifests: desired.pods.filter((p) => p.source === source.name).length,
        ...(lastError === undefined ? {} : { lastError }),
      };
    });
  }

  private onUpdate(source: string, delivered: readonly ContainerManifest[], objects?: readonly SourceObject[]): void {
    this.options.metrics.sourceUpdates.inc({ source });
    this.errors.delete(source);
    this.awaiting.delete(source);
    const manifests = this.checked(source, delivered);
    const changed = this.mux.update(source, manifests, objects);
    for (const m of manifests) this.named.add(m.id);
    if (changed) {
      this.options.logger.debug({ source, manifests: manifests.length }, 'source update');
      this.reportConflicts();
      this.save(source, manifests);
    }
    this.options.inbox.post({ type: 'sources-changed', changed });
  }

  /**
   * Each source's checkpoint, validated again as a source's delivery is: a manifest that is no
   * longer valid (host mounts no longer allowed) is reported and left out. A checkpoint that cannot
   * be read is reported and leaves its source unseen, so nothing is removed until it delivers.
   */
  private async restore(): Promise<void> {
    const { checkpoints, logger } = this.options;
    if (checkpoints === undefined) return;
    let any = false;
    for (const name of this.names) {
      let saved: readonly unknown[] | undefined;
      try {
        saved = await checkpoints.load(name);
      } catch (error) {
        this.onError(
          name,
          new KubeletError(
            'Unavailable',
            `the last good set of source ${name} cannot be read (${(error as Error).message}); it counts as not seen until it delivers`,
            {
              cause: error,
            },
          ),
        );
        continue;
      }
      if (saved === undefined) continue;
      const manifests = this.checked(name, saved as ContainerManifest[]);
      this.restored.set(name, manifests);
      this.awaiting.add(name);
      this.mux.update(name, manifests);
      for (const m of manifests) this.named.add(m.id);
      logger.info(
        { source: name, manifests: manifests.length },
        'restored the last good set of a source; it runs until the source delivers',
      );
      any = true;
    }
    if (any) {
      this.reportConflicts();
      this.options.inbox.post({ type: 'sources-changed', changed: true });
    }
  }

  private save(source: string, manifests: readonly ContainerManifest[]): void {
    const { checkpoints } = this.options;
    if (checkpoints === undefined) return;
    const saving: Promise<void> = checkpoints
      .save(source, manifests)
      .catch((error: unknown) =>
        this.onError(
          source,
          new KubeletError(
            'Unavailable',
            `the set of source ${source} could not be kept for a restart (${(error as Error).message}); it runs, but a restart would not know it`,
            { cause: error },
          ),
        ),
      )
      .finally(() => this.saving.delete(saving));
    this.saving.add(saving);
  }

  /**
   * The set as the agent can run it. What a source built from plain objects (an embedder's own) is
   * validated here: an invalid manifest is reported with its fields and left out, never run half-read.
   * Adapters hand over validated manifests, which pass through untouched.
   */
  private checked(source: string, delivered: readonly ContainerManifest[]): readonly ContainerManifest[] {
    if (delivered.every(isValidatedManifest)) return delivered;
    const out: ContainerManifest[] = [];
    delivered.forEach((m, index) => {
      if (isValidatedManifest(m)) return void out.push(m);
      const result = validateManifest(m, hostAccessOf(this.options));
      if (result.ok) out.push(result.manifest);
      else {
        const where = typeof (m as { id?: unknown }).id === 'string' ? `manifest "${(m as { id: string }).id}"` : `manifest [${index}]`;
        this.onError(
          source,
          new KubeletError(
            'InvalidManifest',
            `${where} from ${source}: ${result.errors.map((e) => `${e.path}: ${e.message}`).join('; ')}`,
            { fieldErrors: result.errors },
          ),
        );
      }
    });
    return out;
  }

  private onError(source: string, error: KubeletError): void {
    this.options.metrics.sourceErrors.inc({ source });
    this.errors.set(source, error.message);
    const type: KubeletEvent['type'] =
      error.code === 'InvalidManifest' ? 'ManifestRejected' : error.code === 'Conflict' ? 'ManifestConflict' : 'SourceError';
    this.options.emit({ type, source, reason: error.code, message: error.message });
  }

  private reportConflicts(): void {
    const { conflicts } = this.mux.desired();
    if (!this.conflicts.changed(conflicts.map((c) => `${c.podId}:${c.winner}:${c.loser}`).join(','))) return;
    for (const c of conflicts) {
      this.options.emit({
        type: 'ManifestConflict',
        podId: c.podId,
        source: c.loser,
        reason: 'Conflict',
        message: `manifest id "${c.podId}" is given by sources ${c.winner} and ${c.loser}; running the one from ${c.winner}`,
      });
    }
  }
}
