import {
  silentLogger,
  toKubeletError,
  type Clock,
  type ContainerRuntime,
  type EventSink,
  type KubeletEvent,
  type Logger,
  type Probe,
  type TimerHandle,
} from '@kubelet-ts/core';
import { socketNetworkCheck, type NetworkCheck } from './network-check.js';

/** One running container with a liveness probe. */
export interface ProbeTarget {
  readonly podId: string;
  /** The manifest container name. */
  readonly container: string;
  /** The runtime container id. */
  readonly id: string;
  /** When the container started (ms since the epoch, from the runtime); `initialDelaySeconds` counts from here. */
  readonly startedAt: number;
  readonly probe: Probe;
  /** For httpGet/tcpSocket: the published host port the probe dials, resolved by the caller. */
  readonly hostPort?: number;
}

export interface LivenessProberOptions {
  readonly runtime: ContainerRuntime;
  readonly clock: Clock;
  readonly events: EventSink;
  readonly logger?: Logger;
  /** The host address probes dial for published ports. Default 127.0.0.1. */
  readonly host?: string;
  /** Default: real sockets (`socketNetworkCheck`). */
  readonly network?: NetworkCheck;
  /**
   * Called when a container turned unhealthy (failureThreshold consecutive failures), so the agent
   * runs a pass at once: that pass plans the kill, and the pod's worker carries it out.
   */
  readonly onUnhealthy?: (target: ProbeTarget) => void;
}

/** What `state` reports of one probed container (shown by `/pods`). */
export interface ProbeState {
  /** Consecutive failures since the last success (or since the container started). */
  readonly failures: number;
  readonly lastResult?: 'success' | 'failure';
  readonly lastDetail?: string;
}

/**
 * How one probe ended. `gone`: the container is not running any more (stopped or removed meanwhile),
 * so probing it ends silently. `error`: the prober could not ask (runtime unreachable, no host port):
 * it says nothing about the container, so it is logged and not counted, as the kubelet's prober
 * worker throws such results away.
 */
type Outcome = { readonly kind: 'success' | 'failure' | 'gone' | 'error'; readonly detail: string };

interface Entry {
  /** The latest target given for this id; probe settings may change without a new container. */
  target: ProbeTarget;
  failures: number;
  lastResult?: 'success' | 'failure';
  lastDetail?: string;
  timer?: TimerHandle;
  /** Unhealthy or found gone: kept for `state` and to recognise the same container, never probed again. */
  done: boolean;
}

/**
 * A runtime or network call that did not answer even this long after its own timeout is abandoned
 * by the prober (counted as a failure), so a wedged engine cannot stop a container's probes forever.
 */
const UNANSWERED_SLACK_MS = 1_000;
const MAX_OUTPUT_CHARS = 200;

/**
 * Runs the liveness probes of the containers the agent manages (the 2014 kubelet's rules): the
 * first probe at `startedAt + initialDelaySeconds`, then one every `periodSeconds` after the previous
 * one finished, each bounded by `timeoutSeconds`. A success resets the count of consecutive
 * failures; at `failureThreshold` the container is recorded as unhealthy (`unhealthy()`), and that
 * is all: the prober never acts on the runtime beyond its probes. The next pass plans the kill and
 * the pod's worker does it (the kubelet's prober → results manager → pod sync), so a pod is never
 * acted on twice at once. All timing goes through the injected clock.
 */
export class LivenessProber {
  private readonly runtime: ContainerRuntime;
  private readonly clock: Clock;
  private readonly events: EventSink;
  private readonly logger: Logger;
  private readonly host: string;
  private readonly network: NetworkCheck;
  private readonly onUnhealthy: ((target: ProbeTarget) => void) | undefined;
  private readonly entries = new Map<string, Entry>();
  /** The results the agent acts on: unhealthy container id → what the probe last said. */
  private readonly failed = new Map<string, string>();
  /** The probe (and kill) under way per container id: one at a time, across generations of an entry. */
  private readonly inFlight = new Map<string, Promise<void>>();
  /** Calls abandoned after their timeout that have still not answered, per container id. */
  private readonly unanswered = new Map<string, Promise<unknown>>();
  private closing: Promise<void> | undefined;

  constructor(options: LivenessProberOptions) {
    this.runtime = options.runtime;
    this.clock = options.clock;
    this.events = options.events;
    this.logger = options.logger ?? silentLogger;
    this.host = options.host ?? '127.0.0.1';
    this.network = options.network ?? socketNetworkCheck;
    this.onUnhealthy = options.onUnhealthy;
  }

