import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { chmod, mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Labels, wrapRuntime, type ContainerManifest, type ManifestSource } from '@kubelet-ts/core';
import { ServerManifestSource } from '@kubelet-ts/source-server';
import { FileSourceCheckpoints } from '../src/source-checkpoints.js';
import { agentFixture } from './agent-fixture.js';
import { checkedManifest } from '@kubelet-ts/conformance';
import { pod, settle, ScriptedSource } from './helpers.js';

/** A pod with an emptyDir-like volume, so that its removal says what happens to its data. */
const withVolume = (id: string): ContainerManifest =>
  checkedManifest({
    version: 'v1beta1',
    id,
    volumes: [{ name: 'data' }],
    containers: [{ name: 'web', image: 'nginx:1', volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
  });

describe('FileSourceCheckpoints: each source set on disk, replaced atomically', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-checkpoints-'));
  });
  afterEach(async () => {
    await chmod(dir, 0o700).catch(() => {});
    await rm(dir, { recursive: true, force: true });
  });

  it('loads what it saved, says undefined for a source never saved, and keeps the files private', async () => {
    const checkpoints = new FileSourceCheckpoints(join(dir, 'sources'));
    await checkpoints.prepare();
    expect(await checkpoints.load('etcd')).toBeUndefined();
    await checkpoints.save('etcd', [pod('web'), pod('db')]);
    expect(await checkpoints.load('etcd')).toEqual([pod('web'), pod('db')]);
    expect((await stat(checkpoints.dir)).mode & 0o777).toBe(0o700);
    expect((await stat(checkpoints.fileOf('etcd'))).mode & 0o777).toBe(0o600);
    // A source's name is a file name of its own, whatever it holds.
    await checkpoints.save('../mine/x', [pod('a')]);
    expect(await readdir(checkpoints.dir)).toEqual(['..%2Fmine%2Fx.json', 'etcd.json']);
  });

  it('coalesces saves made while one is written: the newest set is on disk, and each save resolves', async () => {
    const checkpoints = new FileSourceCheckpoints(dir);
    const saves = Array.from({ length: 50 }, (_, i) => checkpoints.save('server', [pod(`p${i}`)]));
    await Promise.all(saves);
    expect(await checkpoints.load('server')).toEqual([pod('p49')]);
    expect((await readdir(dir)).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('rejects a checkpoint that is not one (cut short, or another file), naming the file', async () => {
    const checkpoints = new FileSourceCheckpoints(dir);
    await writeFile(checkpoints.fileOf('file'), '{"kind":"kubelet-ts/source-checkpoint","version":1,"manif');
    await expect(checkpoints.load('file')).rejects.toThrow(/JSON/);
    await writeFile(checkpoints.fileOf('http'), '[]');
    await expect(checkpoints.load('http')).rejects.toThrow(`${checkpoints.fileOf('http')} is not a kubelet-ts/source-checkpoint`);
  });

  it('restores a set only into the configuration that kept it: the same node, the same source identity', async () => {
    const mine = { node: 'node-a', identities: { http: 'http://10.0.0.1/a', server: '127.0.0.1:10250' } };
    await new FileSourceCheckpoints(dir, mine).save('http', [pod('web')]);
    expect(await new FileSourceCheckpoints(dir, mine).load('http')).toEqual([pod('web')]);
    await expect(new FileSourceCheckpoints(dir, { ...mine, node: 'node-b' }).load('http')).rejects.toThrow(
      `${join(dir, 'http.json')} was kept for another configuration (node node-a, source http://10.0.0.1/a; this agent is node node-b, source http://10.0.0.1/a): not restored`,
    );
    const otherUrl = new FileSourceCheckpoints(dir, { ...mine, identities: { http: 'http://10.0.0.1/b' } });
    await expect(otherUrl.load('http')).rejects.toThrow(
      /another configuration .*this agent is node node-a, source http:\/\/10\.0\.0\.1\/b/,
    );
    // A checkpoint an agent wrote before owners were kept names none: not restored either.
    await new FileSourceCheckpoints(dir).save('server', [pod('db')]);
    await expect(new FileSourceCheckpoints(dir, mine).load('server')).rejects.toThrow(/another configuration \(no node or source;/);
    // The next save takes it over.
    await otherUrl.save('http', [pod('api')]);
    expect(await otherUrl.load('http')).toEqual([pod('api')]);
  });

  it('refuses a checkpoint larger than it may be before reading it', async () => {
    const checkpoints = new FileSourceCheckpoints(dir, { maxBytes: 1024 });
    await checkpoints.save('file', [pod('web')]);
    expect(await checkpoints.load('file')).toEqual([pod('web')]);
    await writeFile(checkpoints.fileOf('file'), Buffer.alloc(1025, 0x20));
    await expect(checkpoints.load('file')).rejects.toThrow(
      `${checkpoints.fileOf('file')} has 1025 bytes, more than the 1024 a checkpoint may hold: not read`,
    );
  });

  it('rejects a save it cannot make, and leaves the last good file as it was', async () => {
    const checkpoints = new FileSourceCheckpoints(dir);
    await checkpoints.save('etcd', [pod('web')]);
    await chmod(dir, 0o500);
    // root writes anywhere: then a directory in the way of the temporary file makes the write fail.
    if (process.getuid?.() === 0) await mkdir(`${checkpoints.fileOf('etcd')}.${process.pid}.tmp`);
    await expect(checkpoints.save('etcd', [pod('db')])).rejects.toThrow(/EACCES|EISDIR/);
    expect(await checkpoints.load('etcd')).toEqual([pod('web')]);
  });
});

describe('Kubelet restarted with checkpoints (issue 27 items 1 and 2)', () => {
  const f = agentFixture();
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-restart-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** An agent on the fixture's runtime, as the CLI makes it after a restart on the same --root-dir. */
  const agent = (sources: readonly ManifestSource[], checkpoints = new FileSourceCheckpoints(dir)) => f.kubelet(sources, { checkpoints });
  const ids = () =>
    f
      .ours()
      .map((c) => `${c.labels[Labels.manifestId]}:${c.id}:${c.state}`)
      .sort();

  it('keeps what the server was told: a posted pod runs on after a restart, and a DELETE after it still removes it', async () => {
    const first = new ServerManifestSource({ port: 0 });
    const k1 = agent([first]);
    await k1.start();
    const posted = await fetch(`${first.url}/container`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      // Run to completion: it has ended when the agent stops, as in the attack.
      body: JSON.stringify({
        version: 'v1beta1',
        id: 'posted',
        restartPolicy: { never: {} },
        containers: [{ name: 'web', image: 'nginx:1' }],
      }),
    });
    expect(posted.status).toBe(201);
    await settle();
    await k1.sync();
    f.runtime.exit(f.one('posted').id, 0);
    await settle();
    const before = ids();
    expect(before).toHaveLength(1);
    await k1.close();

    const second = new ServerManifestSource({ port: 0 });
    const k2 = agent([second]);
    await k2.start();
    await settle();
    const pass = await k2.sync();
    // Without the checkpoint the server's empty set was all it said, and the pod was removed.
    expect(pass).toMatchObject({ desired: 1, held: 0 });
    expect(k2.desired().pods.map((p) => [p.manifest.id, p.source])).toEqual([['posted', 'server']]);
    expect(ids()).toEqual(before); // the ended container is kept, as before the restart

    const deleted = await fetch(`${second.url}/container/posted`, { method: 'DELETE' });
    expect(deleted.status).toBe(200);
    await settle();
    await k2.sync();
    expect(ids()).toEqual([]);
  });

  it('runs the last good set of a source that cannot be read at start, and removes nothing of it', async () => {
    const k1 = agent([new ScriptedSource('etcd', { initial: [pod('web'), pod('db')] }), new ScriptedSource('file', { initial: [] })]);
    await k1.start();
    await settle();
    await k1.sync();
    await k1.close();
    const before = ids();

    // The etcd key is now empty (the source reports it, delivers nothing); the file is readable and empty.
    const etcd = new ScriptedSource('etcd');
    const k2 = agent([etcd, new ScriptedSource('file', { initial: [] })]);
    await k2.start();
    etcd.fail(new Error('/registry/hosts/node-a/kubelet: the value is empty'));
    await settle();
    expect(await k2.sync()).toMatchObject({ desired: 2, actions: 0, held: 0 });
    expect(ids()).toEqual(before);
    // Desired, not merely held: a crash is replaced as before the restart.
    f.runtime.exit(f.one('db').id, 1);
    await settle();
    await k2.sync();
    expect(f.of('db').filter((c) => c.state === 'running')).toHaveLength(1);
    // Once the source speaks, it alone says what it runs.
    etcd.push([pod('web')]);
    await settle();
    await k2.sync();
    expect(f.of('db')).toEqual([]);
    expect(f.of('web')).toHaveLength(1);
  });

  it('treats a checkpoint it cannot read as no state: the source is unseen, so nothing is removed, and says so', async () => {
    const k1 = agent([new ScriptedSource('etcd', { initial: [pod('web')] }), new ScriptedSource('file', { initial: [] })]);
    await k1.start();
    await settle();
    await k1.sync();
    await k1.close();
    await writeFile(join(dir, 'etcd.json'), '{ cut short');
    const k2 = agent([new ScriptedSource('etcd'), new ScriptedSource('file', { initial: [] })]);
    await k2.start();
    await settle();
    expect(await k2.sync()).toMatchObject({ desired: 0, held: 2 });
    expect(f.of('web')).toHaveLength(1);
    expect(f.events.ofType('SourceError').map((e) => e.message)).toEqual([
      expect.stringContaining('the last good set of source etcd cannot be read'),
    ]);
  });

  it('removes a pod its source removed with its volumes, and one it has no record of without them', async () => {
    const removals: Array<{ pod: string; volumes: boolean }> = [];
    const sandboxPods = new Map<string, string>();
    const recording = () =>
      wrapRuntime(f.runtime, {
        around: async (operation, args, proceed) => {
          if (operation === 'removeSandbox') {
            const [id, options] = args as [string, { volumes?: boolean } | undefined];
            removals.push({ pod: sandboxPods.get(id) ?? '?', volumes: options?.volumes === true });
          }
          return proceed();
        },
      });
    const source = new ScriptedSource('etcd', { initial: [withVolume('kept'), withVolume('removed'), withVolume('forgotten')] });
    const k1 = f.kubelet([source], { runtime: recording() });
    await k1.start();
    await settle();
    await k1.sync();
    for (const s of await f.runtime.listSandboxes()) sandboxPods.set(s.id, s.labels[Labels.sandbox] ?? '?');
    source.push([withVolume('kept'), withVolume('forgotten')]);
    await settle();
    await k1.sync();
    expect(removals).toEqual([{ pod: 'removed', volumes: true }]);
    await k1.close();

    // A new agent with no record of `forgotten` (no checkpoints survived): its containers go, its data stays.
    const k2 = f.kubelet([new ScriptedSource('etcd', { initial: [withVolume('kept')] })], { runtime: recording() });
    await k2.start();
    await settle();
    await k2.sync();
    expect(removals).toEqual([
      { pod: 'removed', volumes: true },
      { pod: 'forgotten', volumes: false },
    ]);
    expect(f.of('forgotten')).toEqual([]);
    expect(f.events.ofType('SandboxRemoved', 'forgotten').map((e) => e.message)).toEqual([
      expect.stringContaining('pod volumes kept: the agent has no record of pod forgotten'),
    ]);
  });

  it('keeps each set on disk as it changes, and has written the last one when close resolves', async () => {
    const source = new ScriptedSource('etcd', { initial: [pod('web')] });
    const k = agent([source]);
    await k.start();
    for (let i = 0; i < 20; i++) source.push([pod('web'), pod(`extra${i}`)]);
    await k.close();
    const saved = JSON.parse(await readFile(join(dir, 'etcd.json'), 'utf8')) as { source: string; manifests: ContainerManifest[] };
    expect(saved.source).toBe('etcd');
    expect(saved.manifests.map((m) => m.id)).toEqual(['web', 'extra19']);
  });
});
