/* The planner's vocabulary: what it is given (PlanInput) and what it says (Plan, PodPlan, PlanAction). */
import type { NodeCapacity, PodRuntimeFields } from './container-env.js';
import type { BackoffPolicy } from './backoff.js';
import type { ResolverConfig } from './dns.js';
import type { ContainerManifest, DesiredPod, LifecycleHandler, PullPolicy } from './manifest.js';
import type { ObjectLookup } from './objects.js';
import type { PodVolumeFiles } from './create-step.js';
import type { PodPullCredentials } from './pull-credentials.js';
import type { ContainerSpec, ContainerSummary } from './runtime.js';
import type { SandboxSpec, SandboxSummary } from './sandbox.js';

/** Why the planner plans an action. */
export type PlanReason =
  | 'new' // desired, no container exists
  | 'spec-changed' // a container exists with another spec hash
  | 'restart' // the container exited and its restart policy says run it again
  | 'not-started' // created but never started (the agent stopped between create and start)
  | 'duplicate' // a second running container for the same manifest container
  | 'gc' // an exited container already replaced by a newer one
  | 'unhealthy' // running, but its liveness probe failed failureThreshold times in a row
  | 'sandbox-changed' // the pod's sandbox is gone, dead, or made with other ports: a new one, new containers
  | 'pod-completed' // a sidecar, once every app container has ended for good
  | 'pod-replaced' // of a pod deleted and made again under its name (another uid): the old one goes first
  | 'deleted' // the pod is marked for deletion (deletionTimestamp): its containers stop, nothing starts
  | 'not-desired'; // no source asks for it any more

/** One runtime step of a plan, for one container or sandbox of one pod, with the reason for it. */
export type PlanAction =
  /** Pull the image as `pullPolicy` says, create the container in the pod's sandbox, start it. */
  | {
      readonly type: 'create';
      readonly podId: string;
      readonly container: string;
      readonly reason: PlanReason;
      readonly spec: ContainerSpec;
      readonly pullPolicy: PullPolicy;
      /**
       * The pod's ready sandbox. Absent only when the pod gets a new one: a `run-sandbox` step
       * earlier in the same pod's plan makes it, and the container goes into that one.
       */
      readonly sandbox?: string;
      /**
       * For a container that reads what only the execution knows, the spec again with it: the IP
       * of a sandbox this plan makes (`readsPodIP`: the executor asks it), and the ConfigMaps and
       * Secrets of its source as they are then (`spec` leaves their variables out). Throws
       * `NotFound` naming a required object or key that is missing: the container waits
       * (`CreateContainerConfigError`) until its source gives it.
       */
      readonly respec?: (fields: PodRuntimeFields) => ContainerSpec;
      /** `respec` needs the IP of the sandbox. */
      readonly readsPodIP?: boolean;
      /**
       * The files of each volume of files the container mounts, by volume name (see
       * `volumeFilesOf`): the executor writes them and binds their directory. Throws `NotFound`
       * as `respec` does.
       */
      readonly volumeFiles?: () => PodVolumeFiles;
      /**
       * For a pod with pull secrets, the credentials they give for the container's image as its
       * source has them then (see `pullCredentialsFor`): the executor pulls with each in turn.
       * Throws `InvalidManifest` when a secret cannot be read.
       */
      readonly pullCredentials?: () => PodPullCredentials;
      /** The container's postStart hook, run once it has started (its port a number; see `withPortNumber`). */
      readonly postStart?: LifecycleHandler;
    }
  /** Run the pod's sandbox; the pod's creates that follow go into it. `container` is `POD`. */
  | {
      readonly type: 'run-sandbox';
      readonly podId: string;
      readonly container: string;
      readonly reason: PlanReason;
      readonly spec: SandboxSpec;
    }
  /** Remove a sandbox (after the containers in it); `volumes` when the pod itself is gone. */
  | {
      readonly type: 'remove-sandbox';
      readonly podId: string;
      readonly container: string;
      readonly reason: PlanReason;
      readonly id: string;
      readonly volumes: boolean;
    }
  /** Start an existing container that was created but never started. */
  | { readonly type: 'start'; readonly podId: string; readonly container: string; readonly reason: PlanReason; readonly id: string }
  /**
   * Stop a running container whose liveness probe failed, and keep it: its restart policy decides
   * what happens next, as for any exit (the kubelet kills unhealthy containers in its pod sync).
   */
  | {
      readonly type: 'kill';
      readonly podId: string;
      readonly container: string;
      readonly reason: PlanReason;
      readonly id: string;
      readonly graceSeconds: number;
      /** The container's preStop hook (`Labels.preStop`, JSON), run before the stop signal within the grace period. */
      readonly preStop?: string;
      /** What the probe last said, for the event. */
      readonly detail: string;
    }
  /** Stop the container if it runs (signal, then kill after `graceSeconds`), then remove it. */
  | {
      readonly type: 'remove';
      readonly podId: string;
      readonly container: string;
      readonly reason: PlanReason;
      readonly id: string;
      readonly running: boolean;
      readonly graceSeconds: number;
      /** The container's preStop hook (`Labels.preStop`, JSON), run before the stop signal within the grace period. */
      readonly preStop?: string;
    };

