import {
  silentLogger,
  type Clock,
  type ContainerRuntime,
  type EventSink,
  type KubeletEvent,
  type Logger,
  type TimerHandle,
} from '@kubelet-ts/core';
import type { Inbox } from './inbox.js';
import { socketNetworkCheck, type NetworkCheck } from './network-check.js';
import { ProbeCheck, type CheckTarget } from './probe-check.js';
import type { ProbeMetrics } from './probe-metrics.js';

/** The kubelet's three probes: liveness kills, startup holds the other two and kills, readiness only reports. */
export type ProbeKind = 'liveness' | 'readiness' | 'startup';

/** One probe of one running container. */
export interface ProbeTarget extends CheckTarget {
  readonly podId: string;
  /** The manifest container name. */
  readonly container: string;
  /** When the container started (ms since the epoch, from the runtime); `initialDelaySeconds` counts from here. */
  readonly startedAt: number;
  /** Default `liveness`. */
  readonly kind?: ProbeKind;
  /** The pod's namespace and uid, for the probe metrics' labels. */
  readonly namespace?: string;
  readonly podUid?: string;
}

export interface ProberOptions {
  readonly runtime: ContainerRuntime;
  readonly clock: Clock;
  readonly events: EventSink;
  readonly logger?: Logger;
  /** The host address probes dial for published ports when the target names none. Default 127.0.0.1. */
  readonly host?: string;
  /** Default: real sockets (`socketNetworkCheck`). */
  readonly network?: NetworkCheck;
  /**
   * Told when a container turned unhealthy (failureThreshold consecutive liveness or startup
   * failures: `container-unhealthy`), so the agent plans the kill at once, and the pod's worker
   * carries it out. The prober itself only records.
   */
  readonly inbox?: Inbox;
  /** Counts each probe run by result and times it (`/metrics/probes`). */
  readonly metrics?: ProbeMetrics;
}

/** What `state` reports of one probe of a container. */
export interface ProbeState {
  /** Consecutive failures since the last success (or since the container started). */
  readonly failures: number;
  readonly lastResult?: 'success' | 'failure';
  readonly lastDetail?: string;
}

/** What the probes say of a container now; a field is absent when the container has no such probe. */
export interface ProbeVerdict {
  /** The startup probe has succeeded once. */
  readonly started?: boolean;
  /** The readiness probe's current result: false until its first successThreshold successes. */
  readonly ready?: boolean;
}

interface Entry {
  /** The latest target given; probe settings may change without a new container. */
  target: ProbeTarget;
  readonly kind: ProbeKind;
  failures: number;
  successes: number;
  /** Readiness: the current result. Startup: succeeded once. */
  passed: boolean;
  lastResult?: 'success' | 'failure';
  lastDetail?: string;
  timer?: TimerHandle | undefined;
  /** Waiting for the container's startup probe to succeed before its first probe. */
  held: boolean;
  /** Unhealthy, started, or found gone: kept for `state` and to recognise the same container, never probed again. */
  done: boolean;
}

const REASONS: Record<ProbeKind, string> = { liveness: 'Liveness', readiness: 'Readiness', startup: 'Startup' };

/**
 * Runs the probes of the containers the agent manages, as the kubelet's prober workers do: the
 * first probe at `startedAt + initialDelaySeconds`, then one every `periodSeconds` after the
 * previous one finished, each bounded by `timeoutSeconds`.
 *
 * - liveness: a success resets the count of consecutive failures; at `failureThreshold` the
 *   container is recorded as unhealthy (`unhealthy()`);
 * - startup: while it has not succeeded once, the container's liveness and readiness probes wait;
 *   `failureThreshold` failures in a row record it as unhealthy, as liveness does; after its first
 *   success it is not run again for that container;
 * - readiness: not ready until `successThreshold` successes in a row, not ready again after
 *   `failureThreshold` failures in a row; recorded and reported (`verdict()`), never acted on.
 *
 * That is all: the prober never acts on the runtime beyond its probes. The next pass plans the kill
 * and the pod's worker does it (the kubelet's prober → results manager → pod sync), so a pod is
 * never acted on twice at once. All timing goes through the injected clock.
 */
const RESULT = { success: 'successful', failure: 'failed', error: 'unknown' } as const;

export class Prober {
  private readonly clock: Clock;
  private readonly events: EventSink;
  private readonly logger: Logger;
  private readonly check: ProbeCheck;
  private readonly inbox: Inbox | undefined;
  private readonly metrics: ProbeMetrics | undefined;
  /** By `<kind>/<container id>`. */
  private readonly entries = new Map<string, Entry>();
  /** The results the agent acts on: unhealthy container id → what the probe last said. */
  private readonly failed = new Map<string, string>();
  /** The probe under way per entry key: one at a time, across generations of an entry. */
  private readonly inFlight = new Map<string, Promise<void>>();
  private closing: Promise<void> | undefined;

