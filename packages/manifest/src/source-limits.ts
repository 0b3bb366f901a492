import type { ContainerManifest } from '@kubelet-ts/core';

/**
 * What one source may hold at once. Each text a source reads is already bounded (1 MiB, no aliases,
 * a token budget), but a directory of files or a server taking one manifest per request adds texts
 * up; without a bound, enough of them would exhaust the agent's memory.
 *
 * Over a limit, a source changes nothing: a file source keeps the set it delivered last and reports
 * the problem once, the agent's server answers 413.
 */
export interface SourceLimits {
  /**
   * Manifests held at once. Default 1,000: every manifest is a pod with at least one container, and
   * a node running more than a few hundred pods is a mistake (the kubelet later defaulted to 110).
   */
  readonly maxManifests?: number;
  /**
   * Their total size as compact JSON, in bytes. Default 16 MiB: a thousand manifests of 16 KB, or
   * sixteen of the largest a text can hold; held as JavaScript objects, a few times that in memory.
   */
  readonly maxManifestBytes?: number;
}

/** The most manifests one source may hold, unless its options say otherwise. */
export const DEFAULT_MAX_MANIFESTS = 1000;
/** The most bytes (compact JSON) one source's manifests may take together, unless its options say otherwise: 16 MiB. */
export const DEFAULT_MAX_MANIFEST_BYTES = 16 * 1024 * 1024;

/** Manifests are immutable once validated, so each is measured once, however often it is held. */
const sizes = new WeakMap<ContainerManifest, number>();

/** The size of `manifest` as compact JSON, in UTF-8 bytes. */
export function manifestBytes(manifest: ContainerManifest): number {
  let size = sizes.get(manifest);
  if (size === undefined) {
    size = Buffer.byteLength(JSON.stringify(manifest), 'utf8');
    sizes.set(manifest, size);
  }
  return size;
}

/**
 * Why `manifests` is more than one source may hold under `limits` (a sentence naming the limit and
 * the option that sets it), or undefined when it is within them.
 */
export function sourceLimitProblem(manifests: readonly ContainerManifest[], limits: SourceLimits = {}): string | undefined {
  const maxManifests = limits.maxManifests ?? DEFAULT_MAX_MANIFESTS;
  if (manifests.length > maxManifests) {
    return `${manifests.length} manifests, more than the ${maxManifests} one source may hold (limits.maxManifests)`;
  }
  const maxBytes = limits.maxManifestBytes ?? DEFAULT_MAX_MANIFEST_BYTES;
  let total = 0;
  for (const m of manifests) total += manifestBytes(m);
  if (total > maxBytes)
    return `${total} bytes of manifests as JSON, more than the ${maxBytes} one source may hold (limits.maxManifestBytes)`;
  return undefined;
}