  /**
   * Replaces the set of probed containers. Keyed by runtime id: a new id starts fresh; an id no
   * longer present stops being probed; an id still present keeps its count and schedule. The same
   * id with another `startedAt` is the same container started again, and also starts fresh.
   */
  update(targets: readonly ProbeTarget[]): void {
    if (this.closing !== undefined) return;
    const wanted = new Map(targets.map((t) => [t.id, t]));
    for (const [id, entry] of this.entries) {
      if (wanted.has(id)) continue;
      this.clearTimer(entry);
      this.entries.delete(id);
      this.failed.delete(id);
    }
    for (const target of wanted.values()) {
      const existing = this.entries.get(target.id);
      if (existing !== undefined && existing.target.startedAt === target.startedAt) {
        existing.target = target;
        continue;
      }
      if (existing !== undefined) this.clearTimer(existing);
      this.failed.delete(target.id);
      const entry: Entry = { target, failures: 0, done: false };
      this.entries.set(target.id, entry);
      const firstAt = target.startedAt + target.probe.initialDelaySeconds * 1000;
      this.schedule(entry, Math.max(0, firstAt - this.clock.now()));
    }
  }

  /**
   * Running containers whose probe failed failureThreshold times in a row, by runtime id, with
   * the probe's last word. An id leaves when it is no longer a target (it exited, or was removed)
   * or comes back started again.
   */
  unhealthy(): ReadonlyMap<string, string> {
    return this.failed;
  }

