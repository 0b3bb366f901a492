import type { Capability, ContainerRuntime } from '@kubelet-ts/core';
import { CAPABILITIES } from '@kubelet-ts/core';

/**
 * A runtime's declared powers must be there: a declaration the object cannot keep fails now, with
 * the power named, rather than at the first event or figure.
 */
export function checkCapabilities(runtime: ContainerRuntime): void {
  const methods: Readonly<Record<Capability, readonly string[]>> = {
    events: ['events'],
    stats: ['stats', 'sample'],
    logs: ['logs'],
    streaming: ['exec', 'attach', 'portForward'],
  };
  if (typeof runtime.capabilities !== 'object' || runtime.capabilities === null) {
    throw new Error(`the ${runtime.name} runtime declares no capabilities: give it \`capabilities: {}\` (or the powers it has)`);
  }
  for (const key of CAPABILITIES) {
    const facet = runtime.capabilities[key] as Record<string, unknown> | undefined;
    const missing = facet === undefined ? undefined : methods[key].find((method) => typeof facet[method] !== 'function');
    if (missing !== undefined) {
      throw new Error(`the ${runtime.name} runtime declares the ${key} capability, but capabilities.${key} has no ${missing}() method`);
    }
  }
}
