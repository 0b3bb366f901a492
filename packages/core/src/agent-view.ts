import type { PlanReport } from './plan-report.js';
import type { ContainerDetails, ContainerState, ContainerStats } from './runtime.js';

/** One container of a desired pod, as the runtime has it now. */
export interface ContainerView {
  readonly name: string;
  readonly image: string;
  /** `missing` when the runtime has no container for it (yet). */
  readonly state: ContainerState | 'missing';
  readonly id?: string;
  /** The exit code of the container's last run that ended (the running one's predecessor). */
  readonly exitCode?: number;
  readonly startedAt?: number;
  /** Restarts of this manifest container so far. */
  readonly restartCount: number;
  /** Set while an exited container waits out its crash back-off. */
  readonly backOff?: { readonly until: number; readonly delayMs: number };
}

/** One desired manifest, the source it came from, and the actual state of its containers. */
export interface PodView {
  readonly id: string;
  /** The manifest's `uuid`, as a 2014 v1beta1 manifest may give it. */
  readonly uuid?: string;
  readonly source: string;
  readonly containers: readonly ContainerView[];
}

export interface HealthView {
  readonly healthy: boolean;
  /** When the last sync pass completed (ms since the epoch), if one has. */
  readonly lastPassAt?: number;
  readonly message: string;
}

/**
 * What the agent shows of itself to read-only surfaces (the agent's HTTP server), without
 * those surfaces depending on the runner.
 */
export interface AgentView {
  /** Each desired manifest with its source and its containers' actual state. */
  pods(): Promise<PodView[]>;
  /**
   * The runtime's inspect data for a container the agent manages on this node, found by its
   * runtime name, its id, or `<manifest id>/<container name>`; `undefined` for anything else,
   * foreign containers included.
   */
  containerInfo(name: string): Promise<ContainerDetails | undefined>;
  /**
   * What a container this agent manages uses now (found as by `containerInfo`); `undefined` for
   * any other container. Rejects with a `KubeletError` when the runtime gives no figures.
   */
  stats(name: string): Promise<ContainerStats | undefined>;
  /** Unhealthy when the sync loop has not completed a pass for too long. */
  health(): HealthView;
  /** What a pass would do now, without doing it. */
  plan(): Promise<PlanReport>;
  /** Prometheus text exposition of the agent's metrics. */
  metrics(): Promise<{ readonly contentType: string; readonly body: string }>;
}
