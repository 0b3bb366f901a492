import type { Duplex } from 'node:stream';
import type { LogLine, LogReadOptions, LogTextOptions } from './container-logs.js';
import type { StreamOptions, StreamSession } from './container-streams.js';
import type { PodStatus } from './pod-status.js';
import type { ContainerManifest } from './manifest.js';
import type { PlanReport } from './plan-report.js';
import type { EventFilter, RecordedEvent } from './events.js';
import type { ContainerStats, ResourceUsage } from './resource-stats.js';
import type { ContainerDetails, ContainerState } from './runtime.js';

/** A manifest source as the agent sees it (`GET /sources`, `kubelet-ts get sources`). */
export interface SourceView {
  readonly name: string;
  /** It has delivered a set at least once (only then may the agent stop what it no longer lists). */
  readonly seen: boolean;
  /** The manifests of its last set. */
  readonly manifests: number;
  /** Its last problem (an unreadable file, an unreachable backend, a rejected manifest), while it lasts. */
  readonly lastError?: string;
  /** Why it is down (it crashed and waits to be started again); absent while it runs. */
  readonly down?: string;
}

/** An earlier run of a manifest container that ended (the kubelet's `lastState.terminated`). */
export interface EndedRun {
  readonly id: string;
  readonly exitCode?: number;
  readonly startedAt?: number;
  readonly finishedAt?: number;
}

/**
 * Why a container is not running, in the kubelet's words: `ContainerCreating` (none made or
 * started yet), `CrashLoopBackOff` (it exited and waits out its crash back-off),
 * `ErrImagePull` (its image's pull just failed: the engine's words), then `ImagePullBackOff` (once
 * a pass has found that pull's back-off still running, as the kubelet's next sync says it),
 * `CreateContainerConfigError` (a ConfigMap, Secret or key it reads is missing: it waits for it).
 */
export type WaitingReason =
  | 'ContainerCreating'
  | 'PodInitializing'
  | 'CrashLoopBackOff'
  | 'ErrImagePull'
  | 'ImagePullBackOff'
  | 'CreateContainerError'
  | 'CreateContainerConfigError'
  | 'RunContainerError';

/** One container of a desired pod, as the runtime has it now. */
export interface ContainerView {
  readonly name: string;
  readonly image: string;
  /** The engine's name for the image the container ran (`ContainerSummary.imageRef`): its status's `imageID`. */
  readonly imageRef?: string;
  /** `missing` when the runtime has no container for it (yet). */
  readonly state: ContainerState | 'missing';
  readonly id?: string;
  /** The exit code of the container's last run that ended (the running one's predecessor). */
  readonly exitCode?: number;
  readonly startedAt?: number;
  /** When the shown container ended, when it is `exited` and the runtime says. */
  readonly finishedAt?: number;
  /** Restarts of this manifest container so far. */
  readonly restartCount: number;
  /** Set while an exited container waits out its crash back-off. */
  readonly backOff?: { readonly until: number; readonly delayMs: number };
  /** Set while the container's image waits out a failed pull's back-off (nothing is made meanwhile). */
  readonly pullBackOff?: { readonly until: number; readonly message: string; readonly retried?: boolean };
  /** While the engine's refusal to create (`CreateContainerError`) or start (`RunContainerError`) it backs off: until when, and what it said. */
  readonly refused?: { readonly until: number; readonly message: string };
  /** Set when the container does not run and is expected to (not ended for good). */
  readonly waitingReason?: WaitingReason;
  /** The run before the shown one, when one ended. */
  readonly lastRun?: EndedRun;
  /** Running, and its startup probe has succeeded (or it has none). */
  readonly started: boolean;
  /** Started, and its readiness probe passes (or it has none): what the kubelet's `ready` says. */
  readonly ready: boolean;
}

/** One desired manifest, the source it came from, and the actual state of its containers. */
export interface PodView {
  readonly id: string;
  /** The manifest's `uuid`, as a 2014 v1beta1 manifest may give it. */
  readonly uuid?: string;
  readonly source: string;
  /** The manifest's v1 `metadata.namespace`, `labels`, `annotations`, when given. */
  readonly namespace?: string;
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
  /** The pod's IP: its ready sandbox's, as the runtime lists it (`status.podIP`); none in a hostNetwork pod, whose IP is the node's. */
  readonly podIP?: string;
  /** Whether the pod has a ready sandbox (its namespaces made, its network up): the kubelet's `PodReadyToStartContainers`. */
  readonly sandboxReady?: boolean;
  /** The manifest's init containers (sidecars among them), in order, as `containers` shows the app containers; absent without any. */
  readonly initContainers?: readonly ContainerView[];
  readonly containers: readonly ContainerView[];
}

/**
 * The desired pods as the kubelet's `/pods` lists them, before they are rendered as a v1
 * `PodList` (the agent's server does that): each pod's view beside its manifest, and the node.
 */
