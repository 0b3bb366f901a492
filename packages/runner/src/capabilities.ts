import type { Capability, ContainerRuntime } from '@kubelet-ts/core';
import { CAPABILITIES } from '@kubelet-ts/core';

/**
 * A runtime's declared powers must be there: a declaration the object cannot keep fails now, with
 * the power named, rather than at the first event or figure.
 */
export function checkCapabilities(runtime: ContainerRuntime): void {
  const methods: Readonly<Record<Capability, string>> = { events: 'events', stats: 'stats', logs: 'logs', streaming: 'exec' };
  if (typeof runtime.capabilities !== 'object' || runtime.capabilities === null) {
    throw new Error(`the ${runtime.name} runtime declares no capabilities: give it \`capabilities: {}\` (or the powers it has)`);
  }
  for (const key of CAPABILITIES) {
    const facet = runtime.capabilities[key] as Record<string, unknown> | undefined;
    if (facet !== undefined && typeof facet[methods[key]] !== 'function') {
      throw new Error(
        `the ${runtime.name} runtime declares the ${key} capability, but capabilities.${key} has no ${methods[key]}() method`,
      );
    }
  }
}
