import { describe, expect, it } from '@jest/globals';
import { checkedManifest } from '@kubelet-ts/conformance';
import { Labels, type ContainerManifest } from '@kubelet-ts/core';
import { parseManifests } from '@kubelet-ts/manifest';
import { agentFixture } from './agent-fixture.js';
import { ScriptedSource, settle } from './helpers.js';

/** A pod `web` of namespace `shop` as a source gives it, with the uid the source gives it. */
const web = (uuid: string): ContainerManifest =>
  checkedManifest({
    id: 'web.shop',
    namespace: 'shop',
    uuid,
    terminationGracePeriodSeconds: 3,
    containers: [
      { name: 'app', image: 'app:1' },
      { name: 'side', image: 'side:1' },
    ],
  });

describe('pod identity: the kubelet’s uid, namespace and name on what the agent makes (issue 42)', () => {
  const f = agentFixture();

  it('labels every container and the sandbox with io.kubernetes.pod.uid, .namespace and .name', async () => {
    const source = new ScriptedSource('a', { initial: [web('6f1c3c62-1d2e-11e4-8c21-0800200c9a66')] });
    const k = f.kubelet([source]);
    await k.start();
    await settle();
    await k.sync();
    const identity = {
      'io.kubernetes.pod.uid': '6f1c3c62-1d2e-11e4-8c21-0800200c9a66',
      'io.kubernetes.pod.namespace': 'shop',
      'io.kubernetes.pod.name': 'web',
    };
    expect(f.of('web.shop').map((c) => c.labels)).toEqual([expect.objectContaining(identity), expect.objectContaining(identity)]);
    const sandboxes = await f.runtime.listSandboxes();
    expect(sandboxes.map((s) => s.labels)).toEqual([expect.objectContaining(identity)]);
  });

  it('replaces a pod made again under its name with a new uid: the old containers and sandbox go, the new ones start, once', async () => {
    const source = new ScriptedSource('a', { initial: [web('uid-1')] });
    const k = f.kubelet([source]);
    await k.start();
    await settle();
    await k.sync();
    const before = f.of('web.shop').map((c) => c.id);
    const [oldSandbox] = await f.runtime.listSandboxes();
    expect(before).toHaveLength(2);

    source.push([web('uid-2')]);
    await settle();
    await k.sync();
    const after = f.of('web.shop');
    expect(after.map((c) => [c.labels[Labels.containerName], c.labels[Labels.podUid], c.state]).sort()).toEqual([
      ['app', 'uid-2', 'running'],
      ['side', 'uid-2', 'running'],
    ]);
    expect(after.some((c) => before.includes(c.id))).toBe(false);
    // A new pod: no restart carried over from the old one.
    expect(after.map((c) => c.labels[Labels.restartCount])).toEqual([undefined, undefined]);
    const sandboxes = await f.runtime.listSandboxes();
    expect(sandboxes.map((s) => [s.labels[Labels.podUid], s.id === oldSandbox!.id])).toEqual([['uid-2', false]]);
    const removed = f.events.events.filter((e) => e.type === 'ContainerRemoved' || e.type === 'SandboxRemoved');
    expect(removed.map((e) => e.message)).toEqual([
      expect.stringMatching(/\(pod-replaced\)$/),
      expect.stringMatching(/\(pod-replaced\)$/),
      expect.stringMatching(/\(pod-replaced; and the pod volumes\)$/),
    ]);
    // The old containers were stopped with their own grace.
    expect(f.events.events.filter((e) => e.type === 'ContainerStopped').map((e) => e.message)).toEqual([
      expect.stringContaining('(pod-replaced; grace 3 s)'),
      expect.stringContaining('(pod-replaced; grace 3 s)'),
    ]);

    // The same uid again: nothing more to do.
    const now = f.of('web.shop').map((c) => c.id);
    source.push([web('uid-2')]);
    await settle();
    expect(await k.sync()).toMatchObject({ actions: 0 });
    expect(f.of('web.shop').map((c) => c.id)).toEqual(now);
  });

  it('runs a.b in default and a in b as two pods, each with its own key, containers and status', async () => {
    const parsed = parseManifests(
      [
        'apiVersion: v1\nkind: Pod\nmetadata: {name: a.b, uid: uid-ab}\nspec: {containers: [{name: app, image: "app:1"}]}',
        'apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: b, uid: uid-a}\nspec: {containers: [{name: app, image: "app:2"}]}',
      ].join('\n---\n'),
      'pods.yaml',
    );
    expect(parsed.rejected).toEqual([]);
    const source = new ScriptedSource('a', { initial: parsed.manifests });
    const k = f.kubelet([source]);
    await k.start();
    await settle();
    await k.sync();
    const running = f
      .ours()
      .filter((c) => c.state === 'running')
      .map((c) => [c.labels[Labels.podNamespace], c.labels[Labels.podName], c.labels[Labels.podUid], c.image])
      .sort();
    expect(running).toEqual([
      ['b', 'a', 'uid-a', 'app:2'],
      ['default', 'a.b', 'uid-ab', 'app:1'],
    ]);
    expect((await f.runtime.listSandboxes()).map((s) => s.labels[Labels.podUid]).sort()).toEqual(['uid-a', 'uid-ab']);
    const statuses = await k.podStatuses();
    expect([...statuses].sort((x, y) => x.uid.localeCompare(y.uid)).map((r) => [r.key, r.status.phase])).toEqual([
      [{ namespace: 'b', name: 'a', uid: 'uid-a' }, 'Running'],
      [{ namespace: 'default', name: 'a.b', uid: 'uid-ab' }, 'Running'],
    ]);
    // No conflict was reported: neither pod hides the other.
    expect(f.events.events.filter((e) => e.type === 'ManifestConflict')).toEqual([]);
  });
});
