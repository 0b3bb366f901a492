import type { ResolverConfig } from './dns.js';
import type { ContainerManifest, DesiredPod } from './manifest.js';
import { Labels } from './naming.js';
import type { PlanAction, PlanReason } from './planner.js';
import type { ContainerSummary } from './runtime.js';
import { buildSandboxSpec, isManagedSandbox, manifestSandboxHash, type SandboxSummary } from './sandbox.js';
import { specHashes } from './spec.js';

/** Where a desired pod's containers go this pass. */
export type SandboxDecision =
  /** A ready sandbox made with the pod's current ports: containers are planned in it as usual. */
  | { readonly kind: 'ready'; readonly id: string; readonly stale: readonly SandboxSummary[] }
  /** None, a dead one, or one made with other ports: the pod gets a new sandbox and new containers. */
  | { readonly kind: 'new'; readonly stale: readonly SandboxSummary[] };

const hashes = new WeakMap<ContainerManifest, string>();

/** The sandbox hash of a manifest, remembered per manifest object (a pass asks it of every pod). */
function wantedHash(manifest: ContainerManifest): string {
  let hash = hashes.get(manifest);
  if (hash === undefined) hashes.set(manifest, (hash = manifestSandboxHash(manifest)));
  return hash;
}

/** The newest ready sandbox with the pod's current ports, and every other one of the pod (stale). */
export function decideSandbox(manifest: ContainerManifest, mine: readonly SandboxSummary[]): SandboxDecision {
  const hash = wantedHash(manifest);
  let current: SandboxSummary | undefined;
  for (const s of mine) {
    if (s.state === 'ready' && s.labels[Labels.sandboxHash] === hash && (current === undefined || s.createdAt > current.createdAt))
      current = s;
  }
  const stale = current === undefined ? mine : mine.filter((s) => s !== current);
  return current === undefined ? { kind: 'new', stale } : { kind: 'ready', id: current.id, stale };
}

/** Removals of sandboxes, after the containers in them: `volumes` when the pod itself is gone. */
export function sandboxRemovals(podId: string, stale: readonly SandboxSummary[], reason: PlanReason, volumes: boolean): PlanAction[] {
  return stale.map((s) => ({ type: 'remove-sandbox', podId, container: 'POD', reason, id: s.id, volumes }));
}

/** The step that runs a pod's new sandbox; `hostDns`, the host's resolver a pod's `dnsConfig` adds to. */
export function sandboxRun(pod: DesiredPod, node: string, reason: PlanReason, hostDns?: ResolverConfig): PlanAction {
  return {
    type: 'run-sandbox',
    podId: pod.manifest.id,
    container: 'POD',
    reason,
    spec: buildSandboxSpec(pod.manifest, { node, source: pod.source, hostDns }),
  };
}

/** This node's sandboxes by pod, ours only. */
export function indexSandboxes(sandboxes: readonly SandboxSummary[], node: string): Map<string, SandboxSummary[]> {
  const byPod = new Map<string, SandboxSummary[]>();
  for (const s of sandboxes) {
    if (!isManagedSandbox(s, node)) continue;
    const podId = s.labels[Labels.sandbox]!;
    const list = byPod.get(podId);
    if (list === undefined) byPod.set(podId, [s]);
    else list.push(s);
  }
  return byPod;
}

/**
 * Whether any container of the pod still has to run: one that has no container yet, runs, waits to
 * start, has a newer spec, or ended and its restart policy says run it again. A pod whose containers
 * all ended for good needs no new sandbox (as in the kubelet).
 */
export function anyToRun(manifest: ContainerManifest, named: ReadonlyMap<string, readonly ContainerSummary[]>): boolean {
  const policy = manifest.restartPolicy ?? 'Always';
  const hashes = specHashes(manifest);
  return manifest.containers.some((c, i) => {
    const mine = named.get(c.name) ?? [];
    if (mine.length === 0 || mine.some((x) => x.state !== 'exited')) return true;
    const newest = mine.reduce((a, b) => (b.createdAt > a.createdAt ? b : a));
    if (newest.labels[Labels.specHash] !== hashes[i]) return true;
    if (policy === 'Always') return true;
    return policy === 'OnFailure' && newest.exitCode !== 0;
  });
}
