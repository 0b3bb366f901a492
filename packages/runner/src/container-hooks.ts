import { Labels, ignoreNotFound, type ContainerRuntime, type KubeletEvent, type LifecycleHandler, type PlanAction } from '@kubelet-ts/core';
import type { HookRunner } from './hooks.js';

type Emit = (action: PlanAction, type: KubeletEvent['type'], message: string, reason?: string) => void;
type StopAction = Extract<PlanAction, { type: 'kill' | 'remove' }>;

/** The kubelet's least grace a stop keeps after its preStop hook (`minimumGracePeriodInSeconds`). */
const MIN_GRACE_SECONDS = 2;
/** How long a postStart hook may take before it counts as failed: the runtime's own bound on a call. */
export const POST_START_TIMEOUT_MS = 120_000;

/**
 * A container's hooks around the executor's steps, as the kubelet's `killContainer` and
 * `startContainer` run them: preStop before the stop signal, taking from the grace period (the
 * stop keeps what is left, at least 2 s); postStart after the start, and a failure kills the
 * container (`FailedPostStartHook`), leaving what follows to its restart policy.
 */
export class ContainerHooks {
  constructor(
    private readonly runtime: ContainerRuntime,
    private readonly hooks: HookRunner,
    private readonly now: () => number,
    private readonly emit: Emit,
  ) {}

  /** Runs the container's preStop hook (when it has one and a grace period), then stops it with the grace left. */
  async stop(action: StopAction): Promise<void> {
    let grace = action.graceSeconds;
    const hook = parseHook(action.preStop);
    if (hook !== undefined && grace > 0) {
      const started = this.now();
      const podIP = hook.httpGet === undefined ? undefined : await this.podIP(action.podId);
      const failure = await this.hooks.run(hook, { id: action.id, ...(podIP === undefined ? {} : { podIP }) }, grace * 1000);
      if (failure !== undefined)
        this.emit(action, 'ContainerFailed', `preStop hook (${this.hooks.describe(hook)}) failed: ${failure}`, 'FailedPreStopHook');
      grace = Math.max(MIN_GRACE_SECONDS, grace - Math.ceil((this.now() - started) / 1000));
    }
    await ignoreNotFound(this.runtime.stop(action.id, grace));
  }

  /**
   * Runs a started container's postStart hook; true when it succeeded. On failure the container is
   * stopped (its preStop first) and the event says why.
   */
  async postStart(action: Extract<PlanAction, { type: 'create' }>, id: string, hook: LifecycleHandler, podIP?: string): Promise<boolean> {
    const failure = await this.hooks.run(hook, { id, ...(podIP === undefined ? {} : { podIP }) }, POST_START_TIMEOUT_MS);
    if (failure === undefined) return true;
    this.emit(
      action,
      'ContainerFailed',
      `postStart hook (${this.hooks.describe(hook)}) failed: ${failure}; killing it`,
      'FailedPostStartHook',
    );
    const grace = Number(action.spec.labels[Labels.gracePeriod] ?? 30);
    const preStop = action.spec.labels[Labels.preStop];
    await this.stop({
      type: 'kill',
      podId: action.podId,
      container: action.container,
      reason: 'unhealthy',
      id,
      graceSeconds: Number.isFinite(grace) ? grace : 30,
      detail: 'postStart hook failed',
      ...(preStop === undefined ? {} : { preStop }),
    });
    return false;
  }

  private async podIP(podId: string): Promise<string | undefined> {
    const sandboxes = await this.runtime.listSandboxes({ podId }).catch(() => []);
    return sandboxes.find((s) => s.state === 'ready')?.ip;
  }
}

/** The hook a label keeps; undefined for none, or one that cannot be read (an older agent's, a hand-made label). */
function parseHook(json: string | undefined): LifecycleHandler | undefined {
  if (json === undefined) return undefined;
  try {
    const hook = JSON.parse(json) as LifecycleHandler;
    return typeof hook === 'object' && hook !== null ? hook : undefined;
  } catch {
    return undefined;
  }
}
