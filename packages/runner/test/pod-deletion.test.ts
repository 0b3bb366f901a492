import { describe, expect, it } from '@jest/globals';
import { checkedManifest } from '@kubelet-ts/conformance';
import type { ContainerManifest } from '@kubelet-ts/core';
import { agentFixture } from './agent-fixture.js';
import { podListOf, ScriptedSource, settle } from './helpers.js';

/** Pod `web`: two containers that ignore the stop signal (set below), a spec grace of 30 s, a preStop hook on `a`. */
const web = (extra: Record<string, unknown> = {}): ContainerManifest =>
  checkedManifest({
    id: 'web',
    uuid: 'uid-web',
    terminationGracePeriodSeconds: 30,
    containers: [
      { name: 'a', image: 'app:1', lifecycle: { preStop: { exec: { command: ['sh', '-c', 'echo bye'] } } } },
      { name: 'b', image: 'app:1' },
    ],
    ...extra,
  });

describe('deletion as a state: Terminating until nothing of the pod runs (issue 42)', () => {
  const f = agentFixture();

  const started = async (manifests: ContainerManifest[]) => {
    const source = new ScriptedSource('a', { initial: manifests });
    const k = f.kubelet([source]);
    await k.start();
    await settle();
    await k.sync();
    for (const c of f.of('web')) f.runtime.hangOnStop(c.id);
    return { source, k };
  };
  const listed = async (k: Parameters<typeof podListOf>[0]) =>
    (await podListOf(k)).items.map((p) => ({
      name: p.metadata['name'],
      deletionTimestamp: p.metadata['deletionTimestamp'],
      deletionGracePeriodSeconds: p.metadata['deletionGracePeriodSeconds'],
    }));

  it('a pod marked for deletion with a grace of 2 s, whose spec says 30, stops within 2 s (preStop first), starts nothing, and says when it is done', async () => {
    const { source, k } = await started([web()]);
    f.runtime.onExec(f.one('web', 'a').id, () => ({ exitCode: 0, output: 'bye\n' }));
    const marked = web({ deletionTimestamp: '2026-12-06T10:00:00Z', deletionGracePeriodSeconds: 2 });
    source.push([marked]);
    await settle();
    // Visible, marked, while its containers stop.
    expect(await listed(k)).toEqual([{ name: 'web', deletionTimestamp: '2026-12-06T10:00:00Z', deletionGracePeriodSeconds: 2 }]);
    expect(f.events.ofType('ContainerKilled', 'web').map((e) => [e.container, e.reason, e.message])).toEqual([
      ['a', 'Killing', expect.stringContaining('grace 2 s')],
      ['b', 'Killing', expect.stringContaining('grace 2 s')],
    ]);
    expect(f.runtime.calls.filter((c) => c.op === 'exec').map((c) => c.target)).toEqual([f.one('web', 'a').id]);
    await f.clock.advance(1_999);
    expect(f.of('web').map((c) => c.state)).toEqual(['running', 'running']);
    expect(f.events.ofType('PodTerminated', 'web')).toEqual([]);
    await f.clock.advance(1);
    await settle();
    expect(f.of('web').map((c) => c.state)).toEqual(['exited', 'exited']);
    expect(f.events.ofType('PodTerminated', 'web').map((e) => e.message)).toEqual([expect.stringContaining('has no container running')]);
    // Nothing restarts it, pass after pass; it is said once.
    for (let i = 0; i < 5; i++) await k.sync();
    expect(f.of('web').map((c) => c.state)).toEqual(['exited', 'exited']);
    expect(f.events.ofType('PodTerminated', 'web')).toHaveLength(1);
    expect(f.runtime.callCount('create')).toBe(2);
    // Once the source drops it, what is left of it goes.
    source.push([]);
    await settle();
    await k.sync();
    expect(f.of('web')).toEqual([]);
    expect(await listed(k)).toEqual([]);
  });

  it('a pod that leaves its source is shown Terminating, marked with its spec grace, until its containers and sandbox are gone', async () => {
    const { source, k } = await started([web()]);
    source.push([]);
    await settle();
    const shown = await listed(k);
    expect(shown).toEqual([{ name: 'web', deletionTimestamp: new Date(1_000_000).toISOString(), deletionGracePeriodSeconds: 30 }]);
    const table = (await podListOf(k)).items[0]!;
    expect(table.metadata['uid']).toBe('uid-web');
    await f.clock.advance(29_999);
    expect(await listed(k)).toHaveLength(1);
    expect(f.events.ofType('PodTerminated', 'web')).toEqual([]);
    await f.clock.advance(1);
    await settle();
    await k.sync();
    expect(f.of('web')).toEqual([]);
    expect(await f.runtime.listSandboxes()).toEqual([]);
    expect(await listed(k)).toEqual([]);
    expect(f.events.ofType('PodTerminated', 'web').map((e) => e.message)).toEqual([
      expect.stringContaining('containers and sandbox are gone'),
    ]);
  });

  it('a pod that leaves while removals are held (a source not seen yet) is Terminating once they are allowed, and said terminated', async () => {
    const a = new ScriptedSource('a', { initial: [web()] });
    const late = new ScriptedSource('late');
    const k = f.kubelet([a, late]);
    await k.start();
    await settle();
    await k.sync();
    expect(f.of('web').map((c) => c.state)).toEqual(['running', 'running']);
    // Held: the unseen source may still ask for it; nothing of it is stopped, nothing is said.
    a.push([]);
    await settle();
    await k.sync();
    expect(f.of('web').map((c) => c.state)).toEqual(['running', 'running']);
    expect(f.events.ofType('PodTerminated', 'web')).toEqual([]);
    late.push([]);
    await settle();
    await k.sync();
    await settle();
    expect(f.of('web')).toEqual([]);
    expect(f.events.ofType('PodTerminated', 'web').map((e) => e.message)).toEqual([
      expect.stringContaining('containers and sandbox are gone'),
    ]);
  });

  it('a pod made again under the same id while the old one terminates is the new one, not Terminating', async () => {
    const { source, k } = await started([web()]);
    source.push([]);
    await settle();
    expect(await listed(k)).toHaveLength(1);
    source.push([web({ uuid: 'uid-web-2' })]);
    await settle();
    expect(await listed(k)).toEqual([{ name: 'web', deletionTimestamp: undefined, deletionGracePeriodSeconds: undefined }]);
    await f.clock.advance(30_000);
    await settle();
    await k.sync();
    await settle();
    expect(
      f
        .of('web')
        .filter((c) => c.state === 'running')
        .map((c) => c.labels['io.kubernetes.pod.uid']),
    ).toEqual(['uid-web-2', 'uid-web-2']);
  });

  it('refuses a deletion mark that is not a time, or a grace without a mark, naming the field', () => {
    expect(() => web({ deletionTimestamp: 'yesterday' })).toThrow(/"deletionTimestamp","message":"must be an RFC 3339 time/);
    expect(() => web({ deletionGracePeriodSeconds: 2 })).toThrow(
      /"deletionGracePeriodSeconds","message":"is given only with deletionTimestamp/,
    );
    expect(() => web({ deletionTimestamp: '2026-12-06T10:00:00Z', deletionGracePeriodSeconds: -1 })).toThrow(/deletionGracePeriodSeconds/);
  });
});
