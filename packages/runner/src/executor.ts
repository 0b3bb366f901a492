import {
  KubeletError,
  Labels,
  CrashBackOff,
  ignoreNotFound,
  toKubeletError,
  type BackoffPolicy,
  type Clock,
  type ContainerRuntime,
  type EventSink,
  type KubeletEvent,
  type PlanAction,
  type PodPlan,
  type PodRuntimeFields,
  type PodVolumeFiles,
  type ContainerSpec,
  type Mount,
} from '@kubelet-ts/core';
import { FailureBackoff } from './failure-backoff.js';
import { prepareHostPaths } from './host-path.js';
import type { StartSlots } from './slots.js';
import type { PodFiles } from './pod-files.js';
import { ContainerHooks } from './container-hooks.js';
import type { HookRunner } from './hooks.js';

/**
 * How long a failed pull says `ErrImagePull` before `ImagePullBackOff`: the kubelet's
 * `workerBackOffPeriod`, after which its pod worker syncs a pod whose sync failed again.
 */
export const ERR_IMAGE_PULL_MS = 10_000;

export interface ExecutorOptions {
  readonly runtime: ContainerRuntime;
  readonly events: EventSink;
  readonly clock: Clock;
  /** Back-off after a failed pull of an image: initial delay, doubling to the cap. Default 10 s → 300 s. */
  readonly pullBackoff?: BackoffPolicy;
  /**
   * Back-off per pod container after the engine refused to start it (a host port in use, say):
   * the container is not created again before it ends. Default 10 s → 300 s, as for crashes.
   */
  readonly startBackoff?: BackoffPolicy;
  /**
   * Bounds the pods that pull, create and start at once (the engine's work). Stopping never waits
   * for a slot: a pod stopping with a long grace period must not hold up pods that start.
   * Default: unbounded.
   */
  readonly startSlots?: StartSlots;
  /** Where the volumes of files are written (see `PodFiles`). */
  readonly files?: PodFiles;
  /** Runs containers' lifecycle hooks; without it, none runs. */
  readonly hooks?: HookRunner;
}

export interface ExecutionResult {
  readonly actions: number;
  readonly failures: number;
}

type CreateAction = Extract<PlanAction, { type: 'create' }>;

/**
 * Carries out one pod's plan: its removals at once (removing a manifest stops its containers
 * concurrently, each with its grace period), then its other actions in order. A failed action is
 * reported as an event and the rest go on, except the replacement of a container whose old version
 * still runs; what a failure left half-done (a created but not started container) is seen and
 * finished by a later pass.
 */
/** Why the engine refused a container, in the kubelet's words. */
export type RefusalReason = 'CreateContainerError' | 'RunContainerError' | 'CreateContainerConfigError';

export class PlanExecutor {
  private readonly pulls: FailureBackoff;
  /** Per pod container: the engine refused to start what was created for it. */
  private readonly starts: FailureBackoff;
  /**
   * Per pod container: what it reads is missing (a ConfigMap, a Secret or a key of one). No
   * back-off: it is tried again on every pass, so it starts as soon as its source gives it.
   */
  private readonly configWaits = new Map<string, string>();
  private readonly hooks: ContainerHooks | undefined;

  constructor(private readonly options: ExecutorOptions) {
    this.hooks =
      options.hooks === undefined
        ? undefined
        : new ContainerHooks(
            options.runtime,
            options.hooks,
            () => options.clock.now(),
            (a, t, m, r) => this.emit(a, t, m, r),
          );
    this.pulls = new FailureBackoff(options.pullBackoff ?? CrashBackOff);
    this.starts = new FailureBackoff(options.startBackoff ?? CrashBackOff);
  }

  /**
   * While a container the engine refused to create or start waits out its back-off: until when,
   * why (`CreateContainerError`, `RunContainerError`) and what the engine said (`/pods` shows it).
   */
  refusedBackOff(
    podId: string,
    container: string,
  ): { readonly until: number; readonly reason: RefusalReason; readonly message: string } | undefined {
    const key = `${podId}/${container}`;
    const config = this.configWaits.get(key);
    if (config !== undefined) return { until: this.options.clock.now(), reason: 'CreateContainerConfigError', message: config };
    const waiting = this.starts.peek(key, this.options.clock.now());
    if (waiting === undefined) return undefined;
    const [reason, message] = (waiting.detail ?? 'RunContainerError\tthe engine refused it').split('\t') as [RefusalReason, string];
    return { until: waiting.until, reason, message };
  }