/** A container that exited and waits out its crash back-off before it is restarted. */
export interface BackOff {
  readonly podId: string;
  readonly container: string;
  /** The exited container, kept for inspection. */
  readonly id: string;
  readonly exitCode?: number;
  /** When the restart may happen (ms since the epoch). */
  readonly until: number;
  readonly delayMs: number;
  /** Restarts so far of this manifest container. */
  readonly restartCount: number;
}

/** The actions for one pod, in the order they must run: removals (concurrently) before the rest. */
export interface PodPlan {
  readonly podId: string;
  readonly actions: readonly PlanAction[];
}

/** What `plan` returns: each pod's actions, the containers held, the back-offs to wait out, and the pods found finished. */
export interface Plan {
  readonly pods: readonly PodPlan[];
  /** Containers that are no longer desired but kept because not every source has been seen yet. */
  readonly held: number;
  /** Exited containers waiting out their back-off; the agent should pass again at the earliest `until`. */
  readonly backOffs: readonly BackOff[];
  /**
   * The desired pods found finished this pass (each container ended for good under its restart
   * policy, or an init container failed under `Never`): hand them back as `PlanInput.finished`.
   */
  readonly finished: readonly ContainerManifest[];
}

/**
 * The kubelet's crash back-off: a first crash restarts at once; the second consecutive short run
 * waits 10 s, each further one twice as long, capped at 300 s.
 */
export const CrashBackOff = {
  initialMs: 10_000,
  maxMs: 300_000,
  /** A container that ran this long before exiting starts the back-off over. */
  resetAfterMs: 600_000,
} as const;

/** What `plan` compares: the desired pods, the runtime's containers and sandboxes as listed, and the node's state. */
export interface PlanInput {
  readonly desired: readonly DesiredPod[];
  /**
   * One runtime `list`; foreign containers and other nodes' containers are ignored. Exited
   * containers need `startedAt`/`finishedAt` for the back-off (the runner inspects them if the
   * runtime's list does not say).
   */
  readonly actual: readonly ContainerSummary[];
  /** This agent's hostname: only containers labelled with it are ours. */
  readonly node: string;
  /**
   * False until every source has delivered once: containers of pods that no source asks for are
   * then kept rather than stopped (the 2014 agent stopped everything when a source was slow).
   */
  readonly allowRemovals: boolean;
  /** The agent's clock, for crash back-off. */
  readonly now: number;
  /** Pods being acted on right now: left out of this plan, so no pod is acted on twice at once. */
  readonly busy?: ReadonlySet<string>;
  /**
   * Running containers (by runtime id) whose liveness probe failed failureThreshold times, with the
   * probe's last word: each is planned a `kill`. Ids that are not running desired containers are ignored.
   */
  readonly unhealthy?: ReadonlyMap<string, string>;
  /**
   * One `listSandboxes`. Every container lives in its pod's sandbox, so the sandbox is planned with
   * the pod: made when missing, replaced (with every container of the pod) when dead or made with
   * other ports, removed when the pod is gone.
   */
  readonly sandboxes: readonly SandboxSummary[];
  /**
   * What a pod takes of the node: its address (`status.hostIP`) and capacity (a limit not set) for
   * containers' env, its resolver (`--resolv-conf`), which a pod's `dnsConfig` adds to, and its
   * seccomp directory.
   */
  readonly podFields?: {
    readonly hostIP?: string;
    readonly nodeCapacity?: NodeCapacity;
    readonly hostDns?: ResolverConfig;
    /** Where a `Localhost` seccomp profile's file is (see `SpecContext.seccompProfileRoot`). */
    readonly seccompProfileRoot?: string;
  };
  /** Overrides the kubelet's crash back-off (tests on a real engine shorten it). */
  readonly crashBackOff?: BackoffPolicy;
  /**
   * Pods that a source of this agent has named, now or before (in this process, or in the last
   * good sets it kept across a restart). A pod that is gone is removed with its volumes only when
   * it is known: one the agent merely does not remember (no record of it survived) loses its
   * containers, never its data. Without it, every gone pod's volumes go.
   */
  readonly known?: ReadonlySet<string>;
  /**
   * Pods found finished before (`Plan.finished`), by their manifest object: a finished pod never
   * runs again, as the kubelet never runs a terminal pod again, even when a container of it has
   * gone (removed by hand). A changed manifest is a new object, and runs.
   */
  readonly finished?: { has(manifest: ContainerManifest): boolean };
  /** The ConfigMaps and Secrets each source gives beside its pods, by source name; a pod reads its own source's. Absent: none. */
  readonly objects?: (source: string) => ObjectLookup | undefined;
}
