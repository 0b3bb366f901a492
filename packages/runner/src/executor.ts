import {
  isKubeletError,
  toKubeletError,
  type Clock,
  type ContainerRuntime,
  type EventSink,
  type KubeletEvent,
  type Plan,
  type PlanAction,
  type PodPlan,
} from '@kubelet-ts/core';

export interface ExecutorOptions {
  readonly runtime: ContainerRuntime;
  readonly events: EventSink;
  readonly clock: Clock;
  /** Seconds a container gets to stop before it is killed. */
  readonly stopTimeoutSeconds: number;
  /** Pods acted on at once. */
  readonly concurrency: number;
}

export interface ExecutionResult {
  readonly actions: number;
  readonly failures: number;
}

/**
 * Carries out a plan: pods in parallel (bounded), each pod's actions in order. A failed action is
 * reported as an event and the pass goes on; what it left half-done (a created but not started
 * container) is seen and finished by the next pass.
 */
export class PlanExecutor {
  private readonly pulls = new Map<string, Promise<void>>();

  constructor(private readonly options: ExecutorOptions) {}

  async execute(plan: Plan): Promise<ExecutionResult> {
    let actions = 0;
    let failures = 0;
    const queue = [...plan.pods];
    const worker = async () => {
      for (let pod = queue.shift(); pod !== undefined; pod = queue.shift()) {
        const result = await this.executePod(pod);
        actions += result.actions;
        failures += result.failures;
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.options.concurrency, queue.length) }, worker));
    return { actions, failures };
  }

  private async executePod(pod: PodPlan): Promise<ExecutionResult> {
    let failures = 0;
    for (const action of pod.actions) {
      try {
        await this.act(action);
      } catch (error) {
        failures += 1;
        if (error instanceof PullFailed) continue; // reported once, as ImagePullFailed
        const e = toKubeletError(error, this.options.runtime.name);
        this.emit(action, 'ContainerFailed', `${action.type} failed (${e.code}): ${e.message}`, e.code);
      }
    }
    return { actions: pod.actions.length, failures };
  }

  private async act(action: PlanAction): Promise<void> {
    const { runtime } = this.options;
    switch (action.type) {
      case 'create': {
        await this.ensureImage(action);
        const created = await runtime.create(action.spec);
        this.emit(action, 'ContainerCreated', `created ${created.name} (${action.reason})`);
        await runtime.start(created.id);
        this.emit(action, 'ContainerStarted', `started ${created.name} from ${action.spec.image}`);
        return;
      }
      case 'start':
        await runtime.start(action.id);
        this.emit(action, 'ContainerStarted', `started ${action.id} again (${action.reason})`);
        return;
      case 'remove':
        if (action.running) {
          await ignoreNotFound(runtime.stop(action.id, this.options.stopTimeoutSeconds));
          this.emit(action, 'ContainerStopped', `stopped ${action.id} (${action.reason})`);
        }
        await ignoreNotFound(runtime.remove(action.id, { force: true }));
        this.emit(action, 'ContainerRemoved', `removed ${action.id} (${action.reason})`);
        return;
    }
  }

  /** Pulls a missing image; pods wanting the same image share one pull. */
  private async ensureImage(action: Extract<PlanAction, { type: 'create' }>): Promise<void> {
    const { runtime } = this.options;
    const image = action.spec.image;
    if (await runtime.hasImage(image)) return;
    let pull = this.pulls.get(image);
    if (pull === undefined) {
      pull = runtime.pull(image).finally(() => this.pulls.delete(image));
      this.pulls.set(image, pull);
    }
    try {
      await pull;
      this.emit(action, 'ImagePulled', `pulled ${image}`);
    } catch (error) {
      const e = toKubeletError(error, runtime.name);
      this.emit(action, 'ImagePullFailed', `pull ${image} failed (${e.code}): ${e.message}`, e.code);
      throw new PullFailed(e);
    }
  }

  private emit(action: PlanAction, type: KubeletEvent['type'], message: string, reason: string = action.reason): void {
    this.options.events.emit({ type, time: this.options.clock.now(), podId: action.podId, container: action.container, reason, message });
  }
}

class PullFailed extends Error {
  constructor(override readonly cause: Error) {
    super(cause.message);
  }
}

async function ignoreNotFound(call: Promise<void>): Promise<void> {
  try {
    await call;
  } catch (error) {
    if (!isKubeletError(error, 'NotFound')) throw error;
  }
}
