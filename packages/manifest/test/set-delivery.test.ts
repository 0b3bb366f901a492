import { describe, expect, it } from '@jest/globals';
import { validateManifest, type ContainerManifest } from '@kubelet-ts/core';
import { DeliveredSet, firstOfEachId } from '../src/set-delivery.js';

const m = (id: string, image = 'app:1'): ContainerManifest => {
  const r = validateManifest({ id, containers: [{ name: 'main', image }] });
  if (!r.ok) throw new Error('invalid');
  return r.manifest;
};

describe('DeliveredSet', () => {
  it('says a set changed the first time, not again for an equal set, and again after reset', () => {
    const d = new DeliveredSet();
    expect(d.changed([])).toBe(true);
    expect(d.changed([])).toBe(false);
    expect(d.changed([m('a')])).toBe(true);
    expect(d.changed([m('a')])).toBe(false); // equal content, other objects
    expect(d.changed([m('a', 'app:2')])).toBe(true);
    d.reset();
    expect(d.changed([m('a', 'app:2')])).toBe(true);
  });
});

describe('firstOfEachId', () => {
  it('keeps the first manifest of each id and names every repeat as a Conflict', () => {
    const { manifests, conflicts } = firstOfEachId([m('a', 'first'), m('b'), m('a', 'second')], 'http://x/m', 'http');
    expect(manifests.map((x) => `${x.id}:${x.containers[0]?.image}`)).toEqual(['a:first', 'b:app:1']);
    expect(conflicts.map((c) => [c.code, c.adapter, c.message])).toEqual([
      ['Conflict', 'http', 'http://x/m: manifest id "a" is given more than once; using the first'],
    ]);
  });
});
