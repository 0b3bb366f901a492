import type { PodPlan } from '@kubelet-ts/core';
import type { ExecutionResult, PlanExecutor } from './executor.js';

/**
 * One worker per pod with work to do, at most `concurrency` acting at once. A pod with a worker is
 * busy: the planner leaves it out until its worker finishes, so a pod is never acted on twice at
 * once, and a slow pod (a long pull, a long grace period) never holds up the others or the pass.
 */
export class PodWorkers {
  private readonly running = new Map<string, Promise<ExecutionResult>>();
  private readonly waiting: Array<() => void> = [];
  private active = 0;

  constructor(
    private readonly executor: PlanExecutor,
    private readonly concurrency: number,
  ) {}

  /** Pods with a worker (acting, or queued for a slot). */
  busy(): ReadonlySet<string> {
    return new Set(this.running.keys());
  }

  /** Starts the pod's worker; the pod must not be busy. */
  dispatch(pod: PodPlan): Promise<ExecutionResult> {
    if (this.running.has(pod.podId)) throw new Error(`pod ${pod.podId} already has a worker`);
    const work = this.run(pod).finally(() => this.running.delete(pod.podId));
    this.running.set(pod.podId, work);
    return work;
  }

  /** Resolves when every worker has finished. */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running.values()]);
  }

  private async run(pod: PodPlan): Promise<ExecutionResult> {
    if (this.active >= this.concurrency) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.active += 1;
    try {
      return await this.executor.executePod(pod);
    } finally {
      this.active -= 1;
      this.waiting.shift()?.();
    }
  }
}
