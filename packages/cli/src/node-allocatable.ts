import { cpus, totalmem } from 'node:os';
import type { NodeAllocatable } from '@kubelet-ts/core';
import type { Reserved } from './host-flags.js';

/** The kubelet's default hard eviction threshold on memory (`memory.available<100Mi`), which its allocatable keeps back too. */
export const HARD_EVICTION_MEMORY_BYTES = 100 * 1024 * 1024;

/** The host's capacity as the kubelet reads it: every online CPU, and all its memory. */
export function hostCapacity(): { readonly cpuMillis: number; readonly memoryBytes: number } {
  return { cpuMillis: cpus().length * 1000, memoryBytes: totalmem() };
}

/**
 * The node's allocatable, as the kubelet computes it: capacity less `--kube-reserved`,
 * `--system-reserved` and, for memory, the hard eviction threshold (100Mi); at most `--max-pods`
 * pods. Never below 0.
 */
export function nodeAllocatable(
  options: { readonly maxPods: number; readonly kubeReserved?: Reserved | undefined; readonly systemReserved?: Reserved | undefined },
  capacity = hostCapacity(),
): NodeAllocatable {
  const kept = (pick: (r: Reserved) => number) =>
    (options.kubeReserved === undefined ? 0 : pick(options.kubeReserved)) +
    (options.systemReserved === undefined ? 0 : pick(options.systemReserved));
  return {
    pods: options.maxPods,
    cpuMillis: Math.max(0, capacity.cpuMillis - kept((r) => r.cpuMillis)),
    memoryBytes: Math.max(0, capacity.memoryBytes - kept((r) => r.memoryBytes) - HARD_EVICTION_MEMORY_BYTES),
  };
}