  constructor(options: ProberOptions) {
    this.clock = options.clock;
    this.events = options.events;
    this.logger = options.logger ?? silentLogger;
    this.check = new ProbeCheck(options.runtime, options.clock, options.network ?? socketNetworkCheck, options.host ?? '127.0.0.1');
    this.inbox = options.inbox;
    this.metrics = options.metrics;
  }

  /**
   * Replaces the set of probes. Keyed by kind and runtime id: a new one starts fresh; one no longer
   * present stops being probed; one still present keeps its count and schedule. The same id with
   * another `startedAt` is the same container started again, and also starts fresh.
   */
  update(targets: readonly ProbeTarget[]): void {
    if (this.closing !== undefined) return;
    const wanted = new Map(targets.map((t) => [keyOf(t.kind ?? 'liveness', t.id), t]));
    for (const [key, entry] of this.entries) {
      if (wanted.has(key)) continue;
      this.clearTimer(entry);
      this.entries.delete(key);
    }
    const ids = new Set(targets.map((t) => t.id));
    for (const id of this.failed.keys()) if (!ids.has(id)) this.failed.delete(id);
    const fresh: Entry[] = [];
    for (const [key, target] of wanted) {
      const existing = this.entries.get(key);
      if (existing !== undefined && existing.target.startedAt === target.startedAt) {
        existing.target = target;
        continue;
      }
      if (existing !== undefined) {
        this.clearTimer(existing);
        this.failed.delete(target.id);
      }
      const entry: Entry = { target, kind: target.kind ?? 'liveness', failures: 0, successes: 0, passed: false, held: false, done: false };
      this.entries.set(key, entry);
      fresh.push(entry);
    }
    // After every entry is in: whether a container's startup probe holds the others depends on all of them.
    for (const entry of fresh) {
      if (entry.kind !== 'startup' && !this.hasStarted(entry.target.id)) entry.held = true;
      else this.scheduleFirst(entry);
    }
    // A startup probe taken away (its target gone) holds nothing any more.
    for (const entry of this.entries.values()) {
      if (!entry.held || !this.hasStarted(entry.target.id)) continue;
      entry.held = false;
      this.scheduleFirst(entry);
    }
  }

  /**
   * Running containers whose liveness or startup probe failed failureThreshold times in a row, by
   * runtime id, with the probe's last word. An id leaves when it is no longer a target (it exited,
   * or was removed) or comes back started again.
   */
  unhealthy(): ReadonlyMap<string, string> {
    return this.failed;
  }

  /** Consecutive failures and the last result of one probe of a container; `undefined` when there is none. */
  state(id: string, kind: ProbeKind = 'liveness'): ProbeState | undefined {
    const entry = this.entries.get(keyOf(kind, id));
    if (entry === undefined) return undefined;
    return {
      failures: entry.failures,
      ...(entry.lastResult === undefined ? {} : { lastResult: entry.lastResult }),
      ...(entry.lastDetail === undefined ? {} : { lastDetail: entry.lastDetail }),
    };
  }

  /** Whether a container has started and is ready, as far as its probes say (see `ProbeVerdict`). */
  verdict(id: string): ProbeVerdict {
    const startup = this.entries.get(keyOf('startup', id));
    const readiness = this.entries.get(keyOf('readiness', id));
    return {
      ...(startup === undefined ? {} : { started: startup.passed }),
      ...(readiness === undefined ? {} : { ready: readiness.passed }),
    };
  }

  /** Clears every timer and waits for the probes under way; their results are dropped. Idempotent. */
  close(): Promise<void> {
    if (this.closing === undefined) {
      for (const entry of this.entries.values()) this.clearTimer(entry);
      this.closing = Promise.all(this.inFlight.values()).then(() => undefined);
    }
    return this.closing;
  }

  // ---- scheduling -------------------------------------------------------------------------------

  private hasStarted(id: string): boolean {
    return this.entries.get(keyOf('startup', id))?.passed ?? true;
  }

  private scheduleFirst(entry: Entry): void {
    const firstAt = entry.target.startedAt + entry.target.probe.initialDelaySeconds * 1000;
    this.schedule(entry, Math.max(0, firstAt - this.clock.now()));
  }

  private schedule(entry: Entry, delayMs: number): void {
    entry.timer = this.clock.setTimeout(() => {
      entry.timer = undefined;
      this.fire(entry);
    }, delayMs);
  }

  private clearTimer(entry: Entry): void {
    if (entry.timer === undefined) return;
    this.clock.clearTimeout(entry.timer);
    entry.timer = undefined;
  }

