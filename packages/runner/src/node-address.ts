import { availableParallelism, networkInterfaces, totalmem } from 'node:os';
import type { NodeCapacity } from '@kubelet-ts/core';

/**
 * The node's address for `status.hostIP` (and a hostNetwork pod's `podIP`): the address ports are
 * published on, unless that is a loopback one; else the host's first non-internal IPv4 address
 * (what the kubelet reports as its node's InternalIP by default).
 */
export function nodeAddress(given: string | undefined): string | undefined {
  return given !== undefined && !isLoopback(given) && given !== '0.0.0.0' ? given : firstHostAddress();
}

/** What the node has, as a container without a limit reads its `limits.cpu` and `limits.memory`. */
export function nodeCapacity(): NodeCapacity {
  return { cpuMillis: availableParallelism() * 1000, memoryBytes: totalmem() };
}

/** What a container's env reads of this node (the planner's `podFields`). */
export function nodeFields(given: string | undefined): { readonly hostIP?: string; readonly nodeCapacity: NodeCapacity } {
  const hostIP = nodeAddress(given);
  return { ...(hostIP === undefined ? {} : { hostIP }), nodeCapacity: nodeCapacity() };
}

function isLoopback(address: string): boolean {
  return address.startsWith('127.') || address === '::1' || address === 'localhost';
}

function firstHostAddress(): string | undefined {
  for (const addresses of Object.values(networkInterfaces())) {
    const found = addresses?.find((a) => a.family === 'IPv4' && !a.internal);
    if (found !== undefined) return found.address;
  }
  return undefined;
}
