import { describe, expect, it } from '@jest/globals';
import { referencedObjects, validateManifest } from '@kubelet-ts/core';
import { parseManifests, toV1Pod, toV1beta1 } from '../src/index.js';
import { accepted, pod, refused } from './v1-pod-fixture.js';

describe('v1 spec.imagePullSecrets', () => {
  it('reads the names, in order, among the objects the pod reads, and writes them back', () => {
    const m = accepted(pod({}, { imagePullSecrets: [{ name: 'regcred' }, { name: 'mirror' }] }, { namespace: 'shop' }));
    expect(m.imagePullSecrets).toEqual(['regcred', 'mirror']);
    expect(referencedObjects(m)).toEqual([
      { kind: 'Secret', namespace: 'shop', name: 'regcred' },
      { kind: 'Secret', namespace: 'shop', name: 'mirror' },
    ]);
    const back = toV1Pod(m);
    expect(back.spec.imagePullSecrets).toEqual([{ name: 'regcred' }, { name: 'mirror' }]);
    expect(parseManifests(JSON.stringify(back), 'back.json').manifests).toEqual([m]);
    expect(() => toV1beta1(m)).toThrow(/spec\.imagePullSecrets: has no v1beta1 form/);
  });

  it('leaves out an entry without a name, as the kubelet passes over it (the API server admits one), and a pod with none has no field', () => {
    expect(accepted(pod({}, { imagePullSecrets: [{}, { name: '' }, { name: 'regcred' }, { name: 'regcred' }] })).imagePullSecrets).toEqual([
      'regcred',
    ]);
    const none = accepted(pod({}, { imagePullSecrets: [] }));
    expect(none).not.toHaveProperty('imagePullSecrets');
    expect(toV1Pod(none).spec).not.toHaveProperty('imagePullSecrets');
  });

  it('refuses a name that is not a string, an entry that is not an object, a field beside name and a value that is not a list, by the path written', () => {
    expect(refused(pod({}, { imagePullSecrets: [{ name: 7 }, 'regcred', { name: 'a', namespace: 'b' }] }))).toEqual([
      { path: 'spec.imagePullSecrets[1].name', message: 'must be {name: <Secret>}, got string "regcred"' },
      { path: 'spec.imagePullSecrets[2].namespace', message: 'not supported' },
      { path: 'spec.imagePullSecrets[0].name', message: "must be a Secret's name, got number 7" },
    ]);
    expect(refused(pod({}, { imagePullSecrets: { name: 'regcred' } }))).toEqual([
      { path: 'spec.imagePullSecrets', message: 'must be a list, got an object' },
    ]);
  });

  it('is a field of the domain form too, validated alike and unchanged by a second validation', () => {
    const input = { id: 'web', containers: [{ name: 'app', image: 'nginx' }], imagePullSecrets: ['regcred'] };
    const first = validateManifest(input);
    expect(first.ok && first.manifest.imagePullSecrets).toEqual(['regcred']);
    expect(first.ok && validateManifest(first.manifest)).toEqual(first);
    const bad = validateManifest({ ...input, imagePullSecrets: [true] });
    expect(!bad.ok && bad.errors).toEqual([{ path: 'imagePullSecrets[0]', message: "must be a Secret's name, got boolean true" }]);
  });
});