  /** Whether results for `entry` still matter: not closed, not replaced or removed, not finished. */
  private isLive(entry: Entry): boolean {
    return this.closing === undefined && !entry.done && this.entries.get(keyOf(entry.kind, entry.target.id)) === entry;
  }

  private fire(entry: Entry): void {
    if (!this.isLive(entry)) return;
    const key = keyOf(entry.kind, entry.target.id);
    // A probe of an earlier generation of this entry (the container restarted meanwhile) may still
    // be running: wait for it, so that one probe of a container never runs twice at once.
    const previous = this.inFlight.get(key);
    const run = (async () => {
      if (previous !== undefined) await previous;
      await this.probeOnce(entry);
    })().catch((error: unknown) => {
      this.logger.error({ err: error, id: entry.target.id, probe: entry.kind }, 'probe crashed');
    });
    this.inFlight.set(key, run);
    void run.finally(() => {
      if (this.inFlight.get(key) === run) this.inFlight.delete(key);
    });
  }

  private async probeOnce(entry: Entry): Promise<void> {
    if (!this.isLive(entry)) return;
    const began = performance.now();
    const outcome = await this.check.run(keyOf(entry.kind, entry.target.id), entry.target);
    if (!this.isLive(entry)) return;
    const { target, kind } = entry;
    if (outcome.kind !== 'gone') this.metrics?.record(target, kind, RESULT[outcome.kind], (performance.now() - began) / 1000);
    const where = { podId: target.podId, container: target.container, id: target.id, probe: kind };
    const periodMs = target.probe.periodSeconds * 1000;
    switch (outcome.kind) {
      case 'gone':
        entry.done = true;
        this.logger.debug({ ...where, detail: outcome.detail }, `container not running; ${kind} probing ends`);
        return;
      case 'error':
        this.logger.warn(where, `${kind} probe could not run: ${outcome.detail}`);
        this.schedule(entry, periodMs);
        return;
      case 'success':
        entry.failures = 0;
        entry.successes += 1;
        entry.lastResult = 'success';
        entry.lastDetail = outcome.detail;
        if (kind === 'startup') return this.markStarted(entry);
        if (kind === 'readiness' && !entry.passed && entry.successes >= (target.probe.successThreshold ?? 1)) {
          entry.passed = true;
          this.emit(
            target,
            'ContainerReady',
            `readiness probe ${this.check.describe(target)} succeeded ${entry.successes} time(s) in a row: ready`,
            kind,
          );
        }
        this.schedule(entry, periodMs);
        return;
      case 'failure': {
        entry.failures += 1;
        entry.successes = 0;
        entry.lastResult = 'failure';
        entry.lastDetail = outcome.detail;
        const { failureThreshold } = target.probe;
        this.emit(
          target,
          'ProbeFailed',
          `${kind} probe ${this.check.describe(target)} failed (${entry.failures}/${failureThreshold}): ${outcome.detail}`,
          kind,
        );
        if (entry.failures < failureThreshold) return this.schedule(entry, periodMs);
        if (kind !== 'readiness') return this.markUnhealthy(entry, outcome.detail);
        if (entry.passed) {
          entry.passed = false;
          this.emit(
            target,
            'ContainerNotReady',
            `readiness probe failed ${entry.failures} times in a row: not ready (nothing is restarted)`,
            kind,
          );
        }
        this.schedule(entry, periodMs);
        return;
      }
    }
  }

  /** The startup probe passed: it is not run again, and the container's other probes begin. */
  private markStarted(entry: Entry): void {
    entry.passed = true;
    entry.done = true;
    this.logger.info(
      { podId: entry.target.podId, container: entry.target.container, id: entry.target.id },
      'startup probe succeeded; liveness and readiness probes begin',
    );
    for (const kind of ['liveness', 'readiness'] as const) {
      const held = this.entries.get(keyOf(kind, entry.target.id));
      if (held === undefined || !held.held) continue;
      held.held = false;
      this.scheduleFirst(held);
    }
  }

  private markUnhealthy(entry: Entry, detail: string): void {
    const { target, kind } = entry;
    entry.done = true;
    this.failed.set(target.id, `${kind} probe failed ${entry.failures} times: ${detail}`);
    this.logger.info(
      { podId: target.podId, container: target.container, id: target.id, failures: entry.failures },
      `container unhealthy after ${kind} failures`,
    );
    this.inbox?.post({ type: 'container-unhealthy', target });
  }

  private emit(target: ProbeTarget, type: KubeletEvent['type'], message: string, kind: ProbeKind): void {
    this.events.emit({ type, time: this.clock.now(), podId: target.podId, container: target.container, reason: REASONS[kind], message });
  }
}

function keyOf(kind: ProbeKind, id: string): string {
  return `${kind}/${id}`;
}

export type { NetworkCheck, HttpCheckOptions } from './network-check.js';
