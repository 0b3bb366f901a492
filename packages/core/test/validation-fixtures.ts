import { expect } from '@jest/globals';
import type { FieldError } from '../src/errors.js';
import { validateManifest } from '../src/validate.js';

export type Obj = Record<string, unknown>;

/** Validates and asserts rejection; returns the field errors. */
export function rejectedErrors(input: unknown): readonly FieldError[] {
  const result = validateManifest(input);
  expect(result.ok).toBe(false);
  if (result.ok) throw new Error('unreachable');
  return result.errors;
}

export function paths(input: unknown): string[] {
  return rejectedErrors(input).map((e) => e.path);
}

/** A manifest whose first container is `first` (merged into a valid default); fresh on every call. */
export function withContainer(first: Obj, extra: Obj = {}): Obj {
  return {
    version: 'v1beta1',
    id: 'web',
    volumes: [{ name: 'data' }],
    containers: [{ name: 'app', image: 'nginx', ...first }],
    ...extra,
  };
}