  /**
   * While `image`'s failed pull waits out its back-off (for pod `podId`, whose pull secrets give it
   * a back-off of its own): until when, and what the pull said (`/pods` shows it).
   */
  pullBackOff(image: string, podId?: string): { readonly until: number; readonly message: string; readonly retried: boolean } | undefined {
    const now = this.options.clock.now();
    // ErrImagePull stays for the kubelet's pod-worker back-off (its next sync after a failed one
    // comes 10 s later), so a status written in between says it; then ImagePullBackOff.
    const held = ERR_IMAGE_PULL_MS;
    const waiting =
      (podId === undefined ? undefined : this.pulls.peek(podPullKey(podId, image), now, held)) ?? this.pulls.peek(image, now, held);
    return waiting === undefined
      ? undefined
      : { until: waiting.until, message: waiting.detail ?? 'the pull failed', retried: waiting.heldBack };
  }

  async executePod(pod: PodPlan): Promise<ExecutionResult> {
    // Removals, and the stops of a pod being deleted, run at once: each within its grace, not one after another.
    const together = (a: PlanAction) => a.type === 'remove' || (a.type === 'kill' && a.reason === 'deleted');
    const removals = pod.actions.filter(together);
    const others = pod.actions.filter((a) => !together(a));
    const outcomes = await Promise.all(removals.map((a) => this.attempt(a)));
    // A container whose running old version could not be stopped is not replaced yet: starting the
    // new one beside it would run two versions at once (the 2014 kubelet skipped it the same way).
    // The next pass tries the stop again.
    const stuck = new Set(removals.filter((a, i) => a.type === 'remove' && a.running && !outcomes[i]).map((a) => a.container));
    const starts = others.some((a) => a.type === 'create' || a.type === 'start' || a.type === 'run-sandbox');
    const release = starts ? await this.options.startSlots?.acquire() : undefined;
    // The sandbox this plan runs, for the creates after it. When it cannot run (or a container of
    // the old one would not stop), no container is created: the next pass plans the pod again.
    const progress: PodProgress = { sandbox: undefined, sandboxFailed: stuck.size > 0 && others.some((a) => a.type === 'run-sandbox') };
    try {
      for (const action of others)
        outcomes.push(stuck.has(action.container) || blocked(action, progress) ? false : await this.attempt(action, progress));
    } finally {
      release?.();
    }
    return { actions: pod.actions.length, failures: outcomes.filter((ok) => !ok).length };
  }

  /** Runs one action; false (and an event, once) when it failed. */
  private async attempt(action: PlanAction, progress?: PodProgress): Promise<boolean> {
    try {
      await this.act(action, progress);
      return true;
    } catch (error) {
      if (action.type === 'run-sandbox' && progress !== undefined) progress.sandboxFailed = true;
      if (!(error instanceof AlreadyReported)) {
        const e = toKubeletError(error, this.options.runtime.name);
        this.emit(action, 'ContainerFailed', `${action.type} failed (${e.code}): ${e.message}`, e.code);
      }
      return false;
    }
  }

