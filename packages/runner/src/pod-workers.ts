import type { PodPlan } from '@kubelet-ts/core';
import type { ExecutionResult, PlanExecutor } from './executor.js';
import type { Inbox } from './inbox.js';

export interface PodWorkersOptions {
  /** Where a worker says it has ended (`worker-done`). */
  readonly inbox: Inbox;
  /**
   * After a worker acted, before it ends: looks at what it did (the agent refreshes the pod's
   * entry in its pod cache), so that what the agent shows once `sync()` resolves is what the
   * runtime now runs, and a plan made next sees it. Resolves false when it could not look (it
   * must not reject).
   */
  readonly observe: (podId: string) => Promise<boolean>;
  /**
   * Plans one pod from the newest desired state and what the cache holds of it (the pure planner,
   * for that pod alone); undefined when there is nothing to do.
   */
  readonly planPod: (podId: string) => PodPlan | undefined;
}

/**
 * The only place that acts on pods. One worker per pod with work to do, as the kubelet gives each
 * pod its own (the executor bounds how many start at once; stopping is never bounded). A pod with a
 * worker is busy: passes leave it out, so a pod is never acted on twice at once, and a slow pod (a
 * long pull, a long grace period) never holds up the others or the pass.
 *
 * Like the kubelet's `pod_workers.go`, a worker owns its pod: news that arrives while it acts (a
 * newer desired state, a liveness result: `news`) is kept, and when the worker is done with its
 * plan it looks at what it did and plans the pod again from the newest desired state and the
 * cache, until no news is left. Only then does it end and say so (`worker-done`).
 */
export class PodWorkers {
  private readonly running = new Map<string, Promise<ExecutionResult>>();
  /** Busy pods with news since their worker last planned. */
  private readonly undelivered = new Set<string>();

  constructor(
    private readonly executor: PlanExecutor,
    private readonly options: PodWorkersOptions,
  ) {}

  /** Pods with a worker (acting, or waiting for a slot to start containers). */
  busy(): ReadonlySet<string> {
    return new Set(this.running.keys());
  }

  /**
   * News for a pod (a pass left it out while its worker acted, a liveness result): its worker plans
   * it again when it is done. False when the pod has no worker (it ended meanwhile): the caller
   * must see that the pod is planned.
   */
  news(podId: string): boolean {
    if (!this.running.has(podId)) return false;
    this.undelivered.add(podId);
    return true;
  }

  /** Starts the pod's worker on `pod`; the pod must not be busy. Resolves with what all its plans did. */
  dispatch(pod: PodPlan): Promise<ExecutionResult> {
    if (this.running.has(pod.podId)) throw new Error(`pod ${pod.podId} already has a worker`);
    const work = this.work(pod).finally(() => {
      this.running.delete(pod.podId);
      this.undelivered.delete(pod.podId);
    });
    this.running.set(pod.podId, work);
    return work.then((result) => {
      this.options.inbox.post({ type: 'worker-done', podId: pod.podId, result });
      return result;
    });
  }

  /** Resolves when every worker has finished. */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running.values()]);
  }

  private async work(first: PodPlan): Promise<ExecutionResult> {
    const { podId } = first;
    const total = { actions: 0, failures: 0 };
    let plan: PodPlan | undefined = first;
    while (plan !== undefined) {
      const result = await this.executor.executePod(plan);
      total.actions += result.actions;
      total.failures += result.failures;
      const seen = result.actions === 0 && result.failures === 0 ? true : await this.options.observe(podId);
      if (!this.undelivered.delete(podId)) break;
      // A plan made from what the worker could not see again would redo what it just did (a
      // second container): the loop lists the pod and plans it instead.
      if (!seen) {
        this.options.inbox.post({ type: 'pod-missed', podId });
        break;
      }
      plan = this.options.planPod(podId);
    }
    return total;
  }
}
