import { describe, expect, it } from '@jest/globals';
import { SourceMux } from '../src/mux.js';
import { pod } from './helpers.js';

describe('SourceMux', () => {
  it('unions the latest sets of all sources, each pod tagged with its source', () => {
    const mux = new SourceMux(['file', 'http']);
    const web = pod('web');
    const db = pod('db', 'postgres:16');
    const cache = pod('cache', 'redis:7');
    mux.update('file', [web, db]);
    mux.update('http', [cache]);
    expect(mux.desired()).toEqual({
      pods: [
        { manifest: web, source: 'file' },
        { manifest: db, source: 'file' },
        { manifest: cache, source: 'http' },
      ],
      conflicts: [],
      refused: [],
    });
  });

  it('replaces a source set as a whole (SET semantics), leaving the other sources alone', () => {
    const mux = new SourceMux(['file', 'http']);
    const web = pod('web');
    const cache = pod('cache', 'redis:7');
    mux.update('file', [web, pod('db')]);
    mux.update('http', [cache]);
    mux.update('file', [web]);
    expect(mux.desired().pods.map((p) => [p.manifest.id, p.source])).toEqual([
      ['web', 'file'],
      ['cache', 'http'],
    ]);
    mux.update('file', []);
    expect(mux.desired().pods.map((p) => p.manifest.id)).toEqual(['cache']);
  });

  it('runs the earlier source manifest when two sources give the same id, and reports the conflict', () => {
    const mux = new SourceMux(['file', 'http']);
    const fromFile = pod('web', 'nginx:1');
    const fromHttp = pod('web', 'nginx:2');
    // The later source delivers first: order of configuration decides, not order of arrival.
    mux.update('http', [fromHttp]);
    mux.update('file', [fromFile]);
    const { pods, conflicts } = mux.desired();
    expect(pods).toEqual([{ manifest: fromFile, source: 'file' }]);
    expect(conflicts).toEqual([{ podId: 'web', winner: 'file', loser: 'http' }]);
  });

  it('drops the conflict once the loser no longer gives that id', () => {
    const mux = new SourceMux(['a', 'b']);
    mux.update('a', [pod('web')]);
    mux.update('b', [pod('web', 'nginx:2'), pod('other')]);
    expect(mux.desired().conflicts).toHaveLength(1);
    mux.update('b', [pod('other')]);
    expect(mux.desired().conflicts).toEqual([]);
    expect(mux.desired().pods.map((p) => [p.manifest.id, p.source])).toEqual([
      ['web', 'a'],
      ['other', 'b'],
    ]);
  });

  it('says nothing changed when a source delivers the same manifest objects again', () => {
    const mux = new SourceMux(['file']);
    const web = pod('web');
    const db = pod('db');
    const set = [web, db];
    expect(mux.update('file', set)).toBe(true);
    expect(mux.update('file', set)).toBe(false);
    // A new array holding the same objects, in the same order, is no change either.
    expect(mux.update('file', [web, db])).toBe(false);
    // Order, a different object (even with equal content) or a different length is a change.
    expect(mux.update('file', [db, web])).toBe(true);
    expect(mux.update('file', [db, pod('web')])).toBe(true);
    expect(mux.update('file', [db])).toBe(true);
  });

  it('treats a first empty delivery as a change, and a repeated empty one as none', () => {
    const mux = new SourceMux(['file']);
    expect(mux.update('file', [])).toBe(true);
    expect(mux.update('file', [])).toBe(false);
  });

  it('reflects an update in desired() right away', () => {
    const mux = new SourceMux(['file']);
    mux.update('file', [pod('web')]);
    const before = mux.desired();
    expect(mux.desired()).toBe(before);
    mux.update('file', [pod('db')]);
    expect(mux.desired().pods.map((p) => p.manifest.id)).toEqual(['db']);
  });

  it('counts a source as seen once it has delivered, an empty set included', () => {
    const mux = new SourceMux(['file', 'http', 'etcd']);
    expect(mux.allSeen()).toBe(false);
    expect(mux.unseen()).toEqual(['file', 'http', 'etcd']);

    mux.update('http', [pod('web')]);
    expect(mux.allSeen()).toBe(false);
    expect(mux.unseen()).toEqual(['file', 'etcd']);

    mux.update('file', []);
    expect(mux.allSeen()).toBe(false);
    expect(mux.unseen()).toEqual(['etcd']);

    mux.update('etcd', []);
    expect(mux.allSeen()).toBe(true);
    expect(mux.unseen()).toEqual([]);

    // Going back to an empty set does not make a source unseen.
    mux.update('http', []);
    expect(mux.allSeen()).toBe(true);
  });

  it('has every source seen when there are none', () => {
    const mux = new SourceMux([]);
    expect(mux.allSeen()).toBe(true);
    expect(mux.unseen()).toEqual([]);
    expect(mux.desired()).toEqual({ pods: [], conflicts: [], refused: [] });
  });

  it('throws on an update from a source it does not know, and keeps its state', () => {
    const mux = new SourceMux(['file']);
    expect(() => mux.update('http', [pod('web')])).toThrow(/unknown source http/);
    expect(mux.desired().pods).toEqual([]);
    expect(mux.unseen()).toEqual(['file']);
  });

  it('refuses duplicate source names', () => {
    expect(() => new SourceMux(['file', 'http', 'file'])).toThrow(/source names must be unique/);
  });
});
