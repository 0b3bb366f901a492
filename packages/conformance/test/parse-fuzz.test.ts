import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { validateManifest } from '@kubelet-ts/core';
import { parseManifests } from '@kubelet-ts/manifest';
// Here rather than in core's tests: the generators live in conformance, which depends on core.
import {
  describeFuzzInput,
  fuzzBytes,
  fuzzInput,
  heapUsedMB,
  recordFigures,
  reliabilityRuns,
  reliabilitySeed,
  type FuzzInput,
} from '../src/index.js';

/**
 * What one input may cost to parse and validate. The slowest generated inputs are token floods,
 * refused at the 250,000-token budget after 0.3-0.9 s (130,000 empty documents are the worst);
 * what this catches is work that grows faster than the text, like the 17 s that 128 KB of alias
 * keys cost before issue 17.
 */
const MAX_MS_PER_INPUT = 2000;

/** Checks what parsing must say about `input`; returns how long it took. */
function check(input: FuzzInput): number {
  const bytes = fuzzBytes(input);
  const started = performance.now();
  const parsed = parseManifests(bytes, 'fuzz.yaml');
  const took = performance.now() - started;
  switch (input.kind) {
    case 'valid': {
      expect(parsed.unreadable).toBeUndefined();
      expect(parsed.rejected).toEqual([]);
      expect(parsed.manifests).toHaveLength(1);
      const manifest = parsed.manifests[0]!;
      // Normalising is a fixed point, and what it gives reads back the same through JSON.
      expect(validateManifest(manifest)).toEqual({ ok: true, manifest, warnings: [] });
      expect(parseManifests(JSON.stringify(manifest), 'again').manifests).toEqual([manifest]);
      break;
    }
    case 'invalid': {
      const { invalid } = input;
      expect(parsed.unreadable).toBeUndefined();
      expect(parsed.manifests).toEqual([]);
      expect(parsed.rejected).toHaveLength(1);
      expect(parsed.rejected[0]!.errors.map((e) => e.path)).toContain(invalid.path);
      if (invalid.keepsId) expect(parsed.rejected[0]!.id).toBe(invalid.base['id']);
      break;
    }
    case 'unreadable':
      expect(parsed.unreadable?.code).toBe('InvalidManifest');
      expect(parsed.manifests).toEqual([]);
      expect(parsed.rejected).toEqual([]);
      break;
    case 'random':
      // Whatever it decodes to, every rejection names a field: text that is no manifest at all is unreadable.
      for (const r of parsed.rejected) expect(r.errors.some((e) => e.path !== '')).toBe(true);
      break;
  }
  return took;
}

describe('parse and validate under fuzzing', () => {
  it('never throws; accepts and round-trips valid manifests, names the broken field, and reports unreadable texts', () => {
    const seed = reliabilitySeed();
    const runs = reliabilityRuns({ short: 2000, long: 100_000 });
    const counts = { valid: 0, invalid: 0, unreadable: 0, random: 0 };
    const mutations: Record<string, number> = {};
    let slowestMs = 0;
    let slowest = '';
    const heapBefore = heapUsedMB();
    const started = Date.now();
    fc.assert(
      fc.property(fuzzInput(), (input) => {
        counts[input.kind] += 1;
        if (input.kind === 'invalid') mutations[input.invalid.mutation] = (mutations[input.invalid.mutation] ?? 0) + 1;
        const took = check(input);
        if (took > slowestMs) [slowestMs, slowest] = [took, describeFuzzInput(input)];
        expect(took).toBeLessThan(MAX_MS_PER_INPUT);
      }),
      { seed, numRuns: runs },
    );
    const durationMs = Date.now() - started;
    const heapMB = heapUsedMB();
    console.log(`fuzz-parse: seed ${seed}, ${runs} inputs in ${durationMs} ms (replay with KUBELET_TS_SEED=${seed})`);
    recordFigures('fuzz-parse', {
      seed,
      inputs: runs,
      ...counts,
      mutations,
      durationMs,
      slowestMs: Math.round(slowestMs * 10) / 10,
      slowest,
      heapMB: Math.round(heapMB * 10) / 10,
      heapGrowthMB: Math.round((heapMB - heapBefore) * 10) / 10,
    });
    // Parsing keeps nothing between inputs: after a collection the heap is where it started.
    expect(heapMB - heapBefore).toBeLessThan(32);
  });
});
