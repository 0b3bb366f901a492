import type { ContainerManifest } from './manifest.js';
import { placementMatches } from './validate-placement.js';

/**
 * What a node can give its pods, as the kubelet's allocatable: its capacity less what is reserved
 * for the system and the kubelet (`--kube-reserved`, `--system-reserved`), and at most `pods` pods
 * (`--max-pods`). A figure left out is not checked.
 */
export interface NodeAllocatable {
  /** Thousandths of a CPU. */
  readonly cpuMillis?: number;
  readonly memoryBytes?: number;
  readonly pods?: number;
}

/** The node a pod is admitted to: its labels (for the pod's placement) and what it can give. */
export interface AdmissionNode {
  readonly labels: Readonly<Record<string, string>>;
  readonly allocatable: NodeAllocatable;
}

/** The kubelet's reasons for a pod it will not run (`pkg/kubelet/lifecycle/predicate.go`). */
export type AdmissionReason = 'OutOfpods' | 'OutOfcpu' | 'OutOfmemory' | 'NodeAffinity';

/** Why a pod is not admitted: the reason and message its `Failed` status carries, as the kubelet writes them. */
export interface AdmissionRefusal {
  readonly reason: AdmissionReason;
  readonly message: string;
}

/** What a pod asks of the node: the kubelet's pod requests, in thousandths of a CPU and bytes. */
export interface PodRequests {
  readonly cpuMillis: number;
  readonly memoryBytes: number;
}

/**
 * A pod's requests as the kubelet sums them: for each resource, the larger of its containers' sum
 * and its largest init container (which run one at a time, before them). A request left out is
 * the limit (as the API server defaults it). The CPU request is kept as shares, so it reads back
 * to within a thousandth of a CPU of what was written.
 */
export function podRequests(manifest: Pick<ContainerManifest, 'containers' | 'initContainers'>): PodRequests {
  const of = (c: ContainerManifest['containers'][number]): PodRequests => ({
    cpuMillis: c.cpu !== undefined ? Math.round((c.cpu * 1000) / 1024) : (c.cpuLimitMillis ?? 0),
    memoryBytes: c.memoryRequest ?? c.memory ?? 0,
  });
  const main = manifest.containers
    .map(of)
    .reduce((a, b) => ({ cpuMillis: a.cpuMillis + b.cpuMillis, memoryBytes: a.memoryBytes + b.memoryBytes }), {
      cpuMillis: 0,
      memoryBytes: 0,
    });
  const inits = (manifest.initContainers ?? []).map(of);
  return {
    cpuMillis: Math.max(main.cpuMillis, ...inits.map((r) => r.cpuMillis)),
    memoryBytes: Math.max(main.memoryBytes, ...inits.map((r) => r.memoryBytes)),
  };
}

/** What the pods a node admitted already take of it: how many, and their requests summed. */
export interface AdmittedUse extends PodRequests {
  readonly pods: number;
}

/** The use of `pods` (see `AdmittedUse`). */
export function admittedUse(pods: readonly Pick<ContainerManifest, 'containers' | 'initContainers'>[]): AdmittedUse {
  return pods.reduce(withPod, { pods: 0, cpuMillis: 0, memoryBytes: 0 });
}

/** `used` with one more pod admitted. */
export function withPod(used: AdmittedUse, pod: Pick<ContainerManifest, 'containers' | 'initContainers'>): AdmittedUse {
  const r = podRequests(pod);
  return { pods: used.pods + 1, cpuMillis: used.cpuMillis + r.cpuMillis, memoryBytes: used.memoryBytes + r.memoryBytes };
}

/**
 * Whether the node admits `pod` beside the pods it admitted already (whose use is `used`), as the
 * kubelet's admission decides it (`GeneralPredicates`): first the number of pods, then CPU, then
 * memory (a resource the pod asks none of is not checked), then its placement. Undefined when it
 * does; else the first reason, and the kubelet's message for it.
 */
export function admissionRefusal(
  pod: Pick<ContainerManifest, 'containers' | 'initContainers' | 'nodeSelector' | 'nodeAffinity'>,
  used: AdmittedUse,
  node: AdmissionNode,
): AdmissionRefusal | undefined {
  const { allocatable } = node;
  const short = (resource: string, requested: number, taken: number, capacity: number): string =>
    `Node didn't have enough resource: ${resource}, requested: ${requested}, used: ${taken}, capacity: ${capacity}`;
  if (allocatable.pods !== undefined && used.pods + 1 > allocatable.pods)
    return { reason: 'OutOfpods', message: short('pods', 1, used.pods, allocatable.pods) };
  const wants = podRequests(pod);
  const cpu = allocatable.cpuMillis;
  if (cpu !== undefined && wants.cpuMillis > 0 && used.cpuMillis + wants.cpuMillis > cpu)
    return { reason: 'OutOfcpu', message: short('cpu', wants.cpuMillis, used.cpuMillis, cpu) };
  const memory = allocatable.memoryBytes;
  if (memory !== undefined && wants.memoryBytes > 0 && used.memoryBytes + wants.memoryBytes > memory)
    return { reason: 'OutOfmemory', message: short('memory', wants.memoryBytes, used.memoryBytes, memory) };
  if (!placementMatches(pod, node.labels))
    return { reason: 'NodeAffinity', message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector" };
  return undefined;
}
