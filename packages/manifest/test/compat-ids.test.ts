import { describe, expect, it } from '@jest/globals';
import { derivedManifestId } from '@kubelet-ts/core';
import { parseManifests } from '../src/parse.js';

// 2014 rule 3 as sources read it (the validation half is core's compat-ids.test.ts).
const pod = (extra: Record<string, unknown> = {}) => ({ version: 'v1beta1', containers: [{ name: 'main', image: 'app:1' }], ...extra });

describe('parseManifests names id-less manifests with idFor', () => {
  const idFor = (position: number | undefined) => derivedManifestId('pods.yaml', '/etc/pods.yaml', position);

  it('by position in a list, and without one for a single manifest', () => {
    const list = parseManifests(JSON.stringify([pod(), pod({ id: 'given' }), pod()]), '/etc/pods.yaml', { idFor });
    expect(list.manifests.map((m) => m.id)).toEqual([idFor(0), 'given', idFor(2)]);
    const single = parseManifests(JSON.stringify(pod()), '/etc/pods.yaml', { idFor });
    expect(single.manifests.map((m) => m.id)).toEqual([idFor(undefined)]);
  });

  it('gives the same ids on every read', () => {
    const text = JSON.stringify([pod(), pod()]);
    expect(parseManifests(text, 'x', { idFor }).manifests.map((m) => m.id)).toEqual(
      parseManifests(text, 'x', { idFor }).manifests.map((m) => m.id),
    );
  });

  it('rejects an id-less manifest without idFor, naming id', () => {
    const parsed = parseManifests(JSON.stringify(pod()), 'request body');
    expect(parsed.rejected[0]!.errors).toEqual([{ path: 'id', message: 'is required' }]);
  });
});
