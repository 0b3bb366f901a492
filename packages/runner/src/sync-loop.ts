import type { Clock, KubeletError, TimerHandle } from '@kubelet-ts/core';

/** One sync pass: when it ran, how long it took, the pods desired and the actions taken and failed. */
export interface PassResult {
  readonly startedAt: number;
  readonly durationMs: number;
  /** Pods desired by the union of all sources. */
  readonly desired: number;
  readonly actions: number;
  readonly failures: number;
  /** Removals withheld because not every source has delivered yet. */
  readonly held: number;
  /** Pods left out of the pass because their worker was still acting on them. */
  readonly busy: number;
  /** Set for a pass of these pods only (a runtime event named them); absent for a full pass. */
  readonly pods?: readonly string[];
  /** Set when the pass could not run at all (the runtime could not list). */
  readonly error?: KubeletError;
}

export interface SyncLoopOptions {
  readonly clock: Clock;
  /**
   * Plans and dispatches one pass (of every pod, or of `pods` only); `done` resolves with its
   * result once its work is done. `fresh`: a `sync()` caller waits for it, so it looks at the
   * runtime anew rather than at the pod cache.
   */
  readonly pass: (pods?: ReadonlySet<string>, fresh?: boolean) => Promise<{ readonly done: Promise<PassResult> }>;
  /** How long to sleep after a pass when nothing asks for one (the sync period, or sooner). */
  readonly wakeIn: () => number;
  /** Resolves when no pod worker is acting. */
  readonly idle: () => Promise<void>;
  /** Hears each pass's result once its work is done. */
  readonly onDone: (result: PassResult) => void;
}

/**
 * Schedules passes: one at a time; a request during a pass makes exactly one more pass after it;
 * otherwise one after `wakeIn()`. Requests for pods coalesce: those arriving during a pass make
 * one pass of all of them after it, and a full-pass request wins over them. Pod passes do not
 * postpone the periodic full pass (the safety net), but may bring it forward (a back-off ending). The loop goes on as soon as a pass has dispatched its work, so a
 * slow pod never delays the next pass; `sync()` callers hear when the work is done.
 */
export class SyncLoop {
  private state: 'new' | 'running' | 'closed' = 'new';
  private timer: TimerHandle | undefined;
  private loop: Promise<void> | undefined;
  private pending = false;
  /** Pods asked for since the last pass began (meaningless while `pending`: a full pass covers them). */
  private pendingPods = new Set<string>();
  private timerAt = Infinity;
  private waiters: Array<(result: PassResult) => void> = [];
  private lastDone: Promise<PassResult> | undefined;

  constructor(private readonly options: SyncLoopOptions) {}

  start(): void {
    this.state = 'running';
  }

  /** True while a pass is being planned (requests now make one more pass after it). */
  get planning(): boolean {
    return this.loop !== undefined;
  }

  /** Stops scheduling and waits for the pass being planned; work already dispatched is not waited for. */
  async close(): Promise<void> {
    this.state = 'closed';
    if (this.timer !== undefined) this.options.clock.clearTimeout(this.timer);
    this.timer = undefined;
    await this.loop;
  }

  /** Asks for a pass: now, or right after the one being planned. */
  request(): void {
    if (this.state !== 'running') {
      this.flushWaiters();
      return;
    }
    this.pending = true;
    this.loop ??= this.run();
  }

  /** Asks for a pass of these pods: now, or right after the one being planned, with any others asked for meanwhile. */
  requestPods(podIds: Iterable<string>): void {
    if (this.state !== 'running') return;
    for (const id of podIds) this.pendingPods.add(id);
    if (this.pendingPods.size === 0) return;
    this.loop ??= this.run();
  }

  /**
   * Runs a pass over every pod and resolves once its work is done: work already in flight is
   * waited for first, and a pass that had to leave a busy pod out is followed by another. The pass
   * lists the host (a caller asks for the host as it is now, not as the pod cache last saw it).
   */
  async sync(): Promise<PassResult> {
    for (;;) {
      await this.options.idle();
      const result = await new Promise<PassResult>((resolve) => {
        this.waiters.push(resolve);
        this.request();
      });
      if (result.busy === 0 || this.state !== 'running') return result;
    }
  }

  private async run(): Promise<void> {
    const { clock } = this.options;
    let full = false;
    try {
      do {
        // A full pass covers every pod asked for.
        const pods = this.pending ? undefined : this.pendingPods;
        this.pending = false;
        this.pendingPods = new Set();
        if (pods === undefined) {
          full = true;
          this.clearTimer();
          const waiters = this.waiters;
          this.waiters = [];
          const { done } = await this.options.pass(undefined, waiters.length > 0);
          this.lastDone = done;
          void done.then((result) => {
            for (const resolve of waiters) resolve(result);
            this.options.onDone(result);
          });
        } else {
          const { done } = await this.options.pass(pods);
          void done.then((result) => this.options.onDone(result));
        }
      } while ((this.pending || this.pendingPods.size > 0) && this.state === 'running');
    } finally {
      // Cleared in the same turn as the last `pending` check: a request arriving after this point
      // starts a new loop instead of setting a flag that nobody reads.
      this.loop = undefined;
    }
    if (this.state !== 'running') {
      this.flushWaiters();
      return;
    }
    const at = clock.now() + this.options.wakeIn();
    if (full || this.timer === undefined || at < this.timerAt) {
      this.clearTimer();
      this.timerAt = at;
      this.timer = clock.setTimeout(() => {
        this.timer = undefined;
        this.request();
      }, at - clock.now());
    }
  }

  private clearTimer(): void {
    if (this.timer !== undefined) this.options.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  /** Answers sync() calls that no pass will serve (the loop is closed) with the last pass's result. */
  private flushWaiters(): void {
    const waiters = this.waiters;
    this.waiters = [];
    const empty: PassResult = { startedAt: this.options.clock.now(), durationMs: 0, desired: 0, actions: 0, failures: 0, held: 0, busy: 0 };
    void (async () => {
      await this.loop; // a pass still planning will set lastDone
      const result = await (this.lastDone ?? Promise.resolve(empty));
      for (const resolve of waiters) resolve(result);
    })();
  }
}
