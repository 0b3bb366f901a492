import { describe, expect, it } from '@jest/globals';
import { KubeletError, Labels, type ContainerManifest } from '@kubelet-ts/core';
import { Kubelet } from '../src/kubelet.js';
import { agentFixture, HOST, SYNC_MS } from './agent-fixture.js';
import { manifest, pod, settle, ScriptedSource } from './helpers.js';

describe('Kubelet: running what sources ask for, and nothing else', () => {
  const f = agentFixture();
  const { kubelet, nextPass, of, one, preexisting, foreign } = f;

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

      const containers = f.runtime.snapshot();
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
      const details = await f.runtime.inspect(one('web', 'nginx').id);
      expect(details.spec).toMatchObject({
        podId: 'web',
        env: { MODE: 'prod' },
        ports: [{ containerPort: 80, hostPort: 8080, protocol: 'TCP' }],
      });

      for (const container of ['nginx', 'sidecar']) {
        const mine = f.events.events.filter((e) => e.container === container).map((e) => e.type);
        expect(mine).toEqual(['ImagePulled', 'ContainerCreated', 'ContainerStarted']);
      }
      expect(f.events.ofType('ContainerStarted')).toEqual(
        expect.arrayContaining([expect.objectContaining({ podId: 'web', container: 'nginx', reason: 'new', time: 1_000_000 })]),
      );
      expect(f.events.ofType('ContainerFailed')).toEqual([]);
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
      a.push([
        manifest('web', [
          { name: 'nginx', image: 'nginx:1' },
          { name: 'sidecar', image: 'busybox:1' },
        ]),
        pod('db', 'postgres:16'),
      ]);
      await settle();
      const quiet = await k.sync();
      expect(quiet).toMatchObject({ desired: 2, actions: 0, failures: 0, held: 0, startedAt: 1_000_000 });
      expect(quiet.error).toBeUndefined();

      // A first crash: its event makes a pass of db alone, which replaces it at once.
      const podPass = nextPass(k);
      f.runtime.exit(one('db').id, 1);
      expect(await podPass).toMatchObject({ pods: ['db'], desired: 1, actions: 1, failures: 0 });
      expect(k.status().lastPass).toBe(quiet); // a pod pass is not the last full pass
      f.runtime.setFault('create', (call) => (call.target?.startsWith('cache--') ? new KubeletError('Internal', 'disk full') : undefined));
      const pass = nextPass(k);
      a.push([
        manifest('web', [
          { name: 'nginx', image: 'nginx:1' },
          { name: 'sidecar', image: 'busybox:1' },
        ]), // same content: no action
        pod('db', 'postgres:16'),
        manifest('cache', [{ name: 'cache', image: 'redis:7' }]),
      ]);
      const result = await pass;
      // db: nothing left to do; cache: its sandbox, then the create (fails).
      expect(result).toMatchObject({ desired: 3, actions: 2, failures: 1, held: 0 });
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
      expect(
        () =>
          new Kubelet({ runtime: f.runtime, sources: [new ScriptedSource('a'), new ScriptedSource('a')], clock: f.clock, hostname: HOST }),
      ).toThrow(/unique/);
    });

    it('cannot be started twice', async () => {
      const k = kubelet([new ScriptedSource('a')]);
      await k.start();
      await expect(k.start()).rejects.toThrow(/cannot start/);
    });
  });

  describe("what an embedder's source hands over", () => {
    it('validates manifests built from plain objects: a valid one runs in normal form, an invalid one is rejected by field and left out', async () => {
      const a = new ScriptedSource('a');
      const k = kubelet([a]);
      await k.start();
      const plain = [
        { id: 'plain', containers: [{ name: 'web', image: 'nginx:1', env: [{ key: 'MODE', value: 'x' }] }] },
        { id: 'Bad Id', containers: [{ name: 'web', image: 'nginx:1' }] },
      ] as unknown as ContainerManifest[];
      a.push(plain);
      await settle();
      expect(one('plain').state).toBe('running');
      expect(f.events.ofType('ManifestRejected')).toEqual([
        expect.objectContaining({ source: 'a', message: expect.stringMatching(/manifest "Bad Id" from a: id: /) }),
      ]);
      expect(k.desired().pods.map((p) => p.manifest.id)).toEqual(['plain']);
    });

    it('shows the uuid a 2014 manifest gives in pods()', async () => {
      const a = new ScriptedSource('a');
      const k = kubelet([a]);
      await k.start();
      a.push([
        { id: 'tagged', uuid: '6f1c3c62-1d2e-11e4-8c21-0800200c9a66', containers: [{ name: 'web', image: 'nginx:1' }] },
      ] as unknown as ContainerManifest[]);
      await settle();
      expect((await k.pods()).map((p) => [p.id, p.uuid])).toEqual([['tagged', '6f1c3c62-1d2e-11e4-8c21-0800200c9a66']]);
    });

    it('records a deprecated 2014 spelling a source reports as a DeprecatedField event', async () => {
      const a = new ScriptedSource('a', { initial: [pod('web')] });
      const k = kubelet([a]);
      await k.start();
      await settle();
      a.sinks.at(-1)!.warning!({
        reason: 'DeprecatedField',
        podId: 'web',
        field: 'containers[].env[].key',
        paths: ['containers[0].env[0].key'],
        message: 'containers[0].env[0].key: "key" is the deprecated spelling of "name"',
      });
      expect(f.events.ofType('DeprecatedField')).toEqual([
        expect.objectContaining({ podId: 'web', source: 'a', reason: 'DeprecatedField' }),
      ]);
    });
  });

  describe('container figures', () => {
    it('answers what a managed container uses, by name or manifest/container, and nothing of a foreign one', async () => {
      const a = new ScriptedSource('a', { initial: [pod('web')] });
      const k = kubelet([a]);
      await k.start();
      await settle();
      const web = one('web');
      f.runtime.setStats(web.id, { cpuNs: 42, memoryBytes: 1024 });
      const byName = await k.stats('web/web');
      expect(byName).toMatchObject({ cpu: { usageNanoseconds: 42 }, memory: { usageBytes: 1024 } });
      expect(await k.stats(web.name)).toEqual(byName);
      const other = await foreign('someone-elses');
      await expect(k.stats(other)).resolves.toBeUndefined();
      await expect(k.stats('web/nope')).resolves.toBeUndefined();
      // After a crash, the exited container is kept beside its replacement: the running one answers.
      f.runtime.exit(web.id, 1);
      await f.clock.advance(10_000);
      await k.sync();
      const replacement = f.of('web').find((c) => c.state === 'running')!;
      expect(replacement.id).not.toBe(web.id);
      f.runtime.setStats(replacement.id, { cpuNs: 7, memoryBytes: 2048 });
      expect(await k.stats('web/web')).toMatchObject({ cpu: { usageNanoseconds: 7 } });
      expect((await k.containerInfo('web/web'))?.id).toBe(replacement.id);
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
      expect(waiting.held).toBe(2); // the container and its sandbox
      expect(of('old').map((c) => [c.id, c.state])).toEqual([[oldIds[0], 'running']]);
      expect(f.runtime.callCount('stop')).toBe(0);
      expect(f.runtime.callCount('remove')).toBe(0);
      expect(one('web').state).toBe('running'); // creation is not held back
      expect(k.status().sources.map((s) => [s.name, s.seen])).toEqual([
        ['a', true],
        ['b', false],
      ]);

      // Time alone does not release the hold.
      await f.clock.advance(3 * SYNC_MS);
      expect(of('old')).toHaveLength(1);

      b.push([]); // an empty set counts as delivered
      await settle();
      expect(of('old')).toEqual([]);
      expect(f.events.types('old')).toEqual(['ContainerStopped', 'ContainerRemoved', 'SandboxRemoved']);
      const after = await k.sync();
      expect(after).toMatchObject({ held: 0, actions: 0 });
    });

    // Seen after a SIGKILL and restart on a real engine: the file source's first delivery landed
    // while the first pass was listing, and the pass stopped every pod of that source.
    it('does not stop the pods of a source whose first set arrives while a pass is listing', async () => {
      const ids = await preexisting(manifest('web', [{ name: 'web', image: 'nginx:1' }]));
      const a = new ScriptedSource('a', { initial: [] });
      const b = new ScriptedSource('b');
      f.runtime.setLatency('list', 1_000);
      const k = kubelet([a, b]);
      await k.start(); // a's set asks for a pass, whose list now takes a second
      await settle();
      b.push([manifest('web', [{ name: 'web', image: 'nginx:1' }])]);
      f.runtime.setLatency('list', 0); // the list under way still takes its second
      await f.clock.advance(1_000);
      await k.sync();

      expect(of('web').map((c) => [c.id, c.state])).toEqual([[ids[0], 'running']]);
      expect(f.runtime.callCount('stop')).toBe(0);
      expect(f.events.types('web')).toEqual([]);
    });

    it('adopts the containers of a previous run instead of creating duplicates', async () => {
      const first = kubelet([new ScriptedSource('a', { initial: [pod('web'), pod('db', 'postgres:16')] })]);
      await first.start();
      await settle();
      await first.close();
      const before = f.runtime.snapshot();
      expect(before).toHaveLength(2);
      const creates = f.runtime.callCount('create');

      // A new agent, reading the same manifests again (new objects, same content).
      const second = kubelet([new ScriptedSource('a', { initial: [pod('web'), pod('db', 'postgres:16')] })]);
      await second.start();
      await settle();
      const result = await second.sync();
      expect(result).toMatchObject({ desired: 2, actions: 0, failures: 0 });
      expect(f.runtime.callCount('create')).toBe(creates);
      expect(f.runtime.callCount('stop')).toBe(0);
      expect(f.runtime.snapshot()).toEqual(before);
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

      const byId = new Map(f.runtime.snapshot().map((c) => [c.id, c]));
      for (const id of [plain, halfLabelled, ...otherNode, ...otherNodeGone]) expect(byId.get(id)?.state).toBe('running');
      // Ours, and not desired: removed — the others stayed only because they are not ours.
      expect(byId.has(mineGone[0] as string)).toBe(false);
      // Pod 'web' on node-b does not stand in for ours.
      expect(one('web').state).toBe('running');
      const touched = f.runtime.calls.filter((c) => c.op === 'stop' || c.op === 'remove').map((c) => c.target);
      expect(touched).toEqual([mineGone[0], mineGone[0]]);
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
      const conflicts = f.events.ofType('ManifestConflict');
      expect(conflicts).toHaveLength(1);
      expect(conflicts[0]).toMatchObject({ podId: 'web', source: 'b', reason: 'Conflict' });
      expect(conflicts[0]?.message).toContain('running the one from a');

      // More passes, and re-deliveries of the same sets (same and new objects), do not repeat it.
      await f.clock.advance(SYNC_MS);
      await f.clock.advance(SYNC_MS);
      b.push([pod('web', 'nginx:b')]);
      await settle();
      await k.sync();
      expect(f.events.ofType('ManifestConflict')).toHaveLength(1);
      expect(of('web')).toHaveLength(1);
      expect(f.runtime.callCount('create')).toBe(1);
    });

    it('reports a manifest a source rejected and leaves running pods alone', async () => {
      const a = new ScriptedSource('a', { initial: [pod('web')] });
      // No housekeeping: its first sample reads the host and then the runtime, on its own time, which
      // would land among the calls counted here.
      const k = kubelet([a], { housekeeping: { intervalMs: 0 } });
      await k.start();
      await settle();
      const before = f.runtime.snapshot();
      const calls = f.runtime.callCount();

      a.fail(
        new KubeletError('InvalidManifest', 'broken.yaml: id: must be a DNS label', {
          fieldErrors: [{ path: 'id', message: 'must be a DNS label' }],
        }),
      );
      await settle();
      const rejected = f.events.ofType('ManifestRejected');
      expect(rejected).toHaveLength(1);
      expect(rejected[0]).toMatchObject({ source: 'a', reason: 'InvalidManifest', message: 'broken.yaml: id: must be a DNS label' });
      expect(f.events.ofType('SourceRestarted')).toEqual([]);
      expect(k.status().sources[0]?.lastError).toBe('broken.yaml: id: must be a DNS label');

      const result = await k.sync();
      expect(result).toMatchObject({ desired: 1, actions: 0 });
      expect(f.runtime.snapshot()).toEqual(before);
      expect(f.runtime.calls.slice(calls).map((c) => c.op)).toEqual(['list', 'listSandboxes']);
    });

    it('reports other non-fatal source errors as SourceError', async () => {
      const a = new ScriptedSource('a', { initial: [] });
      const k = kubelet([a]);
      await k.start();
      a.fail(new KubeletError('Unavailable', 'http: 503'));
      a.fail(new Error('odd'));
      expect(f.events.ofType('SourceError')).toEqual([
        expect.objectContaining({ source: 'a', reason: 'Unavailable', message: 'http: 503' }),
        expect.objectContaining({ source: 'a', reason: 'Internal', message: 'odd' }),
      ]);
    });
  });
});
