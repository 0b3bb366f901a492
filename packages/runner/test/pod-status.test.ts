import { describe, expect, it } from '@jest/globals';
import { checkedManifest, ManualClock } from '@kubelet-ts/conformance';
import { podUid, type ContainerManifest, type ContainerView, type PodView } from '@kubelet-ts/core';
import { PodStatusManager } from '../src/pod-status-manager.js';
import { agentFixture, HOST, SYNC_MS } from './agent-fixture.js';
import { ScriptedSource, settle } from './helpers.js';

const once = (id: string, restartPolicy = 'Never'): ContainerManifest =>
  checkedManifest({ id, restartPolicy, containers: [{ name: 'main', image: 'app:1' }] });

describe('the pod status model: per uid, versioned, with memory (issue 42)', () => {
  const f = agentFixture();

  const ready = async (
    k: {
      podStatuses(): Promise<
        Array<{
          uid: string;
          version: number;
          status: { phase: string; conditions: readonly { type: string; status: string; lastTransitionTime?: string }[] };
        }>
      >;
    },
    id: string,
  ) => {
    const uid = podUid(once(id), { node: HOST, source: 'a' });
    const record = (await k.podStatuses()).find((r) => r.uid === uid)!;
    const condition = record.status.conditions.find((c) => c.type === 'Ready')!;
    return { version: record.version, phase: record.status.phase, ready: condition.status, since: condition.lastTransitionTime };
  };

  it('changes Ready’s lastTransitionTime once per transition across 100 passes, and the version once per change', async () => {
    const source = new ScriptedSource('a', { initial: [once('job')] });
    const k = f.kubelet([source]);
    await k.start();
    await settle();
    await k.sync();
    const first = await ready(k, 'job');
    expect(first).toMatchObject({ phase: 'Running', ready: 'True', since: '1970-01-01T00:16:40Z' });
    for (let i = 0; i < 100; i++) {
      await f.clock.advance(1_000);
      await k.sync();
      expect(await ready(k, 'job')).toEqual(first);
    }
    f.runtime.exit(f.one('job', 'main').id, 0);
    await settle();
    await k.sync();
    const done = await ready(k, 'job');
    expect(done).toEqual({ version: first.version + 1, phase: 'Succeeded', ready: 'False', since: '1970-01-01T00:18:20Z' });
    for (let i = 0; i < 100; i++) {
      await f.clock.advance(1_000);
      await k.sync();
      expect(await ready(k, 'job')).toEqual(done);
    }
  });

  it('tells a watcher the uid of each pod whose status changed, once per change, and of a pod that went', async () => {
    const source = new ScriptedSource('a', { initial: [once('a'), once('b')] });
    const k = f.kubelet([source]);
    await k.start();
    await settle();
    await k.sync();
    await k.podStatuses();
    const told: string[][] = [];
    const stop = k.watchPodStatuses((uids) => told.push([...uids]));
    const uidOf = (id: string) => podUid(once(id), { node: HOST, source: 'a' });
    f.runtime.exit(f.one('a', 'main').id, 0);
    await settle();
    await k.sync();
    await settle();
    await k.sync();
    await settle();
    expect(told).toEqual([[uidOf('a')]]);
    source.push([once('a')]);
    await settle();
    await k.sync();
    await settle();
    // b on its way out: its container stops, goes, then b is forgotten; each change told once, naming b alone.
    expect(told.length).toBeGreaterThan(1);
    expect(told.slice(1).every((uids) => uids.length === 1 && uids[0] === uidOf('b'))).toBe(true);
    expect((await k.podStatuses()).map((r) => r.uid)).toEqual([uidOf('a')]);
    const count = told.length;
    for (let i = 0; i < 5; i++) await k.sync();
    await settle();
    expect(told).toHaveLength(count);
    stop();
  });

  it('never runs a finished pod again, even when its container is removed by hand; its status stays Succeeded', async () => {
    const source = new ScriptedSource('a', { initial: [once('job')] });
    const k = f.kubelet([source]);
    await k.start();
    await settle();
    await k.sync();
    const id = f.one('job', 'main').id;
    f.runtime.exit(id, 0);
    await settle();
    await k.sync();
    expect((await ready(k, 'job')).phase).toBe('Succeeded');
    await f.runtime.remove(id, { force: true });
    for (let i = 0; i < 3; i++) {
      await f.clock.advance(SYNC_MS);
      await k.sync();
    }
    expect(f.of('job')).toEqual([]);
    expect(f.runtime.callCount('create')).toBe(1);
    expect((await ready(k, 'job')).phase).toBe('Succeeded');
  });

  it('keeps a Succeeded pod Succeeded across an agent restart', async () => {
    const source = new ScriptedSource('a', { initial: [once('job')] });
    const k1 = f.kubelet([source]);
    await k1.start();
    await settle();
    await k1.sync();
    f.runtime.exit(f.one('job', 'main').id, 0);
    await settle();
    await k1.sync();
    expect((await ready(k1, 'job')).phase).toBe('Succeeded');
    await k1.close();
    const k2 = f.kubelet([new ScriptedSource('a', { initial: [once('job')] })]);
    await k2.start();
    await settle();
    for (let i = 0; i < 3; i++) await k2.sync();
    expect(await ready(k2, 'job')).toMatchObject({ phase: 'Succeeded', ready: 'False' });
    expect(f.of('job').map((c) => c.state)).toEqual(['exited']);
  });
});

describe('PodStatusManager', () => {
  const node = { runtime: 'memory' };
  const manifest = once('web');
  const view = (container: Partial<ContainerView>): PodView => ({
    id: 'web',
    source: 'a',
    containers: [
      { name: 'main', image: 'app:1', state: 'missing', restartCount: 0, started: false, ready: false, ...container } as ContainerView,
    ],
  });

  it('never takes a terminal phase back, keeps startTime, and derives nothing again from the same view', async () => {
    const clock = new ManualClock(1_000_000);
    const model = new PodStatusManager(clock);
    const ran = view({ id: 'c1', state: 'exited', exitCode: 0, startedAt: 1_000_000, finishedAt: 1_001_000 });
    const [succeeded] = model.observe([{ uid: 'u', view: ran, manifest }], node);
    expect(succeeded).toMatchObject({ version: 1, status: { phase: 'Succeeded', startTime: '1970-01-01T00:16:40Z' } });
    // Its container removed by hand: the view reads as waiting, the phase stays.
    await clock.advance(1_000_000);
    const [after] = model.observe([{ uid: 'u', view: view({}), manifest }], node);
    expect(after).toMatchObject({ version: 2, status: { phase: 'Succeeded', startTime: '1970-01-01T00:16:40Z' } });
    expect(model.observe([{ uid: 'u', view: view({}), manifest }], node)[0]!.version).toBe(2);
    // Gone from what is observed: forgotten, and a new pod of that uid starts from version 1.
    const told: string[][] = [];
    model.watch((uids) => told.push([...uids]));
    model.observe([], node);
    expect(told).toEqual([['u']]);
    expect(model.get('u')).toBeUndefined();
    expect(model.observe([{ uid: 'u', view: view({}), manifest }], node)[0]).toMatchObject({ version: 1, status: { phase: 'Pending' } });
  });
});
