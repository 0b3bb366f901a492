import { KubeletError, Labels, ignoreNotFound, type Clock } from '@kubelet-ts/core';
import type { CriApi, PodSandbox, PodSandboxConfig, PortMapping } from './cri-api.js';
import type { CriCall } from './cri-streams.js';
import { ADAPTER } from './errors.js';
import { assertHostPortsFree, publishedPorts } from './host-ports.js';

/** How long a sandbox's own config stands in for its status: the pass that ran it makes its containers within it. */
const FRESH_MS = 10_000;

/**
 * The configs of the sandboxes this runtime ran in the last seconds. CreateContainer wants the
 * sandbox's config beside the container's; for a sandbox just run it is the one sent to
 * RunPodSandbox, so the first containers of a new pod are made without a PodSandboxStatus (the
 * kubelet too passes the config it made). Its readiness is not asked either: RunPodSandbox answers
 * once the sandbox is ready, and containerd refuses a container whose sandbox has since died
 * (CreateContainer: "no running task found").
 * Past FRESH_MS, and once the runtime stops, removes or lists it not ready, or its pause process's
 * exit comes by containerd's events, the status is asked again.
 */
export class RecentSandboxes {
  private readonly configs = new Map<string, { readonly config: PodSandboxConfig; readonly until: number }>();

  constructor(private readonly clock: Clock) {}

  ran(id: string, config: PodSandboxConfig): void {
    const now = this.clock.now();
    for (const [known, { until }] of this.configs) if (until <= now) this.configs.delete(known);
    this.configs.set(id, { config, until: now + FRESH_MS });
  }

  /** The config `id` was run with, while it is fresh. */
  configOf(id: string): PodSandboxConfig | undefined {
    const known = this.configs.get(id);
    return known !== undefined && known.until > this.clock.now() ? known.config : undefined;
  }

  forget(id: string): void {
    this.configs.delete(id);
  }
}

/**
 * What is checked before RunPodSandbox. A sandbox publishing ports: its ports against every ready
 * sandbox's on the host (CNI's portmap would let two share one; see `assertHostPortsFree`), and its
 * name with them. Otherwise nothing: the runtime reserves a sandbox's name itself, and a list at
 * every pod start cost both sides a call; `afterFailedRun` tells a taken name apart.
 */
export async function beforeRun(name: string, ports: readonly PortMapping[], cri: CriApi, call: CriCall): Promise<void> {
  if (ports.length === 0) return;
  const existing = (await call('list sandboxes', (deadline) => cri.listPodSandbox({}, deadline))).items;
  assertNameFree(name, existing);
  const verbose = (id: string) =>
    ignoreNotFound(call(`sandbox ${id}`, (deadline) => cri.podSandboxStatus({ podSandboxId: id, verbose: true }, deadline)));
  await assertHostPortsFree(name, ports, await publishedPorts(existing, verbose));
}

/** After RunPodSandbox failed: Conflict when a sandbox of the pod (`podId`) has the name, naming it; else nothing (the run's own error stands). */
export async function afterFailedRun(
  name: string,
  podId: string,
  ports: readonly PortMapping[],
  cri: CriApi,
  call: CriCall,
): Promise<void> {
  if (ports.length > 0) return; // checked before the run
  const filter = { filter: { labelSelector: { [Labels.sandbox]: podId } } };
  const ofPod = await call('list sandboxes', (deadline) => cri.listPodSandbox(filter, deadline)).catch(() => undefined);
  if (ofPod !== undefined) assertNameFree(name, ofPod.items);
}

function assertNameFree(name: string, sandboxes: readonly PodSandbox[]): void {
  const same = sandboxes.find((s) => s.metadata?.name === name);
  if (same !== undefined)
    throw new KubeletError('Conflict', `run sandbox ${name}: the name is taken by sandbox ${same.id}`, { adapter: ADAPTER });
}
