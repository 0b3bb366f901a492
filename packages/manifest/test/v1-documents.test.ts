import { describe, expect, it } from '@jest/globals';
import { parseManifests } from '../src/parse.js';
import { pod, refused } from './v1-pod-fixture.js';

describe('v1 documents: kinds, lists, several documents, mixed formats', () => {
  it('refuses another kind or apiVersion, saying what is accepted', () => {
    expect(refused({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'x' } })).toEqual([
      { path: 'kind', message: expect.stringContaining('must be Pod (or List or PodList of Pods), ConfigMap or Secret') },
    ]);
    expect(refused({ apiVersion: 'apps/v1', kind: 'Deployment' })).toEqual([
      { path: 'apiVersion', message: expect.stringContaining('must be v1') },
    ]);
    expect(refused({ kind: 'Pod', id: 'x', containers: [] })).toEqual([
      { path: 'apiVersion', message: expect.stringContaining('must be v1') },
    ]);
  });

  it('reads a v1 List and a PodList as their items, each of which must be a Pod', () => {
    for (const kind of ['List', 'PodList']) {
      const parsed = parseManifests(
        JSON.stringify({ apiVersion: 'v1', kind, items: [pod(), pod({}, {}, { name: 'two' }), { id: 'old', containers: [] }] }),
        'list.json',
      );
      expect(parsed.manifests.map((m) => m.id)).toEqual(['web', 'two']);
      expect(parsed.rejected).toEqual([{ origin: 'list.json', index: 2, errors: [{ path: 'apiVersion', message: expect.any(String) }] }]);
    }
  });

  it('reads multi-document YAML mixing v1 Pods and 2014 manifests', () => {
    const text = [
      'apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: ns}\nspec:\n  containers: [{name: c, image: busybox, args: [sleep, "1"]}]',
      'version: v1beta1\nid: b\ncontainers: [{name: c, image: busybox, command: [sleep, "1"], ports: [{containerPort: 80}]}]',
      'apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: c}\n  spec: {containers: []}',
    ].join('\n---\n');
    const parsed = parseManifests(text, 'mixed.yaml');
    expect(parsed.rejected).toEqual([]);
    expect(parsed.manifests.map((m) => m.id)).toEqual(['a.ns', 'b', 'c']);
    expect(parsed.manifests[0]?.containers[0]?.command).toEqual(parsed.manifests[1]?.containers[0]?.command);
    // The 2014 rule still publishes b's port; v1 Pods publish only with hostPort.
    expect(parsed.manifests[1]?.containers[0]?.ports[0]?.hostPort).toBe(80);
  });

  it('counts the items of a v1 List against maxManifests', () => {
    const text = JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [pod(), pod(), pod()] });
    expect(parseManifests(text, 'l.json', { maxManifests: 2 }).unreadable?.message).toContain('holds 3 manifests');
  });
});
