import type { PodPlan } from '@kubelet-ts/core';
import type { ExecutionResult, PlanExecutor } from './executor.js';

/**
 * The only place that acts on pods. One worker per pod with work to do, as the kubelet gives each
 * pod its own (the executor bounds how many start at once; stopping is never bounded). A pod with a
 * worker is busy: passes leave it out until its worker finishes, so a pod is never acted on twice
 * at once, and a slow pod (a long pull, a long grace period) never holds up the others or the pass.
 *
 * Like the kubelet's `pod_workers.go`, which keeps the latest undelivered update of a busy pod, the
 * workers remember, per busy pod, whether a newer desired state arrived after its worker was sent
 * (`deferred`): when that worker ends, `onSettled` says to look at the pod again at once. When
 * nothing newer arrived, the worker is already doing what a pass would ask, and no pass is asked.
 *
 * @typeParam V the version of the desired state a worker was planned from (compared by identity).
 */
export class PodWorkers<V = unknown> {
  private readonly running = new Map<string, Promise<ExecutionResult>>();
  /** The desired-state version each busy pod's worker was planned from. */
  private readonly plannedFrom = new Map<string, V>();
  /** Busy pods for which a newer version was seen: look again when their worker ends. */
  private readonly undelivered = new Set<string>();

  constructor(
    private readonly executor: PlanExecutor,
    /** Called when a pod's worker ends; `lookAgain` when a newer desired state waits for that pod. */
    private readonly onSettled: (podId: string, result: ExecutionResult, lookAgain: boolean) => void = () => {},
    /**
     * After a worker acted, before it ends: looks at what it did (the agent refreshes the pod's
     * entry in its pod cache), so that what the agent shows once `sync()` resolves is what the
     * runtime now runs. Must not reject.
     */
    private readonly observe: (podId: string) => Promise<void> = async () => {},
  ) {}

  /** Pods with a worker (acting, or waiting for a slot to start containers). */
  busy(): ReadonlySet<string> {
    return new Set(this.running.keys());
  }

  /**
   * A pass planned from `version` left the `busy` pods out. Records, for each whose worker was
   * planned from an older version, that an update waits. Returns true when one of them has no
   * worker any more (it ended while the pass listed the runtime): the caller should pass again.
   */
  deferred(busy: ReadonlySet<string>, version: V): boolean {
    let ended = false;
    for (const id of busy) {
      if (!this.plannedFrom.has(id)) ended = true;
      else if (this.plannedFrom.get(id) !== version) this.undelivered.add(id);
    }
    return ended;
  }

  /**
   * News for one pod that no desired-state version carries (a liveness result): a busy pod is
   * looked at again as soon as its worker ends, rather than at the next period.
   */
  update(podId: string): void {
    if (this.running.has(podId)) this.undelivered.add(podId);
  }

  /** Starts the pod's worker, planned from `version`; the pod must not be busy. */
  dispatch(pod: PodPlan, version: V): Promise<ExecutionResult> {
    if (this.running.has(pod.podId)) throw new Error(`pod ${pod.podId} already has a worker`);
    this.plannedFrom.set(pod.podId, version);
    const work = this.executor
      .executePod(pod)
      .then(async (result) => {
        if (result.actions > 0 || result.failures > 0) await this.observe(pod.podId);
        return result;
      })
      .finally(() => this.running.delete(pod.podId));
    this.running.set(pod.podId, work);
    return work.then((result) => {
      this.plannedFrom.delete(pod.podId);
      this.onSettled(pod.podId, result, this.undelivered.delete(pod.podId));
      return result;
    });
  }

  /** Resolves when every worker has finished. */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running.values()]);
  }
}