  private async act(action: PlanAction, progress?: PodProgress): Promise<void> {
    const { runtime } = this.options;
    switch (action.type) {
      case 'run-sandbox': {
        const sandbox = await runtime.runSandbox(action.spec);
        if (progress !== undefined) progress.sandbox = sandbox.id;
        this.emit(action, 'SandboxCreated', `ran sandbox ${sandbox.name} (${action.reason}; ${action.spec.ports.length} port(s))`);
        return;
      }
      case 'remove-sandbox': {
        await runtime.removeSandbox(action.id, { volumes: action.volumes });
        if (action.volumes) {
          await this.options.files?.remove(action.podId);
          for (const key of this.configWaits.keys()) if (key.startsWith(`${action.podId}/`)) this.configWaits.delete(key);
        }
        // A pod gone because the agent has no record of it keeps its data (see `PlanInput.known`).
        const forgotten = action.reason === 'not-desired' && !action.volumes;
        const volumes = action.volumes
          ? '; and the pod volumes'
          : forgotten
            ? `; pod volumes kept: the agent has no record of pod ${action.podId} (no source of it named it: its checkpoint was lost, or its source is no longer configured), so its data stays on the host until removed by hand`
            : '';
        this.emit(action, 'SandboxRemoved', `removed sandbox ${action.id} (${action.reason}${volumes})`);
        return;
      }
      case 'create': {
        const key = `${action.podId}/${action.container}`;
        const waiting = this.starts.waiting(key, this.options.clock.now());
        if (waiting !== undefined) {
          if (waiting.first) {
            const refused = this.refusedBackOff(action.podId, action.container);
            const what = refused?.reason === 'CreateContainerError' ? 'create' : 'start';
            this.emit(
              action,
              'BackOff',
              `back-off ${waiting.leftMs} ms creating ${action.container}: the engine refused to ${what} it last time`,
              refused?.reason ?? 'RunContainerError',
            );
          }
          throw new AlreadyReported();
        }
        // Its pod's ready sandbox, or the one the pod's run-sandbox step just made: the planner
        // gives every create one or the other, and a container is never made outside a sandbox.
        const sandbox = action.sandbox ?? progress?.sandbox;
        if (sandbox === undefined)
          throw new KubeletError(
            'Internal',
            `create ${action.container}: the plan gives it no sandbox (none ready, and no run-sandbox step before it)`,
          );
        // Refused (the engine answered no: a 1-byte memory limit, ENOSPC, a hostPath of the wrong
        // type) is created again only after a back-off, as a refused start is (issue 27).
        const since = this.starts.snapshot(key);
        // Host paths are checked (v1 hostPath: made, for the …OrCreate types) on the host first, as the
        // kubelet does, and one that leads to the host's root through a link is refused; a failure
        // names the volume and path. (Only then awaited: a pod without them takes no extra turn on
        // its way to the engine.)
        if (action.spec.mounts.some((m) => m.hostPath !== undefined))
          await prepareHostPaths(action.spec.mounts).catch((error: unknown) => this.refused(key, since, error));
        const { spec: resolved, files } = await this.resolve(action, sandbox, key);
        const spec = files === undefined ? resolved : { ...resolved, mounts: await this.mountFiles(action, resolved, files, since) };
        await this.ensureImage(action);
        const created = await runtime.create(spec, sandbox).catch((error: unknown) => this.refused(key, since, error));
        this.emit(action, 'ContainerCreated', `created ${created.name} (${action.reason})`);
        await this.startOrDiscard(created.id, key);
        this.emit(action, 'ContainerStarted', `started ${created.name} from ${action.spec.image}`);
        const postStart = action.postStart;
        if (postStart !== undefined && this.hooks !== undefined) {
          const podIP = postStart.httpGet === undefined ? undefined : (await this.sandboxFields(action.podId, sandbox)).podIP;
          if (!(await this.hooks.postStart(action, created.id, postStart, podIP))) throw new AlreadyReported();
        }
        if (action.reason === 'restart') {
          const count = action.spec.labels[Labels.restartCount] ?? '?';
          this.emit(action, 'ContainerRestarted', `restarted ${action.container} (restart ${count})`);
        }
        return;
      }
      case 'start':
        await this.startOrDiscard(action.id);
        this.emit(action, 'ContainerStarted', `started ${action.id} (${action.reason})`);
        return;
      case 'kill':
        // The prober only recorded the failures; the pod's worker acts on them, so a pod is never
        // acted on twice at once. A kill that fails is planned again by the next pass.
        if (action.reason === 'pod-completed') this.emit(action, 'ContainerKilled', `${action.detail}; stopping it`, 'Completed');
        else if (action.reason === 'deleted')
          this.emit(
            action,
            'ContainerKilled',
            `${action.detail}; stopping ${action.container} (grace ${action.graceSeconds} s)`,
            'Killing',
          );
        else this.emit(action, 'ContainerKilled', `${action.detail}; killing it (restart policy decides what next)`, 'Liveness');
        await this.stop(action);
        return;
      case 'remove':
        if (action.running) {
          await this.stop(action);
          this.emit(action, 'ContainerStopped', `stopped ${action.id} (${action.reason}; grace ${action.graceSeconds} s)`);
        }
        await ignoreNotFound(runtime.remove(action.id, { force: true }));
        this.emit(action, 'ContainerRemoved', `removed ${action.id} (${action.reason})`);
        return;
    }
  }

