import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import {
  KubeletError,
  Labels,
  buildContainerSpec,
  type ContainerManifest,
  type ContainerSpec,
  type ContainerSummary,
} from '@kubelet-ts/core';
import { ManualClock, MemoryRuntime } from '@kubelet-ts/runtime-memory';
import { Kubelet, type KubeletOptions } from '../src/kubelet.js';
import type { PassResult } from '../src/sync-loop.js';
import { manifest, pod, RecordingEventSink, RecordingLogger, settle, ScriptedSource } from './helpers.js';

const HOST = 'node-a';
const SYNC_MS = 10_000;

describe('Kubelet', () => {
  let clock: ManualClock;
  let runtime: MemoryRuntime;
  let events: RecordingEventSink;
  let opened: Kubelet[];

  beforeEach(() => {
    clock = new ManualClock(1_000_000);
    runtime = new MemoryRuntime({ clock, pullable: 'any' });
    events = new RecordingEventSink();
    opened = [];
  });

  afterEach(async () => {
    await Promise.all(opened.map((k) => k.close()));
  });

  function kubelet(sources: readonly ScriptedSource[], options: Partial<KubeletOptions> = {}): Kubelet {
    const k = new Kubelet({ runtime, sources, clock, events, hostname: HOST, syncFrequencyMs: SYNC_MS, ...options });
    opened.push(k);
    return k;
  }

  /** Resolves with the next 'pass' event. */
  function nextPass(k: Kubelet): Promise<PassResult> {
    return new Promise((resolve) => k.once('pass', resolve));
  }

  const ours = (node = HOST) => runtime.snapshot().filter((c) => c.labels[Labels.node] === node);
  const of = (podId: string, node = HOST) => ours(node).filter((c) => c.labels[Labels.manifestId] === podId);
  const one = (podId: string, container = 'web'): ContainerSummary => {
    const found = of(podId).filter((c) => c.labels[Labels.containerName] === container);
    if (found.length !== 1) throw new Error(`expected one ${container} container of ${podId}, found ${found.length}`);
    return found[0] as ContainerSummary;
  };

  /** Makes containers for `m` as if an agent on `node` had created them, and starts them. */
  async function preexisting(m: ContainerManifest, node = HOST, source = 'b'): Promise<string[]> {
    const ids: string[] = [];
    for (const c of m.containers) {
      runtime.addImage(c.image);
      const created = await runtime.create(buildContainerSpec(m, c, { node, source }));
      await runtime.start(created.id);
      ids.push(created.id);
    }
    return ids;
  }

  async function foreign(name: string, labels: Record<string, string> = {}): Promise<string> {
    runtime.addImage('busybox:1');
    const spec: ContainerSpec = { name, podId: name, image: 'busybox:1', env: {}, ports: [], podPorts: [], mounts: [], labels };
    const created = await runtime.create(spec);
    await runtime.start(created.id);
    return created.id;
  }

  describe('running what sources ask for', () => {
    it('creates and starts the containers of a pushed manifest, labelled as ours, and records events', async () => {
      const a = new ScriptedSource('a');
      const k = kubelet([a]);
      await k.start();
      const m = manifest('web', [
        { name: 'nginx', image: 'nginx:1.25', ports: [{ containerPort: 80, hostPort: 8080 }], env: [{ name: 'MODE', value: 'prod' }] },
        { name: 'sidecar', image: 'busybox:1.36' },
      ]);
      a.push([m]);
      await settle();

      const containers = runtime.snapshot();
      expect(containers).toHaveLength(2);
      for (const c of containers) {
        expect(c.state).toBe('running');
        expect(c.labels).toMatchObject({ [Labels.manifestId]: 'web', [Labels.source]: 'a', [Labels.node]: HOST });
        expect(c.labels[Labels.specHash]).toMatch(/^v1-[0-9a-f]{16}$/);
      }
      expect(containers.map((c) => [c.labels[Labels.containerName], c.image]).sort()).toEqual([
        ['nginx', 'nginx:1.25'],
        ['sidecar', 'busybox:1.36'],
      ]);
      const details = await runtime.inspect(one('web', 'nginx').id);
      expect(details.spec).toMatchObject({ podId: 'web', env: { MODE: 'prod' }, ports: [{ containerPort: 80, hostPort: 8080, protocol: 'TCP' }] });

      for (const container of ['nginx', 'sidecar']) {
        const mine = events.events.filter((e) => e.container === container).map((e) => e.type);
        expect(mine).toEqual(['ImagePulled', 'ContainerCreated', 'ContainerStarted']);
      }
      expect(events.ofType('ContainerStarted')).toEqual(
        expect.arrayContaining([expect.objectContaining({ podId: 'web', container: 'nginx', reason: 'new', time: 1_000_000 })]),
      );
      expect(events.ofType('ContainerFailed')).toEqual([]);
    });

    it('lower-cases the hostname it labels containers with', async () => {
      const a = new ScriptedSource('a', { initial: [pod('web')] });
      const k = kubelet([a], { hostname: 'Node-A' });
      expect(k.hostname).toBe('node-a');
      await k.start();
      await settle();
      expect(one('web').labels[Labels.node]).toBe('node-a');
    });

    it('sync() resolves with the counts of the pass', async () => {
      const a = new ScriptedSource('a');
      const k = kubelet([a]);
      await k.start();
      a.push([manifest('web', [{ name: 'nginx', image: 'nginx:1' }, { name: 'sidecar', image: 'busybox:1' }]), pod('db', 'postgres:16')]);
      await settle();
      const quiet = await k.sync();
      expect(quiet).toMatchObject({ desired: 2, actions: 0, failures: 0, held: 0, startedAt: 1_000_000 });
      expect(quiet.error).toBeUndefined();

      runtime.exit(one('db').id, 1);
      runtime.setFault('create', (call) => (call.target?.startsWith('cache--') ? new KubeletError('Internal', 'disk full') : undefined));
      const pass = nextPass(k);
      a.push([
        manifest('web', [{ name: 'nginx', image: 'nginx:1' }, { name: 'sidecar', image: 'busybox:1' }]), // same content: no action
        pod('db', 'postgres:16'),
        manifest('cache', [{ name: 'cache', image: 'redis:7' }]),
      ]);
      const result = await pass;
      // db: waits out its crash back-off; cache: create (fails).
      expect(result).toMatchObject({ desired: 3, actions: 1, failures: 1, held: 0 });
      expect(k.status()).toMatchObject({ hostname: HOST, lastPass: result });
      // sync() runs a pass of its own: only the failed creation is left to do.
      const retry = await k.sync();
      expect(retry).toMatchObject({ desired: 3, actions: 1, failures: 1, held: 0 });
      expect(k.status().lastPass).toBe(retry);
    });

    it('counts a pass in status() and reports each source', async () => {
      const a = new ScriptedSource('a');
      const b = new ScriptedSource('b');
      const k = kubelet([a, b]);
      await k.start();
      a.push([pod('web'), pod('db')]);
      await settle();
      const status = k.status();
      expect(status.passes).toBeGreaterThanOrEqual(1);
      expect(status.sources).toEqual([
        { name: 'a', seen: true, manifests: 2 },
        { name: 'b', seen: false, manifests: 0 },
      ]);
    });

    it('refuses two sources with the same name', () => {
      expect(() => new Kubelet({ runtime, sources: [new ScriptedSource('a'), new ScriptedSource('a')], clock, hostname: HOST })).toThrow(/unique/);
    });

    it('cannot be started twice', async () => {
      const k = kubelet([new ScriptedSource('a')]);
      await k.start();
      await expect(k.start()).rejects.toThrow(/cannot start/);
    });
  });

  describe('what it leaves alone', () => {
    it('keeps containers of pods no source asks for until every source has delivered', async () => {
      const oldIds = await preexisting(manifest('old', [{ name: 'web', image: 'nginx:0' }]));
      const a = new ScriptedSource('a');
      const b = new ScriptedSource('b');
      const k = kubelet([a, b]);
      await k.start();
      a.push([pod('web')]);
      await settle();

      const waiting = await k.sync();
      expect(waiting.held).toBe(1);
      expect(of('old').map((c) => [c.id, c.state])).toEqual([[oldIds[0], 'running']]);
      expect(runtime.callCount('stop')).toBe(0);
      expect(runtime.callCount('remove')).toBe(0);
      expect(one('web').state).toBe('running'); // creation is not held back
      expect(k.status().sources.map((s) => [s.name, s.seen])).toEqual([
        ['a', true],
        ['b', false],
      ]);

      // Time alone does not release the hold.
      await clock.advance(3 * SYNC_MS);
      expect(of('old')).toHaveLength(1);

      b.push([]); // an empty set counts as delivered
      await settle();
      expect(of('old')).toEqual([]);
      expect(events.types('old')).toEqual(['ContainerStopped', 'ContainerRemoved']);
      const after = await k.sync();
      expect(after).toMatchObject({ held: 0, actions: 0 });
    });

    // Seen after a SIGKILL and restart on a real engine: the file source's first delivery landed
    // while the first pass was listing, and the pass stopped every pod of that source.
    it('does not stop the pods of a source whose first set arrives while a pass is listing', async () => {
      const ids = await preexisting(manifest('web', [{ name: 'web', image: 'nginx:1' }]));
      const a = new ScriptedSource('a', { initial: [] });
      const b = new ScriptedSource('b');
      runtime.setLatency('list', 1_000);
      const k = kubelet([a, b]);
      await k.start(); // a's set asks for a pass, whose list now takes a second
      await settle();
      b.push([manifest('web', [{ name: 'web', image: 'nginx:1' }])]);
      runtime.setLatency('list', 0); // the list under way still takes its second
      await clock.advance(1_000);
      await k.sync();

      expect(of('web').map((c) => [c.id, c.state])).toEqual([[ids[0], 'running']]);
      expect(runtime.callCount('stop')).toBe(0);
      expect(events.types('web')).toEqual([]);
    });

    it('adopts the containers of a previous run instead of creating duplicates', async () => {
      const first = kubelet([new ScriptedSource('a', { initial: [pod('web'), pod('db', 'postgres:16')] })]);
      await first.start();
      await settle();
      await first.close();
      const before = runtime.snapshot();
      expect(before).toHaveLength(2);
      const creates = runtime.callCount('create');

      // A new agent, reading the same manifests again (new objects, same content).
      const second = kubelet([new ScriptedSource('a', { initial: [pod('web'), pod('db', 'postgres:16')] })]);
      await second.start();
      await settle();
      const result = await second.sync();
      expect(result).toMatchObject({ desired: 2, actions: 0, failures: 0 });
      expect(runtime.callCount('create')).toBe(creates);
      expect(runtime.callCount('stop')).toBe(0);
      expect(runtime.snapshot()).toEqual(before);
    });

    it('never stops or removes foreign containers or those of another node', async () => {
      const plain = await foreign('postgres-by-hand');
      const halfLabelled = await foreign('odd', { [Labels.containerName]: 'web' });
      const otherNode = await preexisting(pod('web'), 'node-b');
      const otherNodeGone = await preexisting(pod('gone'), 'node-b');
      const mineGone = await preexisting(pod('mine-gone'), HOST, 'a');

      const a = new ScriptedSource('a');
      const k = kubelet([a]);
      await k.start();
      a.push([pod('web')]);
      await settle();
      await k.sync();

      const byId = new Map(runtime.snapshot().map((c) => [c.id, c]));
      for (const id of [plain, halfLabelled, ...otherNode, ...otherNodeGone]) expect(byId.get(id)?.state).toBe('running');
      // Ours, and not desired: removed — the others stayed only because they are not ours.
      expect(byId.has(mineGone[0] as string)).toBe(false);
      // Pod 'web' on node-b does not stand in for ours.
      expect(one('web').state).toBe('running');
      const touched = runtime.calls.filter((c) => c.op === 'stop' || c.op === 'remove').map((c) => c.target);
      expect(touched).toEqual([mineGone[0], mineGone[0]]);
    });
  });

  describe('failures', () => {
    it('reports a container that fails to be created and still starts the other pods; the next pass retries', async () => {
      runtime.setFault('create', (call) => (call.target?.startsWith('bad--') ? new KubeletError('Internal', 'no space left on device') : undefined));
      const a = new ScriptedSource('a');
      const k = kubelet([a]);
      await k.start();
      a.push([pod('good-1'), manifest('broken', [{ name: 'bad', image: 'app:1' }]), pod('good-2')]);
      await settle();

      expect(one('good-1').state).toBe('running');
      expect(one('good-2').state).toBe('running');
      expect(of('broken')).toEqual([]);
      const failed = events.ofType('ContainerFailed');
      expect(failed).toHaveLength(1);
      expect(failed[0]).toMatchObject({ podId: 'broken', container: 'bad', reason: 'Internal' });
      expect(failed[0]?.message).toContain('no space left on device');

      const stillBroken = await k.sync();
      expect(stillBroken).toMatchObject({ actions: 1, failures: 1 });
      expect(events.ofType('ContainerFailed')).toHaveLength(2);

      runtime.setFault('create', undefined);
      const fixed = await k.sync();
      expect(fixed).toMatchObject({ actions: 1, failures: 0 });
      expect(one('broken', 'bad').state).toBe('running');
      expect(ours()).toHaveLength(3);
    });

    it('starts a container that was created but not started, rather than creating a second one', async () => {
      runtime.failNext('start', 'Unavailable');
      const a = new ScriptedSource('a');
      const k = kubelet([a]);
      await k.start();
      a.push([pod('web')]);
      await settle();

      const half = one('web');
      expect(half.state).toBe('created');
      expect(events.types('web')).toEqual(['ImagePulled', 'ContainerCreated', 'ContainerFailed']);
      expect(events.ofType('ContainerFailed')[0]).toMatchObject({ reason: 'Unavailable' });

      const result = await k.sync();
      expect(result).toMatchObject({ actions: 1, failures: 0 });
      expect(runtime.callCount('create')).toBe(1);
      expect(of('web')).toHaveLength(1);
      expect(one('web')).toMatchObject({ id: half.id, state: 'running' });
      expect(events.ofType('ContainerStarted', 'web')).toEqual([expect.objectContaining({ reason: 'not-started' })]);
    });

    it('removes a container the engine refuses to start, and creates it afresh on the next pass', async () => {
      runtime.failNext('start', 'Internal');
      const a = new ScriptedSource('a');
      const k = kubelet([a]);
      await k.start();
      a.push([pod('web')]);
      await settle();

      expect(of('web')).toEqual([]);
      expect(events.types('web')).toEqual(['ImagePulled', 'ContainerCreated', 'ContainerFailed']);
      expect(events.ofType('ContainerFailed')[0]!.message).toMatch(/injected Internal fault on start .*; removed the container, to create it afresh$/);

      const result = await k.sync();
      expect(result).toMatchObject({ actions: 1, failures: 0 });
      expect(runtime.callCount('create')).toBe(2);
      expect(one('web').state).toBe('running');
    });

    it('reports a pass whose list fails as Unavailable, loses nothing and converges on the next pass', async () => {
      const a = new ScriptedSource('a', { initial: [pod('web')] });
      const k = kubelet([a]);
      await k.start();
      await settle();
      const webId = one('web').id;

      runtime.failNext('list', 'Unavailable');
      a.push([pod('web'), pod('db')]);
      await settle();
      const failedPass = k.status().lastPass;
      expect(failedPass?.error).toBeInstanceOf(KubeletError);
      expect(failedPass).toMatchObject({ desired: 2, actions: 0, failures: 0, error: { code: 'Unavailable' } });
      expect(of('db')).toEqual([]);
      expect(one('web')).toMatchObject({ id: webId, state: 'running' });

      const next = await k.sync();
      expect(next.error).toBeUndefined();
      expect(next).toMatchObject({ desired: 2, actions: 1, failures: 0 });
      expect(one('db').state).toBe('running');
      expect(one('web').id).toBe(webId);
    });

    it('returns the list error from sync() as well', async () => {
      const k = kubelet([new ScriptedSource('a', { initial: [] })]);
      await k.start();
      await settle();
      runtime.failNext('list', 'Timeout');
      const result = await k.sync();
      expect(result.error).toMatchObject({ code: 'Timeout' });
      expect(result).toMatchObject({ actions: 0, failures: 0, held: 0 });
    });

    it('keeps running the pods of one source while another source crashes and restarts', async () => {
      const crashing = new ScriptedSource('etcd', { rejectStarts: 1, startError: new KubeletError('Unavailable', 'etcd: connection refused') });
      const healthy = new ScriptedSource('file', { initial: [pod('web')] });
      const k = kubelet([crashing, healthy]);
      await k.start();
      await settle();

      expect(one('web').state).toBe('running');
      const restarted = events.ofType('SourceRestarted');
      expect(restarted).toHaveLength(1);
      expect(restarted[0]).toMatchObject({ source: 'etcd', reason: 'Unavailable' });
      expect(restarted[0]?.message).toContain('etcd: connection refused');
      expect(restarted[0]?.message).toContain('1000 ms');
      expect(k.status().sources[0]).toMatchObject({ name: 'etcd', seen: false, lastError: 'etcd: connection refused' });

      await clock.advance(1000);
      expect(crashing.starts).toBe(2);
      crashing.push([pod('db')]);
      await settle();
      expect(one('db').state).toBe('running');
      expect(k.status().sources[0]).toEqual({ name: 'etcd', seen: true, manifests: 1 });
    });

    it('restarts a source that reports a fatal error, keeping its last set in force', async () => {
      const a = new ScriptedSource('a', { initial: [pod('web')] });
      const k = kubelet([a]);
      await k.start();
      await settle();
      const webId = one('web').id;
      a.fail(new KubeletError('Unavailable', 'watch closed'), true);
      await settle();
      expect(events.ofType('SourceRestarted')).toEqual([expect.objectContaining({ source: 'a', reason: 'Unavailable' })]);
      const result = await k.sync();
      expect(result).toMatchObject({ desired: 1, actions: 0 });
      expect(one('web').id).toBe(webId);
      await clock.advance(1000);
      expect(a.starts).toBe(2);
    });
  });

  describe('conflicts and rejected manifests', () => {
    it('runs one container set for an id given by two sources, the first source one, and reports it once', async () => {
      const a = new ScriptedSource('a');
      const b = new ScriptedSource('b');
      const k = kubelet([a, b]);
      await k.start();
      b.push([pod('web', 'nginx:b')]);
      a.push([pod('web', 'nginx:a')]);
      await settle();

      expect(of('web')).toHaveLength(1);
      expect(one('web')).toMatchObject({ image: 'nginx:a', state: 'running' });
      expect(one('web').labels[Labels.source]).toBe('a');
      const conflicts = events.ofType('ManifestConflict');
      expect(conflicts).toHaveLength(1);
      expect(conflicts[0]).toMatchObject({ podId: 'web', source: 'b', reason: 'Conflict' });
      expect(conflicts[0]?.message).toContain('running the one from a');

      // More passes, and re-deliveries of the same sets (same and new objects), do not repeat it.
      await clock.advance(SYNC_MS);
      await clock.advance(SYNC_MS);
      b.push([pod('web', 'nginx:b')]);
      await settle();
      await k.sync();
      expect(events.ofType('ManifestConflict')).toHaveLength(1);
      expect(of('web')).toHaveLength(1);
      expect(runtime.callCount('create')).toBe(1);
    });

    it('reports a manifest a source rejected and leaves running pods alone', async () => {
      const a = new ScriptedSource('a', { initial: [pod('web')] });
      const k = kubelet([a]);
      await k.start();
      await settle();
      const before = runtime.snapshot();
      const calls = runtime.callCount();

      a.fail(new KubeletError('InvalidManifest', 'broken.yaml: id: must be a DNS label', { fieldErrors: [{ path: 'id', message: 'must be a DNS label' }] }));
      await settle();
      const rejected = events.ofType('ManifestRejected');
      expect(rejected).toHaveLength(1);
      expect(rejected[0]).toMatchObject({ source: 'a', reason: 'InvalidManifest', message: 'broken.yaml: id: must be a DNS label' });
      expect(events.ofType('SourceRestarted')).toEqual([]);
      expect(k.status().sources[0]?.lastError).toBe('broken.yaml: id: must be a DNS label');

      const result = await k.sync();
      expect(result).toMatchObject({ desired: 1, actions: 0 });
      expect(runtime.snapshot()).toEqual(before);
      expect(runtime.calls.slice(calls).map((c) => c.op)).toEqual(['list']);
    });

    it('reports other non-fatal source errors as SourceError', async () => {
      const a = new ScriptedSource('a', { initial: [] });
      const k = kubelet([a]);
      await k.start();
      a.fail(new KubeletError('Unavailable', 'http: 503'));
      a.fail(new Error('odd'));
      expect(events.ofType('SourceError')).toEqual([
        expect.objectContaining({ source: 'a', reason: 'Unavailable', message: 'http: 503' }),
        expect.objectContaining({ source: 'a', reason: 'Internal', message: 'odd' }),
      ]);
    });
  });

  describe('changes', () => {
    it('recreates only the container whose spec changed', async () => {
      const a = new ScriptedSource('a');
      const k = kubelet([a]);
      await k.start();
      a.push([manifest('app', [{ name: 'web', image: 'nginx:1' }, { name: 'sidecar', image: 'busybox:1' }])]);
      await settle();
      const oldWeb = one('app', 'web');
      const sidecar = one('app', 'sidecar');
      const mark = events.events.length;

      a.push([manifest('app', [{ name: 'web', image: 'nginx:2' }, { name: 'sidecar', image: 'busybox:1' }])]);
      await settle();

      expect(of('app')).toHaveLength(2);
      expect(one('app', 'sidecar')).toEqual(sidecar);
      const newWeb = one('app', 'web');
      expect(newWeb.id).not.toBe(oldWeb.id);
      expect(newWeb).toMatchObject({ image: 'nginx:2', state: 'running' });
      expect(runtime.snapshot().some((c) => c.id === oldWeb.id)).toBe(false);
      const changed = events.events.slice(mark);
      expect(changed.every((e) => e.container === 'web')).toBe(true);
      expect(changed.map((e) => e.type)).toEqual(['ContainerStopped', 'ContainerRemoved', 'ImagePulled', 'ContainerCreated', 'ContainerStarted']);
      expect(changed.filter((e) => e.type !== 'ImagePulled').every((e) => e.reason === 'spec-changed')).toBe(true);
    });

    it('does not start the new version of a container while the old one could not be stopped', async () => {
      // Found by the chaos suite (seed 3): a failed stop used to be followed by the new container's
      // start, and both versions of app/web ran side by side until a later pass.
      const a = new ScriptedSource('a', { initial: [manifest('app', [{ name: 'web', image: 'nginx:1' }, { name: 'sidecar', image: 'busybox:1' }])] });
      const k = kubelet([a]);
      await k.start();
      await settle();
      const oldWeb = one('app', 'web');
      const mark = runtime.calls.length;

      runtime.failNext('stop', 'Unavailable');
      a.push([manifest('app', [{ name: 'web', image: 'nginx:2' }, { name: 'sidecar', image: 'busybox:2' }])]);
      await settle();

      // The old web keeps running alone; the sidecar, whose old version was stopped, is replaced.
      expect(one('app', 'web')).toMatchObject({ id: oldWeb.id, state: 'running' });
      expect(one('app', 'sidecar')).toMatchObject({ image: 'busybox:2', state: 'running' });
      expect(runtime.calls.slice(mark).filter((c) => c.op === 'create').map((c) => c.target)).toEqual([expect.stringMatching(/^sidecar--app--/)]);
      expect(events.ofType('ContainerFailed', 'app').map((e) => e.container)).toEqual(['web']);

      // The next pass stops it and starts its replacement.
      expect((await k.sync()).failures).toBe(0);
      expect(one('app', 'web')).toMatchObject({ image: 'nginx:2', state: 'running' });
    });

    it('stops then removes the containers of a manifest no source asks for any more', async () => {
      const a = new ScriptedSource('a', { initial: [manifest('web', [{ name: 'nginx', image: 'nginx:1' }, { name: 'sidecar', image: 'busybox:1' }]), pod('db')] });
      const k = kubelet([a]);
      await k.start();
      await settle();
      const webIds = of('web').map((c) => c.id);
      expect(webIds).toHaveLength(2);
      const dbId = one('db').id;
      const mark = runtime.calls.length;
      const eventMark = events.events.length;

      a.push([pod('db')]);
      await settle();

      expect(of('web')).toEqual([]);
      expect(one('db').id).toBe(dbId);
      for (const id of webIds) {
        const ops = runtime.calls.slice(mark).filter((c) => c.target === id).map((c) => c.op);
        expect(ops).toEqual(['stop', 'remove']);
      }
      const removal = events.events.slice(eventMark);
      expect(removal.every((e) => e.podId === 'web' && e.reason === 'not-desired')).toBe(true);
      for (const container of ['nginx', 'sidecar']) {
        expect(removal.filter((e) => e.container === container).map((e) => e.type)).toEqual(['ContainerStopped', 'ContainerRemoved']);
      }
    });

    it('removes an exited container of a removed manifest without stopping it', async () => {
      const a = new ScriptedSource('a', { initial: [pod('web')] });
      const k = kubelet([a]);
      await k.start();
      await settle();
      const id = one('web').id;
      runtime.exit(id, 0);
      a.push([]);
      await settle();
      expect(runtime.snapshot()).toEqual([]);
      expect(runtime.calls.filter((c) => c.target === id).map((c) => c.op)).toEqual(['start', 'remove']);
      expect(events.types('web').slice(-1)).toEqual(['ContainerRemoved']);
    });
  });

  describe('the sync loop', () => {
    it('runs a pass every syncFrequencyMs when nothing changes', async () => {
      const a = new ScriptedSource('a', { initial: [pod('web')] });
      const k = kubelet([a]);
      await k.start();
      await settle();
      const passes: PassResult[] = [];
      k.on('pass', (r) => passes.push(r));
      const before = k.status().passes;

      await clock.advance(SYNC_MS - 1);
      expect(passes).toEqual([]);
      await clock.advance(1);
      expect(passes).toHaveLength(1);
      expect(passes[0]).toMatchObject({ startedAt: 1_000_000 + SYNC_MS, desired: 1, actions: 0 });
      await clock.advance(SYNC_MS);
      expect(passes).toHaveLength(2);
      expect(k.status().passes).toBe(before + 2);
    });

    it('restarts an exited container as a new one when its 10 s back-off ends, keeping the exited one', async () => {
      const a = new ScriptedSource('a', { initial: [pod('web')] });
      const k = kubelet([a]);
      await k.start();
      await settle();
      const id = one('web').id;
      await clock.advance(1000);
      runtime.exit(id, 137);

      // The periodic pass sees the exit and backs off until exit + 10 s …
      const waiting = nextPass(k);
      await clock.advance(SYNC_MS - 1000);
      expect(await waiting).toMatchObject({ actions: 0 });
      expect(events.ofType('ContainerExited', 'web')).toEqual([expect.objectContaining({ reason: 'Error', time: 1_000_000 + SYNC_MS })]);
      expect(events.ofType('ContainerExited', 'web')[0]?.message).toContain('exited with code 137');
      expect(events.ofType('BackOff', 'web')).toHaveLength(1);
      // … and a pass runs when it ends, not a whole period later.
      const restart = nextPass(k);
      await clock.advance(1000);
      expect(await restart).toMatchObject({ actions: 1, failures: 0, startedAt: 1_000_000 + 11_000 });
      const [replacement, exited] = [...of('web')].sort((x, y) => y.createdAt - x.createdAt);
      expect(replacement).toMatchObject({ state: 'running' });
      expect(replacement?.id).not.toBe(id);
      expect(replacement?.labels[Labels.restartCount]).toBe('1');
      expect(exited).toMatchObject({ id, state: 'exited', exitCode: 137 });
      expect(events.ofType('ContainerRestarted', 'web')).toHaveLength(1);
      expect(runtime.callCount('create')).toBe(2);
    });

    it('pushes the periodic pass back after a pass caused by a change', async () => {
      const a = new ScriptedSource('a', { initial: [] });
      const k = kubelet([a]);
      await k.start();
      await settle();
      const passes: PassResult[] = [];
      k.on('pass', (r) => passes.push(r));
      await clock.advance(SYNC_MS / 2);
      a.push([pod('web')]);
      await settle();
      expect(passes).toHaveLength(1);
      await clock.advance(SYNC_MS - 1);
      expect(passes).toHaveLength(1);
      await clock.advance(1);
      expect(passes).toHaveLength(2);
    });

    it('does not spin passes while a pod in pull back-off fails at once and another is busy with an older plan', async () => {
      // Found by the chaos suite (seed 1005): every instant failure of the pod in back-off asked
      // for another pass, and each such pass, seeing the busy pod still planned from an older
      // desired state, asked again: an endless loop of lists at one instant.
      runtime = new MemoryRuntime({ clock, pullable: ['app:1', 'app:2'] });
      const slow = (image: string) => manifest('slow', [{ name: 'web', image }]);
      const a = new ScriptedSource('a', { initial: [slow('app:1'), pod('bad', 'missing:1')] });
      const k = kubelet([a]);
      await k.start();
      await settle();
      runtime.hangOnStop(one('slow').id);
      const passes: PassResult[] = [];
      k.on('pass', (r) => {
        passes.push(r);
        // Without the fix this loop never yields: end it so the test fails instead of hanging.
        if (passes.length === 50) void k.close();
      });

      a.push([slow('app:2'), pod('bad', 'missing:1')]); // the stop of slow takes its 30 s grace period
      await settle();
      a.push([slow('app:2'), pod('bad', 'missing:1'), pod('other', 'app:1')]); // slow's worker is now behind
      await settle();
      expect(passes.length).toBeLessThanOrEqual(3);
      expect(one('other').state).toBe('running');

      // When slow's worker is done, a pass looks at it again at once.
      await clock.advance(30_000);
      await settle();
      expect(one('slow')).toMatchObject({ image: 'app:2', state: 'running' });
      expect(passes.length).toBeLessThan(10);
    });

    it('runs one more pass, not one per change, for changes made during a pass', async () => {
      runtime.setLatency('list', 100);
      const a = new ScriptedSource('a', { initial: [] });
      const k = kubelet([a]);
      await k.start();
      const passes: PassResult[] = [];
      k.on('pass', (r) => passes.push(r));
      // The first pass is waiting on list now.
      a.push([pod('one')]);
      a.push([pod('one'), pod('two')]);
      a.push([pod('one'), pod('two'), pod('three')]);
      await clock.advance(100);
      await clock.advance(100);
      await clock.advance(SYNC_MS / 2);
      expect(passes).toHaveLength(2);
      expect(passes[1]).toMatchObject({ desired: 3, actions: 3 });
      expect(ours()).toHaveLength(3);
    });
  });

  describe('pass listeners', () => {
    it('keeps syncing when a pass listener throws, and logs it', async () => {
      const logger = new RecordingLogger();
      const a = new ScriptedSource('a', { initial: [] });
      const k = kubelet([a], { logger });
      k.on('pass', () => {
        throw new Error('listener bug');
      });
      await k.start();
      await settle();
      a.push([pod('web')]);
      await settle();
      expect(of('web').map((c) => c.state)).toEqual(['running']);
      const before = k.status().passes;
      await clock.advance(SYNC_MS);
      expect(k.status().passes).toBe(before + 1);
      expect(logger.lines.filter((l) => l.level === 'error').map((l) => l.message)).toContain('a pass listener threw');
    });
  });

  describe('wake-ups', () => {
    // Regression: a request made by the code that awaited a pass result used to see the finished
    // loop as still running, set a flag nobody read, and wait for the periodic timer.
    it('runs a sync() requested as soon as the previous sync() resolved without waiting for the timer', async () => {
      const a = new ScriptedSource('a', { initial: [pod('web')] });
      const k = kubelet([a]);
      await k.start();
      await settle();
      await k.sync();
      let second: PassResult | undefined;
      void k.sync().then((r) => (second = r));
      await settle();
      expect(second).toMatchObject({ desired: 1, actions: 0 });
    });

    it('acts on an update delivered as soon as a sync() resolved without waiting for the timer', async () => {
      const a = new ScriptedSource('a', { initial: [] });
      const k = kubelet([a]);
      await k.start();
      await settle();
      await k.sync();
      a.push([pod('web')]);
      await settle();
      expect(of('web').map((c) => c.state)).toEqual(['running']);
    });
  });

  describe('close()', () => {
    it('closes every source, stops the loop and leaves containers running', async () => {
      const a = new ScriptedSource('a', { initial: [pod('web')] });
      const b = new ScriptedSource('b', { initial: [pod('db')] });
      const crashing = new ScriptedSource('c', { rejectStarts: 100 });
      const k = kubelet([a, b, crashing]);
      await k.start();
      await settle();
      const passes: PassResult[] = [];
      k.on('pass', (r) => passes.push(r));

      await k.close();
      expect(a.closes).toBe(1);
      expect(b.closes).toBe(1);
      expect(crashing.closes).toBe(2); // once when it crashed, once by close()
      expect(clock.pending).toBe(0);

      await clock.advance(10 * SYNC_MS);
      expect(passes).toEqual([]);
      expect(crashing.starts).toBe(1);
      expect(ours().map((c) => c.state)).toEqual(['running', 'running']);

      // Late deliveries from a closed source change nothing.
      const calls = runtime.callCount();
      a.push([]);
      await settle();
      expect(runtime.callCount()).toBe(calls);
    });

    it('lets sync() after close() resolve, with the last pass result', async () => {
      const k = kubelet([new ScriptedSource('a', { initial: [pod('web')] })]);
      await k.start();
      await settle();
      const last = k.status().lastPass;
      await k.close();
      await expect(k.sync()).resolves.toBe(last);
    });

    it('resolves a sync() made during the last pass when close() is called', async () => {
      runtime.setLatency('list', 100);
      const k = kubelet([new ScriptedSource('a', { initial: [pod('web')] })]);
      await k.start();
      const waiting = k.sync(); // queued behind the pass that is waiting on list
      const closing = k.close();
      await clock.advance(100);
      await closing;
      await expect(waiting).resolves.toMatchObject({ desired: 1 });
      expect(k.status().passes).toBe(1);
    });

    it('is idempotent', async () => {
      const a = new ScriptedSource('a', { initial: [] });
      const k = kubelet([a]);
      await k.start();
      await k.close();
      await k.close();
      expect(a.closes).toBe(1);
    });

    it('logs its start and stop through the given logger', async () => {
      const logger = new RecordingLogger();
      const k = kubelet([new ScriptedSource('a', { initial: [] })], { logger });
      await k.start();
      await settle();
      await k.close();
      expect(logger.lines.find((l) => l.message === 'kubelet starting')?.fields).toMatchObject({ hostname: HOST, runtime: 'memory', sources: ['a'] });
      expect(logger.lines.some((l) => l.message === 'kubelet stopped')).toBe(true);
    });
  });
});
