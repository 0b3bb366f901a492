import { validateManifest, type ContainerManifest, type ValidateOptions } from '@kubelet-ts/core';

/** A test's manifest, validated and normalised as a source would deliver it; throws naming every wrong field. */
export function checkedManifest(raw: unknown, options: ValidateOptions = {}): ContainerManifest {
  const result = validateManifest(raw, options);
  if (!result.ok) throw new Error(`test manifest is invalid: ${JSON.stringify(result.errors)}`);
  return result.manifest;
}

/**
 * A v1 Pod with a ConfigMap and a Secret beside it, as documents a source reads (JSON, joined by
 * `---` where they share one text): for the tests that each source gives the objects with its pods.
 */
export const objectDocuments = {
  pod: JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web' },
    spec: { containers: [{ name: 'main', image: 'app:1' }] },
  }),
  configMap: (mode: string): string =>
    JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'web-config' }, data: { mode } }),
  secret: JSON.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'web-secret' }, stringData: { token: 't0k3n' } }),
} as const;