  /**
   * The spec with what only the execution knows (the IP of a sandbox this plan made, the ConfigMaps
   * and Secrets of the pod's source as they are now), and the files of its volumes. A missing
   * object or key holds the container back (`CreateContainerConfigError`, said once per change)
   * until a pass finds it, as the kubelet holds it.
   */
  private async resolve(action: CreateAction, sandbox: string, key: string): Promise<{ spec: ContainerSpec; files?: PodVolumeFiles }> {
    const fields = action.readsPodIP === true ? await this.sandboxFields(action.podId, sandbox) : {};
    try {
      const spec = action.respec === undefined ? action.spec : action.respec(fields);
      const files = action.volumeFiles?.();
      this.configWaits.delete(key);
      return files === undefined ? { spec } : { spec, files };
    } catch (error) {
      const message = (error as Error).message;
      if (this.configWaits.get(key) !== message) this.emit(action, 'ContainerFailed', message, 'CreateContainerConfigError');
      this.configWaits.set(key, message);
      throw new AlreadyReported();
    }
  }

  /** Writes the files of the container's volumes of files and binds each from its directory; a failure is a refused create. */
  private async mountFiles(action: CreateAction, spec: ContainerSpec, files: PodVolumeFiles, since: object | undefined): Promise<Mount[]> {
    const key = `${action.podId}/${action.container}`;
    const writer = this.options.files;
    if (writer === undefined)
      return this.refused(key, since, new KubeletError('Unsupported', 'this executor writes no volume files (ExecutorOptions.files)'));
    return writer.mount(action.podId, spec.mounts, files).catch((error: unknown) => this.refused(key, since, error));
  }

  /** Stops a running container, after its preStop hook (see `ContainerHooks.stop`). */
  private async stop(action: Extract<PlanAction, { type: 'kill' | 'remove' }>): Promise<void> {
    if (this.hooks === undefined || action.preStop === undefined)
      return ignoreNotFound(this.options.runtime.stop(action.id, action.graceSeconds));
    return this.hooks.stop(action);
  }

  /** What only the running sandbox tells of its pod: its IP, as the runtime lists it. */
  private async sandboxFields(podId: string, sandbox: string): Promise<PodRuntimeFields> {
    const listed = await this.options.runtime.listSandboxes({ podId });
    const ip = listed.find((s) => s.id === sandbox)?.ip;
    return ip === undefined ? {} : { podIP: ip };
  }

  /**
   * Records a refused create (a hostPath check or the engine said no) for the container's back-off,
   * then rethrows. An engine that did not answer (`Unavailable`, `Timeout`) may be restarting: the
   * next pass tries at once.
   */
  private refused(key: string, since: object | undefined, error: unknown): never {
    const e = toKubeletError(error, this.options.runtime.name);
    if (e.code !== 'Unavailable' && e.code !== 'Timeout')
      this.starts.failed(key, this.options.clock.now(), since, `CreateContainerError\t${e.message}`);
    throw error;
  }

  /**
   * Starts a created container. When the engine refuses (it answered, and said no), the container
   * is removed so the next pass creates it afresh: a container that failed to start is a failed
   * container, as in the kubelet, and what made it fail may be fixed only by a new one (a pod
   * namespace the engine lost while it restarted). Left in place, it would be started again, and
   * refused again, on every pass. An engine that did not answer may simply be restarting: the
   * container stays, and the next pass starts it.
   */
  private async startOrDiscard(id: string, key?: string): Promise<void> {
    const { runtime } = this.options;
    try {
      await runtime.start(id);
      if (key !== undefined) this.starts.succeeded(key);
    } catch (error) {
      const e = toKubeletError(error, runtime.name);
      if (e.code === 'Unavailable' || e.code === 'Timeout') throw e;
      // Created afresh only after a back-off, as a crash is restarted: a pod that can never start
      // must not be created and removed on every pass.
      if (key !== undefined)
        this.starts.failed(key, this.options.clock.now(), this.starts.snapshot(key), `RunContainerError\t${e.message}`);
      const removed = await runtime.remove(id, { force: true }).then(
        () => true,
        () => false,
      );
      throw new KubeletError(e.code, `${e.message}${removed ? '; removed the container, to create it afresh' : ''}`, {
        adapter: runtime.name,
        cause: error,
      });
    }
  }

