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
} from '@kubelet-ts/core';
import type { Inbox } from './inbox.js';
import type { KubeletMetrics } from './metrics.js';
import { SourceMux, type DesiredState } from './mux.js';
import { SourceSupervisor } from './supervisor.js';

export interface SourceStatus {
  readonly name: string;
  readonly seen: boolean;
  readonly manifests: number;
  readonly lastError?: string;
}

export interface SourceIntakeOptions {
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
  /** Whether manifests an embedder's source builds itself may bind host paths (see `validateManifest`). */
  readonly allowHostMounts?: boolean;
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

  constructor(private readonly options: SourceIntakeOptions) {
    this.mux = new SourceMux(options.sources.map((s) => s.name));
    this.supervisors = options.sources.map(
      (source) =>
        new SourceSupervisor(
          source,
          {
            update: (manifests) => this.onUpdate(source.name, manifests),
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

  /** Starts every source; resolves once each has had its first start. */
  async start(): Promise<void> {
    for (const s of this.supervisors) s.start();
    await Promise.all(this.supervisors.map((s) => s.started));
  }

  async close(): Promise<void> {
    await Promise.all(this.supervisors.map((s) => s.close()));
  }

  desired(): DesiredState {
    return this.mux.desired();
  }

  /** True once every source has delivered at least once: only then may the agent stop anything. */
  allSeen(): boolean {
    return this.mux.allSeen();
  }

  unseen(): string[] {
    return this.mux.unseen();
  }

  statuses(): SourceStatus[] {
    const desired = this.mux.desired();
    const unseen = new Set(this.mux.unseen());
    return this.supervisors.map(({ source }) => {
      const lastError = this.errors.get(source.name);
      return {
        name: source.name,
        seen: !unseen.has(source.name),
        manifests: desired.pods.filter((p) => p.source === source.name).length,
        ...(lastError === undefined ? {} : { lastError }),
      };
    });
  }

  private onUpdate(source: string, delivered: readonly ContainerManifest[]): void {
    this.options.metrics.sourceUpdates.inc({ source });
    this.errors.delete(source);
    const manifests = this.checked(source, delivered);
    const changed = this.mux.update(source, manifests);
    if (changed) {
      this.options.logger.debug({ source, manifests: manifests.length }, 'source update');
      this.reportConflicts();
    }
    this.options.inbox.post({ type: 'sources-changed', changed });
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
      const result = validateManifest(m, { allowHostMounts: this.options.allowHostMounts === true });
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
