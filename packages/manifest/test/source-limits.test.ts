import { describe, expect, it } from '@jest/globals';
import type { ContainerManifest } from '@kubelet-ts/core';
import { DEFAULT_MAX_MANIFEST_BYTES, DEFAULT_MAX_MANIFESTS, manifestBytes, sourceLimitProblem } from '../src/source-limits.js';

const manifest = (id: string, command: string[] = []): ContainerManifest => ({
  version: 'v1beta1',
  id,
  volumes: [],
  containers: [{ name: 'app', image: 'busybox', command, ports: [], env: [], volumeMounts: [] }],
});

describe('sourceLimitProblem', () => {
  it('is undefined within the limits, which default to 1,000 manifests and 16 MiB', () => {
    expect(DEFAULT_MAX_MANIFESTS).toBe(1000);
    expect(DEFAULT_MAX_MANIFEST_BYTES).toBe(16 * 1024 * 1024);
    expect(sourceLimitProblem(Array.from({ length: 1000 }, (_, i) => manifest(`m${i}`)))).toBeUndefined();
  });

  it('names the count and the option over maxManifests', () => {
    const three = ['a', 'b', 'c'].map((id) => manifest(id));
    expect(sourceLimitProblem(three, { maxManifests: 2 })).toBe('3 manifests, more than the 2 one source may hold (limits.maxManifests)');
    expect(sourceLimitProblem(Array.from({ length: 1001 }, (_, i) => manifest(`m${i}`)))).toMatch(/^1001 manifests, more than the 1000/);
  });

  it('adds up the manifests as compact UTF-8 JSON against maxManifestBytes', () => {
    const big = manifest('big', ['é'.repeat(1000)]);
    expect(manifestBytes(big)).toBe(Buffer.byteLength(JSON.stringify(big)));
    expect(manifestBytes(big)).toBeGreaterThan(2000);
    const limit = manifestBytes(big) * 2;
    expect(sourceLimitProblem([big, manifest('bog', ['é'.repeat(1000)])], { maxManifestBytes: limit })).toBeUndefined();
    expect(sourceLimitProblem([big, manifest('bog', ['é'.repeat(1001)])], { maxManifestBytes: limit })).toBe(
      `${limit + 2} bytes of manifests as JSON, more than the ${limit} one source may hold (limits.maxManifestBytes)`,
    );
  });
});
