import { validateManifest, type ContainerManifest, type ValidateOptions } from '@kubelet-ts/core';

/** A test's manifest, validated and normalised as a source would deliver it; throws naming every wrong field. */
export function checkedManifest(raw: unknown, options: ValidateOptions = {}): ContainerManifest {
  const result = validateManifest(raw, options);
  if (!result.ok) throw new Error(`test manifest is invalid: ${JSON.stringify(result.errors)}`);
  return result.manifest;
}
