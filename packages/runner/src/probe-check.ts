import { toKubeletError, type Clock, type ContainerRuntime, type Probe, type TimerHandle } from '@kubelet-ts/core';
import type { NetworkCheck } from './network-check.js';

/** Where one probe of one container is run: the container, its probe, and for httpGet/tcpSocket the address dialled. */
export interface CheckTarget {
  /** The runtime container id (exec probes run in it). */
  readonly id: string;
  readonly probe: Probe;
  /** For httpGet/tcpSocket: the address dialled; absent means the prober's default host. */
  readonly host?: string;
  /** For httpGet/tcpSocket: the port dialled (the published host port, or the container port in a hostNetwork pod or with `host` set). */
  readonly hostPort?: number;
}

/**
 * How one probe ended. `gone`: the container is not running any more (stopped or removed meanwhile),
 * so probing it ends silently. `error`: the prober could not ask (runtime unreachable, no host port):
 * it says nothing about the container, so it is logged and not counted, as the kubelet's prober
 * worker throws such results away.
 */
export type Outcome = { readonly kind: 'success' | 'failure' | 'gone' | 'error'; readonly detail: string };

/**
 * A runtime or network call that did not answer even this long after its own timeout is abandoned
 * (counted as a failure), so a wedged engine cannot stop a container's probes forever.
 */
const UNANSWERED_SLACK_MS = 1_000;
const MAX_OUTPUT_CHARS = 200;

/**
 * Runs one check (exec, httpGet over HTTP or HTTPS, tcpSocket) and says how it ended; it keeps no
 * result, only the calls it abandoned, so that a probe whose last call still hangs fails at once
 * rather than piling up calls.
 */
export class ProbeCheck {
  /** Calls abandoned after their timeout that have still not answered, per probe key. */
  private readonly unanswered = new Map<string, Promise<unknown>>();

  constructor(
    private readonly runtime: ContainerRuntime,
    private readonly clock: Clock,
    private readonly network: NetworkCheck,
    private readonly defaultHost: string,
  ) {}

  /** Runs `target`'s probe once; `key` names the probe (one container may have several). */
  async run(key: string, target: CheckTarget): Promise<Outcome> {
    const { probe } = target;
    const timeoutMs = probe.timeoutSeconds * 1000;
    if (this.unanswered.has(key)) {
      return { kind: 'failure', detail: `an earlier probe has still not answered (timeout ${probe.timeoutSeconds} s)` };
    }
    const host = target.host ?? this.defaultHost;
    let call: Promise<Outcome>;
    if (probe.exec !== undefined) {
      call = this.exec(target.id, probe.exec.command, timeoutMs);
    } else if (target.hostPort === undefined) {
      return { kind: 'error', detail: `${handlerName(probe)} probe has no published host port` };
    } else if (probe.httpGet !== undefined) {
      const { scheme, httpHeaders } = probe.httpGet;
      const options =
        scheme === undefined && httpHeaders === undefined
          ? undefined
          : { ...(scheme === undefined ? {} : { scheme }), ...(httpHeaders === undefined ? {} : { headers: httpHeaders }) };
      call = asOutcome(this.network.http(host, target.hostPort, probe.httpGet.path, timeoutMs, options));
    } else if (probe.tcpSocket !== undefined) {
      call = asOutcome(this.network.tcp(host, target.hostPort, timeoutMs));
    } else if (probe.grpc !== undefined) {
      if (this.network.grpc === undefined)
        return {
          kind: 'error',
          detail:
            'this agent’s network check makes no gRPC calls: give the agent one with `grpc` (`probes.network`: `{ ...socketNetworkCheck, grpc: grpcHealthCheck }`, from @kubelet-ts/grpc-probe)',
        };
      call = asOutcome(this.network.grpc(host, target.hostPort, probe.grpc.service ?? '', timeoutMs));
    } else {
      return { kind: 'error', detail: 'the probe has none of exec, httpGet, tcpSocket, grpc' };
    }
    return this.bounded(key, call, timeoutMs);
  }

  /** How `target`'s probe reads in events: `exec [...]`, `httpGet https://host:port/path`, `tcpSocket host:port`. */
  describe(target: CheckTarget): string {
    const { probe } = target;
    const host = target.host ?? this.defaultHost;
    if (probe.exec !== undefined) return `exec ${JSON.stringify(probe.exec.command)}`;
    if (probe.httpGet !== undefined)
      return `httpGet ${probe.httpGet.scheme === 'HTTPS' ? 'https' : 'http'}://${host}:${target.hostPort}${probe.httpGet.path}`;
    if (probe.grpc !== undefined)
      return `grpc ${host}:${target.hostPort}${probe.grpc.service === undefined ? '' : ` service ${JSON.stringify(probe.grpc.service)}`}`;
    return `tcpSocket ${host}:${target.hostPort}`;
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
  private async bounded(key: string, call: Promise<Outcome>, timeoutMs: number): Promise<Outcome> {
    let timer: TimerHandle | undefined;
    const abandoned: Outcome = { kind: 'failure', detail: `no answer within ${timeoutMs / 1000} s` };
    const deadline = new Promise<Outcome>((resolve) => {
      timer = this.clock.setTimeout(() => resolve(abandoned), timeoutMs + UNANSWERED_SLACK_MS);
    });
    try {
      const outcome = await Promise.race([call, deadline]);
      if (outcome === abandoned) {
        this.unanswered.set(key, call);
        void call.finally(() => {
          if (this.unanswered.get(key) === call) this.unanswered.delete(key);
        });
      }
      return outcome;
    } finally {
      if (timer !== undefined) this.clock.clearTimeout(timer);
    }
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

function handlerName(probe: Probe): string {
  return probe.httpGet !== undefined ? 'httpGet' : probe.grpc !== undefined ? 'grpc' : 'tcpSocket';
}

function oneLine(output: string): string {
  const text = output.replace(/\s+/g, ' ').trim();
  return text.length > MAX_OUTPUT_CHARS ? `${text.slice(0, MAX_OUTPUT_CHARS)}…` : text;
}