  /** Consecutive failures and the last result of a probed container; `undefined` for an unknown id. */
  state(id: string): ProbeState | undefined {
    const entry = this.entries.get(id);
    if (entry === undefined) return undefined;
    return {
      failures: entry.failures,
      ...(entry.lastResult === undefined ? {} : { lastResult: entry.lastResult }),
      ...(entry.lastDetail === undefined ? {} : { lastDetail: entry.lastDetail }),
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
    return this.closing === undefined && !entry.done && this.entries.get(entry.target.id) === entry;
  }

  private fire(entry: Entry): void {
    if (!this.isLive(entry)) return;
    const id = entry.target.id;
    // A probe of an earlier generation of this id (the container restarted meanwhile) may still be
    // running: wait for it, so that one container never has two probes at once.
    const previous = this.inFlight.get(id);
    const run = (async () => {
      if (previous !== undefined) await previous;
      await this.probeOnce(entry);
    })().catch((error: unknown) => {
      this.logger.error({ err: error, id }, 'liveness probe crashed');
    });
    this.inFlight.set(id, run);
    void run.finally(() => {
      if (this.inFlight.get(id) === run) this.inFlight.delete(id);
    });
  }

  private async probeOnce(entry: Entry): Promise<void> {
    if (!this.isLive(entry)) return;
    const outcome = await this.check(entry.target);
    if (!this.isLive(entry)) return;
    const { target } = entry;
    const periodMs = target.probe.periodSeconds * 1000;
    switch (outcome.kind) {
      case 'gone':
        entry.done = true;
        this.logger.debug({ podId: target.podId, container: target.container, id: target.id, detail: outcome.detail }, 'container not running; liveness probing ends');
        return;
      case 'error':
        this.logger.warn({ podId: target.podId, container: target.container, id: target.id }, `liveness probe could not run: ${outcome.detail}`);
        this.schedule(entry, periodMs);
        return;
      case 'success':
        entry.failures = 0;
        entry.lastResult = 'success';
        entry.lastDetail = outcome.detail;
        this.schedule(entry, periodMs);
        return;
      case 'failure': {
        entry.failures += 1;
        entry.lastResult = 'failure';
        entry.lastDetail = outcome.detail;
        const { failureThreshold } = target.probe;
        this.emit(target, 'ProbeFailed', `liveness probe ${describeProbe(target, this.host)} failed (${entry.failures}/${failureThreshold}): ${outcome.detail}`);
        if (entry.failures >= failureThreshold) this.markUnhealthy(entry, outcome.detail);
        else this.schedule(entry, periodMs);
        return;
      }
    }
  }

  private markUnhealthy(entry: Entry, detail: string): void {
    const { target } = entry;
    entry.done = true;
    this.failed.set(target.id, `failed ${entry.failures} times: ${detail}`);
    this.logger.info({ podId: target.podId, container: target.container, id: target.id, failures: entry.failures }, 'container unhealthy after liveness failures');
    try {
      this.onUnhealthy?.(target);
    } catch (error) {
      this.logger.error({ err: error, id: target.id }, 'the onUnhealthy callback threw');
    }
  }

  // ---- one probe --------------------------------------------------------------------------------

  private async check(target: ProbeTarget): Promise<Outcome> {
    const { probe } = target;
    const timeoutMs = probe.timeoutSeconds * 1000;
    if (this.unanswered.has(target.id)) {
      return { kind: 'failure', detail: `an earlier probe has still not answered (timeout ${probe.timeoutSeconds} s)` };
    }
    let call: Promise<Outcome>;
    if (probe.exec !== undefined) {
      call = this.exec(target.id, probe.exec.command, timeoutMs);
    } else if (target.hostPort === undefined) {
      return { kind: 'error', detail: `${probe.httpGet !== undefined ? 'httpGet' : 'tcpSocket'} probe has no published host port` };
    } else if (probe.httpGet !== undefined) {
      call = asOutcome(this.network.http(this.host, target.hostPort, probe.httpGet.path, timeoutMs));
    } else if (probe.tcpSocket !== undefined) {
      call = asOutcome(this.network.tcp(this.host, target.hostPort, timeoutMs));
    } else {
      return { kind: 'error', detail: 'the probe has none of exec, httpGet, tcpSocket' };
    }
    return this.bounded(target.id, call, timeoutMs);
  }

  private async exec(id: string, command: readonly string[], timeoutMs: number): Promise<Outcome> {
    try {
      const result = await this.runtime.exec(id, command, timeoutMs);
      const output = oneLine(result.output);
      const detail = `exited with code ${result.exitCode}${output === '' ? '' : `: ${output}`}`;
      return { kind: result.exitCode === 0 ? 'success' : 'failure', detail };
    } catch (error) {
      const e = toKubeletError(error, this.runtime.name);
      if (e.code === 'Timeout') return { kind: 'failure', detail: `timed out after ${timeoutMs / 1000} s` };
      if (e.code === 'Conflict' || e.code === 'NotFound') return { kind: 'gone', detail: e.message };
      return { kind: 'error', detail: `${e.code}: ${e.message}` };
    }
  }

  /** The call's outcome, or a failure when it has not answered shortly after its own timeout. */
  private async bounded(id: string, call: Promise<Outcome>, timeoutMs: number): Promise<Outcome> {
    let timer: TimerHandle | undefined;
    const abandoned: Outcome = { kind: 'failure', detail: `no answer within ${timeoutMs / 1000} s` };
    const deadline = new Promise<Outcome>((resolve) => {
      timer = this.clock.setTimeout(() => resolve(abandoned), timeoutMs + UNANSWERED_SLACK_MS);
    });
    try {
      const outcome = await Promise.race([call, deadline]);
      if (outcome === abandoned) {
        this.unanswered.set(id, call);
        void call.finally(() => {
          if (this.unanswered.get(id) === call) this.unanswered.delete(id);
        });
      }
      return outcome;
    } finally {
      if (timer !== undefined) this.clock.clearTimeout(timer);
    }
  }

  private emit(target: ProbeTarget, type: KubeletEvent['type'], message: string, reason = 'Liveness'): void {
    this.events.emit({ type, time: this.clock.now(), podId: target.podId, container: target.container, reason, message });
  }
}

async function asOutcome(check: Promise<{ ok: boolean; detail: string }>): Promise<Outcome> {
  try {
    const { ok, detail } = await check;
    return { kind: ok ? 'success' : 'failure', detail };
  } catch (error) {
    // The NetworkCheck contract says it never rejects; one that does tells nothing about the container.
    return { kind: 'error', detail: error instanceof Error ? error.message : String(error) };
  }
}

function describeProbe(target: ProbeTarget, host: string): string {
  const { probe } = target;
  if (probe.exec !== undefined) return `exec ${JSON.stringify(probe.exec.command)}`;
  if (probe.httpGet !== undefined) return `httpGet http://${host}:${target.hostPort}${probe.httpGet.path}`;
  return `tcpSocket ${host}:${target.hostPort}`;
}

function oneLine(output: string): string {
  const text = output.replace(/\s+/g, ' ').trim();
  return text.length > MAX_OUTPUT_CHARS ? `${text.slice(0, MAX_OUTPUT_CHARS)}…` : text;
}

export type { NetworkCheck } from './network-check.js';
