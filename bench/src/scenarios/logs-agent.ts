import type { ContainerRuntime } from '@kubelet-ts/core';
import { CriRuntime } from '@kubelet-ts/runtime-cri';
import { DockerRuntime } from '@kubelet-ts/runtime-docker';
import { ServerManifestSource, agentApiHandler } from '@kubelet-ts/source-server';
import { BenchAgent, manifest } from './fixtures.js';

/**
 * How the agent's runtime is made, as plain data: the RSS measurement makes the same runtime in a
 * process of its own (logs-agent-child.ts). `keepWhole`: a container's output is kept whole (Docker:
 * one json-file of up to 1 GiB; CRI: the agent does not rotate it), where the runtimes' defaults
 * (10 MiB × 5 files on both) would keep the last 50 MiB of it.
 */
export type LogsRuntimeConfig =
  | { readonly kind: 'docker'; readonly podInfraImage: string; readonly volumesRoot: string; readonly keepWhole: boolean }
  | {
      readonly kind: 'cri';
      readonly endpoint: string;
      readonly volumesRoot: string;
      readonly logsRoot: string;
      readonly containerLogLinksDir: string;
      readonly cgroupParent: string;
      readonly keepWhole: boolean;
    };

/** One pod of one container (`c0`) for the agent to run: its id (its name in namespace `default`) and command. */
export interface LogsPod {
  readonly id: string;
  readonly image: string;
  readonly command: readonly string[];
}

/** What `LogsAgent.start` is told: the runtime, the node name its containers are labelled with. */
export interface LogsAgentOptions {
  readonly runtime: LogsRuntimeConfig;
  readonly node: string;
}

function makeRuntime(config: LogsRuntimeConfig): ContainerRuntime & { close?: () => void } {
  if (config.kind === 'cri') {
    const { kind: _kind, keepWhole, ...options } = config;
    return new CriRuntime({ ...options, hostIp: '127.0.0.1', ...(keepWhole ? { containerLogs: false } : {}) });
  }
  return new DockerRuntime({
    podInfraImage: config.podInfraImage,
    hostIp: '127.0.0.1',
    volumesRoot: config.volumesRoot,
    ...(config.keepWhole ? { containerLogs: { maxSizeBytes: 1024 ** 3, maxFiles: 1 } } : {}),
  });
}

/** Rejects after `ms` naming `what`, unless `work` settles first. */
export async function within<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`not within ${ms / 1000} s: ${what}`)), ms);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The agent as the CLI wires it for reading logs: its runtime, its own HTTP server
 * (`ServerManifestSource` on a free loopback port, the agent's read API mounted on it, no token),
 * and the pods the bench gives it through a static source beside the server.
 */
export class LogsAgent {
  private readonly server = new ServerManifestSource({ port: 0 });
  private readonly runtime: ContainerRuntime & { close?: () => void };
  private readonly agent: BenchAgent;
  /** Whether the agent's set holds a pod now. */
  private holding = false;

  constructor(options: LogsAgentOptions) {
    this.runtime = makeRuntime(options.runtime);
    this.agent = new BenchAgent({ runtime: this.runtime, hostname: options.node, syncFrequencyMs: 3_600_000, moreSources: [this.server] });
    this.server.mount(agentApiHandler(this.agent.kubelet));
  }

  /** Starts the agent and its server; its base URL. */
  async start(): Promise<string> {
    await this.agent.kubelet.start();
    return this.server.url;
  }

  get url(): string {
    return this.server.url;
  }

  /**
   * Runs `pod` (in place of any other) and resolves once its container runs and the agent's pod
   * cache holds it: from then on, its log route answers (before, it is a 400, waiting to start).
   */
  async run(pod: LogsPod): Promise<void> {
    const started = this.agent.expect('ContainerStarted', 1);
    this.agent.source.set([manifest(pod.id, pod.image, 1, pod.command, 2)]);
    this.holding = true;
    await within(started, 120_000, `pod ${pod.id} to start`);
    await this.container(pod);
  }

  /**
   * The runtime's record of the pod's container (its id, and the runtime's own data such as CRI's
   * log path), once the agent's pod cache holds it (it may trail the start event a little).
   */
  async container(pod: LogsPod): Promise<{ id: string; raw: unknown }> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const details = await this.agent.kubelet.containerInfo(`${pod.id}/c0`);
      if (details !== undefined) return { id: details.id, raw: details.raw };
      if (Date.now() > deadline) throw new Error(`the agent has no container ${pod.id}/c0 30 s after it started`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** `GET /containerLogs/default/{pod}/c0` with `query`, on the agent's server. */
  logsUrl(pod: LogsPod, query: string): string {
    return `${this.server.url}/containerLogs/default/${encodeURIComponent(pod.id)}/c0${query === '' ? '' : `?${query}`}`;
  }

  /** Empties the agent's set and waits (60 s at most) for its one pod to be removed. */
  async clear(): Promise<void> {
    if (!this.holding) return;
    this.holding = false;
    // A pod is gone once its sandbox is (its containers go first; on Docker the sandbox is the pause container).
    const removed = this.agent.expect('SandboxRemoved', 1);
    this.agent.source.set([]);
    await within(removed, 60_000, 'the pod to be removed');
  }

  /** Stops the agent and its server (what the agent made is the caller's to remove, by label, after). */
  async close(): Promise<void> {
    await this.agent.kubelet.close();
    this.runtime.close?.();
  }
}