  /**
   * Applies the pull policy. A failed pull backs off per image (10 s doubling to 300 s) so a missing
   * image neither hammers the registry nor blocks other pods; a pod with pull secrets backs off on
   * its own (its image per pod, as the kubelet keys every back-off), so that its wrong credentials
   * hold back no other pod's pull, nor another's missing ones its right ones. Pods wanting one
   * image at once share one transfer: the image service's contract requires it of `pull` (with
   * the same credentials), so the executor keeps no copy of it.
   */
  private async ensureImage(action: CreateAction): Promise<void> {
    const { runtime, clock } = this.options;
    const image = action.spec.image;
    if (action.pullPolicy !== 'Always' && (await runtime.images.hasImage(image))) return;
    if (action.pullPolicy === 'Never') {
      this.emit(action, 'ImagePullFailed', `image ${image} is not present and imagePullPolicy is Never`, 'ErrImageNeverPull');
      throw new AlreadyReported();
    }
    const key = action.pullCredentials === undefined ? image : podPullKey(action.podId, image);
    const waiting = this.pulls.waiting(key, clock.now());
    if (waiting !== undefined) {
      if (waiting.first) this.emit(action, 'BackOff', `back-off pulling ${image}: next try in ${waiting.leftMs} ms`, 'ImagePullBackOff');
      throw new AlreadyReported();
    }
    // Concurrent waiters of one failed pull count it once.
    const since = this.pulls.snapshot(key);
    try {
      await this.pullWithSecrets(action, image);
      this.pulls.succeeded(key);
      this.emit(action, 'ImagePulled', `pulled ${image}`);
    } catch (error) {
      const e = toKubeletError(error, runtime.name);
      const delay = this.pulls.failed(key, clock.now(), since, `${e.code}: ${e.message}`);
      this.emit(action, 'ImagePullFailed', `pull ${image} failed (${e.code}): ${e.message}; next try in ${delay} ms`, e.code);
      throw new AlreadyReported();
    }
  }

  /**
   * Pulls `image` as the kubelet's runtime manager does (`kuberuntime_image.go`): with each of the
   * pod's credentials for it in turn until one succeeds, else fails with every failure said (the
   * last one's code); without any, as the engine would alone. A pull secret its source does not
   * give is no error: the pull goes ahead, and when it fails that is said too
   * (`FailedToRetrieveImagePullSecret`, as the kubelet's event). A secret that cannot be read
   * fails the pull without trying it. No password or `auth` reaches a message: credentials are
   * named by their `source`.
   */
  private async pullWithSecrets(action: CreateAction, image: string): Promise<void> {
    const { images } = this.options.runtime;
    const { credentials, missing } = action.pullCredentials?.() ?? { credentials: [], missing: [] };
    try {
      if (credentials.length === 0) return await images.pull(image);
      const failures: KubeletError[] = [];
      for (const credential of credentials) {
        try {
          return await images.pull(image, credential);
        } catch (error) {
          const e = toKubeletError(error, this.options.runtime.name);
          if (e.code === 'Unavailable' || e.code === 'Timeout') throw e; // the engine or registry, not these credentials
          failures.push(new KubeletError(e.code, `${e.message} (with ${credential.source})`, { adapter: e.adapter, cause: e }));
        }
      }
      const last = failures[failures.length - 1]!;
      throw failures.length === 1
        ? last
        : new KubeletError(last.code, `[${failures.map((f) => f.message).join(', ')}]`, { adapter: last.adapter, cause: last });
    } catch (error) {
      if (missing.length > 0)
        this.emit(
          action,
          'ImagePullFailed',
          `Unable to retrieve some image pull secrets (${missing.join(', ')}); attempting to pull the image may not succeed.`,
          'FailedToRetrieveImagePullSecret',
        );
      throw error;
    }
  }

  private emit(action: PlanAction, type: KubeletEvent['type'], message: string, reason: string = action.reason): void {
    this.options.events.emit({ type, time: this.options.clock.now(), podId: action.podId, container: action.container, reason, message });
  }
}

/** What a pod's plan has done so far that later steps depend on. */
interface PodProgress {
  sandbox: string | undefined;
  sandboxFailed: boolean;
}

/** A create whose new sandbox could not be made is not tried (it would fail, or land outside the pod). */
function blocked(action: PlanAction, progress: PodProgress): boolean {
  return (action.type === 'run-sandbox' || (action.type === 'create' && action.sandbox === undefined)) && progress.sandboxFailed;
}

/** The back-off key of a pull by a pod with pull secrets: its own, apart from the image's. */
function podPullKey(podId: string, image: string): string {
  return `${podId}\0${image}`;
}

/** A failure already reported by its own event (a pull), not to be reported again as ContainerFailed. */
class AlreadyReported extends KubeletError {
  constructor() {
    super('Unavailable', 'already reported');
  }
}