export interface PodListing {
  /** The agent's hostname: `spec.nodeName`, and part of a derived uid. */
  readonly nodeName: string;
  /** The runtime's name: the scheme of `containerID` (`docker://<id>`). */
  readonly runtime: string;
  /** The node's address, when known: `status.hostIP`, and `podIP` of a hostNetwork pod. */
  readonly hostIP?: string;
  /**
   * In the order of `pods()`. `status` is the pod's in the agent's status model, `statusVersion`
   * its version there (it changes when the status does); without them, a renderer derives the
   * status from the view (`derivePodStatus`), as an embedder's own view may ask.
   */
  readonly pods: readonly {
    readonly view: PodView;
    readonly manifest: ContainerManifest;
    readonly status?: PodStatus;
    readonly statusVersion?: number;
    /** `view` as JSON, when the agent made it already: a renderer that knows a pod by its view need not make it again. */
    readonly viewJson?: string;
  }[];
}

/**
 * Which container's output `AgentView.containerLogs` reads, named as the kubelet's
 * `/containerLogs/{namespace}/{pod}/{container}` names it, and from where.
 */
export interface ContainerLogRequest extends LogReadOptions {
  /** The pod's namespace: a v1 Pod's `metadata.namespace`; `default` for a 2014 manifest or a v1 Pod without one. */
  readonly namespace: string;
  /** The pod's name as `/pods` gives it (`metadata.name`): a 2014 manifest's id, a v1 Pod's name. */
  readonly pod: string;
  /** The manifest container's name. */
  readonly container: string;
  /**
   * The run before the current one (the kubelet's `previous`): the container `/pods` shows as
   * `lastState.terminated`. A restart is a new container, so this is the agent's to find, never the runtime's.
   */
  readonly previous?: boolean | undefined;
}

/** Which container's output `AgentView.containerText` reads, and how it is shown (`LogTextOptions`). */
export interface ContainerTextRequest extends ContainerLogRequest, LogTextOptions {}

/** A pod of this node, named as the kubelet's `/portForward/{namespace}/{pod}` names it. */
export interface PodTarget {
  /** `default` for a 2014 manifest or a v1 Pod without a namespace. */
  readonly namespace: string;
  /** The pod's name as `/pods` gives it. */
  readonly pod: string;
}

/** A container of a pod of this node, named as `/exec/{namespace}/{pod}/{container}` names it. */
export interface ContainerTarget extends PodTarget {
  readonly container: string;
}

/** Whether the agent is healthy (`/healthz`): its sync loop passes, and when it last completed one. */
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
  /** The same with each pod's manifest and the node, for `/pods` to render as a v1 `PodList`. */
  podListing(): Promise<PodListing>;
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
  /**
   * What a container of a desired pod printed (see `ContainerLogSource` for the stream). The
   * container read is the one `/pods` shows: the running one, else the newest that ran; while it
   * waits to be restarted, the run that ended. Rejects with a `KubeletError`: `Unsupported` when the
   * runtime cannot read output, `NotFound` naming what is unknown (the pod, the container in it, a
   * previous run), `Conflict` when the container has not run yet (it waits to start).
   */
  containerLogs(request: ContainerLogRequest): Promise<AsyncIterable<LogLine>>;
  /**
   * The same read as the text a reader shows, in blocks (see `ContainerLogSource.text`): what
   * `/containerLogs` sends. Rejects as `containerLogs`.
   */
  containerText(request: ContainerTextRequest): Promise<AsyncIterable<Uint8Array>>;
  /**
   * Runs `command` in the running container `target` names, streamed (see `ContainerStreaming`).
   * Rejects with a `KubeletError`: `Unsupported` when the runtime cannot stream, `NotFound` naming
   * what is unknown, `Conflict` when the container is not running.
   */
  exec(target: ContainerTarget, command: readonly string[], options: StreamOptions): Promise<StreamSession>;
  /** Attaches to the main process of the running container `target` names; rejects as `exec`. */
  attach(target: ContainerTarget, options: StreamOptions): Promise<StreamSession>;
  /**
   * A connection to `port` on the loopback address of the pod's network namespace. Rejects with
   * `Unsupported`, `NotFound` (the pod, or its sandbox is not running), `Unavailable` (nothing listens).
   */
  portForward(target: PodTarget, port: number): Promise<Duplex>;
  /** Unhealthy when the sync loop has not completed a pass for too long. */
  health(): HealthView;
  /** What a pass would do now, without doing it. */
  plan(): Promise<PlanReport>;
  /** Prometheus text exposition of the agent's metrics. */
  metrics(): Promise<{ readonly contentType: string; readonly body: string }>;
  /**
   * What the node and each running pod use, from the agent's last housekeeping pass (it samples on
   * its own schedule): a read never calls the engine. `usageNanoCores` is the rate between the
   * last two passes.
   */
  resourceUsage(): ResourceUsage;
  /** Each manifest source, in priority order: whether it has delivered, how many manifests, its last problem. */
  sources(): readonly SourceView[];
  /** The node's name (the agent's hostname): `spec.nodeName`, an event's `source.host`. */
  readonly nodeName: string;
  /** The agent's recent events (bounded by count and age, identical ones folded), oldest first. */
  recentEvents(filter?: EventFilter): readonly RecordedEvent[];
  /** Hears every event recorded from now on (folds included) until the returned function is called. */
  watchEvents(listener: (event: RecordedEvent) => void): () => void;
  /**
   * Hears that what `pods()` shows may have changed (after each pass, and each event the agent
   * records), until the returned function is called; the listener reads again to see what did.
   */
  watchChanges(listener: () => void): () => void;
  /** Prometheus text exposition of the probes' results and durations (`/metrics/probes`). */
  probeMetrics(): Promise<{ readonly contentType: string; readonly body: string }>;
}
