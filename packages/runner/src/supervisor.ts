import {
  Backoff,
  toKubeletError,
  type Clock,
  type ContainerManifest,
  type KubeletError,
  type ManifestSource,
  type SourceObject,
  type SourceWarning,
  type TimerHandle,
} from '@kubelet-ts/core';

export interface SupervisorHandlers {
  /** The source's checkpointed set, handed to it on each start (see `SourceSink.restored`). */
  restored(): readonly ContainerManifest[] | undefined;
  update(manifests: readonly ContainerManifest[], objects?: readonly SourceObject[]): void;
  error(error: KubeletError): void;
  /** The source crashed and will be started again after `delayMs`. */
  restarting(error: KubeletError, delayMs: number): void;
  /** A valid manifest uses something to change (a deprecated 2014 spelling). */
  warning(warning: SourceWarning): void;
}

export interface SourceSupervisorOptions {
  readonly clock: Clock;
  /** First restart delay; doubles per crash up to `maxBackoffMs`, and resets on a good delivery. */
  readonly initialBackoffMs?: number | undefined;
  readonly maxBackoffMs?: number | undefined;
}

/**
 * Runs one source "forever", as the 2014 agent did: a source whose `start` rejects, or that reports
 * a fatal error, is closed and started again after a back-off. The others are not affected, and
 * the source's last delivered set stays in force meanwhile (the mux keeps it).
 */
export class SourceSupervisor {
  private readonly backoff: Backoff;
  private generation = 0;
  private timer: TimerHandle | undefined;
  private closed = false;
  private running: Promise<void> = Promise.resolve();
  /** Why the source is not running (it crashed, and waits to be started again); undefined while it runs. */
  private crashed: KubeletError | undefined;

  constructor(
    readonly source: ManifestSource,
    private readonly handlers: SupervisorHandlers,
    private readonly options: SourceSupervisorOptions,
  ) {
    this.backoff = new Backoff(options.initialBackoffMs ?? 1000, options.maxBackoffMs ?? 60_000);
  }

  start(): void {
    this.running = this.run();
  }

  /** Why the source is down (crashed, waiting for its restart), or undefined while it runs. */
  get down(): KubeletError | undefined {
    return this.crashed;
  }

  /** Resolves once the source has started (or crashed); it never rejects. */
  get started(): Promise<void> {
    return this.running;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.generation += 1;
    if (this.timer !== undefined) this.options.clock.clearTimeout(this.timer);
    await this.running;
    await this.source.close().catch(() => {});
  }

  private async run(): Promise<void> {
    const generation = ++this.generation;
    const live = () => generation === this.generation && !this.closed;
    const restored = this.handlers.restored();
    try {
      await this.source.start({
        ...(restored === undefined ? {} : { restored }),
        update: (manifests, objects) => {
          if (!live()) return;
          this.backoff.reset();
          this.handlers.update(manifests, objects);
        },
        warning: (warning) => {
          if (live()) this.handlers.warning(warning);
        },
        error: (error, options) => {
          if (!live()) return;
          if (options?.fatal === true) void this.crash(generation, error);
          else this.handlers.error(toKubeletError(error, this.source.name));
        },
      });
      if (live()) this.crashed = undefined;
    } catch (error) {
      await this.crash(generation, error);
    }
  }

  private async crash(generation: number, cause: unknown): Promise<void> {
    if (generation !== this.generation || this.closed) return;
    this.generation += 1; // silences the crashed instance's sink
    const delay = this.backoff.next();
    this.crashed = toKubeletError(cause, this.source.name);
    this.handlers.restarting(this.crashed, delay);
    await this.source.close().catch(() => {});
    if (this.closed) return;
    this.timer = this.options.clock.setTimeout(() => {
      this.timer = undefined;
      if (!this.closed) this.running = this.run();
    }, delay);
  }
}
