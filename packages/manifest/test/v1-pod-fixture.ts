import { expect } from '@jest/globals';
import type { ContainerManifest, FieldError } from '@kubelet-ts/core';
import { parseManifests } from '../src/parse.js';

/** A v1 Pod with one container, and what parsing it gives (the v1 decoding tests share these). */
export type Obj = Record<string, unknown>;

export function pod(container: Obj = {}, spec: Obj = {}, metadata: Obj = {}, top: Obj = {}): Obj {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web', ...metadata },
    spec: { containers: [{ name: 'app', image: 'nginx:1.25', ...container }], ...spec },
    ...top,
  };
}

export function accepted(input: unknown, allowHostMounts = true): ContainerManifest {
  const parsed = parseManifests(JSON.stringify(input), 'test.json', { allowHostMounts, allowHostNetwork: true });
  if (parsed.unreadable !== undefined || parsed.manifests.length !== 1)
    throw new Error(JSON.stringify(parsed.rejected) + String(parsed.unreadable));
  return parsed.manifests[0] as ContainerManifest;
}

export function refused(input: unknown, allowHostMounts = true): readonly FieldError[] {
  const parsed = parseManifests(JSON.stringify(input), 'test.json', { allowHostMounts, allowHostNetwork: true });
  expect(parsed.manifests).toEqual([]);
  return parsed.rejected[0]?.errors ?? [];
}

export const app = (m: ContainerManifest) => m.containers[0];
