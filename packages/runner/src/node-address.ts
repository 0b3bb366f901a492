import { availableParallelism, networkInterfaces, totalmem } from 'node:os';
import { isLoopback, type NodeCapacity, type PlanInput } from '@kubelet-ts/core';
import type { KubeletOptions } from './kubelet-options.js';

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

/**
 * What a pod takes of this node (the planner's `podFields`): its address and capacity for
 * containers' env, and, when given, its resolver and seccomp directory.
 */
export function nodeFields(
  given: string | undefined,
  host: Pick<KubeletOptions, 'hostDns' | 'seccompProfileRoot'> = {},
): NonNullable<PlanInput['podFields']> {
  const hostIP = nodeAddress(given);
  return {
    ...(hostIP === undefined ? {} : { hostIP }),
    nodeCapacity: nodeCapacity(),
    ...(host.hostDns === undefined ? {} : { hostDns: host.hostDns }),
    ...(host.seccompProfileRoot === undefined ? {} : { seccompProfileRoot: host.seccompProfileRoot }),
  };
}

function firstHostAddress(): string | undefined {
  for (const addresses of Object.values(networkInterfaces())) {
    const found = addresses?.find((a) => a.family === 'IPv4' && !a.internal);
    if (found !== undefined) return found.address;
  }
  return undefined;
}
