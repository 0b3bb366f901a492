import { validateManifest, type ContainerManifest } from '@kubelet-ts/core';

/** A test's manifest, validated and normalised as a source would deliver it; throws naming every wrong field. */
export function checkedManifest(raw: unknown): ContainerManifest {
  const result = validateManifest(raw);
  if (!result.ok) throw new Error(`test manifest is invalid: ${JSON.stringify(result.errors)}`);
  return result.manifest;
}
