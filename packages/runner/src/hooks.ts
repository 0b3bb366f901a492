import { toKubeletError, type Clock, type ContainerRuntime, type LifecycleHandler, type TimerHandle } from '@kubelet-ts/core';
import { socketNetworkCheck, type NetworkCheck } from './network-check.js';

/** Where a hook runs: the container (exec), and the pod's address (httpGet without a `host`). */
export interface HookTarget {
  readonly id: string;
  /** The pod's IP; absent, `defaultHost` (a hostNetwork pod, or a sandbox without one). */
  readonly podIP?: string;
}

/**
 * Runs a container's lifecycle hooks as the kubelet does (`pkg/kubelet/lifecycle`): `exec` in the
 * container (a non-zero exit fails it), `httpGet` to the pod's IP (or `host`) on the container's
 * port (an answer that is not 2xx or 3xx fails it), `sleep` for its seconds. Each is bounded by
 * the time it is given; a hook that outlives it fails, and what it started is left to the stop.
 */
export class HookRunner {
  private readonly network: NetworkCheck;
  private readonly defaultHost: string;

  /** `probes`: where httpGet hooks go as probes go (the agent's `probes` option): its network check, and the host without a pod IP (127.0.0.1). */
  constructor(
    private readonly runtime: ContainerRuntime,
    private readonly clock: Clock,
    probes: { readonly host?: string; readonly network?: NetworkCheck } = {},
  ) {
    this.network = probes.network ?? socketNetworkCheck;
    this.defaultHost = probes.host ?? '127.0.0.1';
  }

  /** Undefined when the hook succeeded; otherwise why it failed, in one line. */
  async run(hook: LifecycleHandler, target: HookTarget, timeoutMs: number): Promise<string | undefined> {
    let timer: TimerHandle | undefined;
    const late = new Promise<string>((resolve) => {
      timer = this.clock.setTimeout(() => resolve(`did not end within ${Math.round(timeoutMs / 1000)} s`), timeoutMs);
    });
    try {
      return await Promise.race([this.once(hook, target, timeoutMs), late]);
    } finally {
      if (timer !== undefined) this.clock.clearTimeout(timer);
    }
  }

  /** How a hook reads in events. */
  describe(hook: LifecycleHandler): string {
    if (hook.exec !== undefined) return `exec ${JSON.stringify(hook.exec.command)}`;
    if (hook.httpGet !== undefined) return `httpGet ${hook.httpGet.path} on port ${hook.httpGet.port}`;
    return `sleep ${hook.sleep?.seconds ?? 0} s`;
  }

  private async once(hook: LifecycleHandler, target: HookTarget, timeoutMs: number): Promise<string | undefined> {
    if (hook.sleep !== undefined) {
      const ms = hook.sleep.seconds * 1000;
      if (ms > 0) await new Promise<void>((resolve) => this.clock.setTimeout(resolve, ms));
      return undefined;
    }
    if (hook.exec !== undefined) {
      try {
        const result = await this.runtime.exec(target.id, hook.exec.command, timeoutMs);
        if (result.exitCode === 0) return undefined;
        const output = result.output.replace(/\s+/g, ' ').trim().slice(0, 200);
        return `exited with code ${result.exitCode}${output === '' ? '' : `: ${output}`}`;
      } catch (error) {
        const e = toKubeletError(error, this.runtime.name);
        return `${e.code}: ${e.message}`;
      }
    }
    const get = hook.httpGet;
    if (get === undefined) return 'the hook has none of exec, httpGet, sleep';
    const host = get.host ?? target.podIP ?? this.defaultHost;
    const options = {
      ...(get.scheme === undefined ? {} : { scheme: get.scheme }),
      ...(get.httpHeaders === undefined ? {} : { headers: get.httpHeaders }),
    };
    const { ok, detail } = await this.network.http(host, Number(get.port), get.path, timeoutMs, options);
    return ok ? undefined : detail;
  }
}
