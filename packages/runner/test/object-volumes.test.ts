import { lstat, mkdtemp, readFile, readlink, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { checkedManifest } from '@kubelet-ts/conformance';
import type { SourceObject } from '@kubelet-ts/core';
import { agentFixture } from './agent-fixture.js';
import { FileSourceCheckpoints } from '../src/source-checkpoints.js';
import { podListOf, RecordingLogger, settle, ScriptedSource } from './helpers.js';

const text = (s: string) => Buffer.from(s, 'utf8');
const configMap = (data: Record<string, string>): SourceObject => ({
  kind: 'ConfigMap',
  namespace: 'default',
  name: 'web-config',
  data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, text(v)])),
});
const secret: SourceObject = {
  kind: 'Secret',
  namespace: 'default',
  name: 'web-secret',
  data: { password: text('s3cr3t'), user: text('admin') },
};

/** A pod that reads a ConfigMap as files and a key as a variable, and a Secret as files and whole as variables. */
const web = checkedManifest({
  id: 'web',
  labels: { app: 'web' },
  volumes: [
    { name: 'config', files: { sources: [{ configMap: { name: 'web-config' } }] } },
    { name: 'creds', files: { sources: [{ secret: { name: 'web-secret', items: [{ key: 'password', path: 'db/password' }] } }] } },
    { name: 'info', files: { sources: [{ downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] } }] } },
  ],
  containers: [
    {
      name: 'main',
      image: 'nginx:1',
      envFrom: [{ prefix: 'DB_', secretRef: { name: 'web-secret' } }],
      env: [
        { name: 'MODE', valueFrom: { configMapKeyRef: { name: 'web-config', key: 'mode' } } },
        { name: 'MISSING_OK', valueFrom: { configMapKeyRef: { name: 'web-config', key: 'nope', optional: true } } },
        { name: 'BANNER', value: 'mode-$(MODE)' },
      ],
      volumeMounts: [
        { name: 'config', mountPath: '/etc/web' },
        { name: 'creds', mountPath: '/run/creds' },
        { name: 'info', mountPath: '/etc/info' },
      ],
    },
  ],
});

describe('ConfigMaps and Secrets given beside a pod, through the agent', () => {
  const f = agentFixture();
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-files-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('holds the container back, saying which object is missing, until the source gives it; then writes the files and the variables', async () => {
    const source = new ScriptedSource('a', { initial: [web] });
    const k = f.kubelet([source], { volumeFilesDir: dir });
    await k.start();
    await settle();
    await k.sync();
    expect(f.of('web')).toEqual([]);
    const statuses = (await podListOf(k)).items[0]?.status['containerStatuses'] as Array<{ state: object }> | undefined;
    const waiting = statuses?.[0]?.state;
    expect(waiting).toEqual({ waiting: { reason: 'CreateContainerConfigError', message: expect.stringContaining('not found') } });
    const said = f.events.events.filter((e) => e.reason === 'CreateContainerConfigError');
    // Said once, however many passes find it missing.
    expect(said).toHaveLength(1);
    expect(said[0]?.message).toMatch(/secret "web-secret" not found|configmap "web-config" not found/);

    source.sink.update([web], [configMap({ mode: 'fast', 'app.conf': 'port=80\n' }), secret]);
    await settle();
    await k.sync();
    const { spec } = await f.runtime.inspect(f.one('web', 'main').id);
    expect(spec.env).toEqual({ DB_password: 's3cr3t', DB_user: 'admin', MODE: 'fast', BANNER: 'mode-fast' });
    const mounts = new Map(spec.mounts.map((m) => [m.containerPath, m]));
    const config = mounts.get('/etc/web');
    expect(config).toMatchObject({ hostPath: join(dir, 'web', 'config'), readOnly: true });
    expect(await readFile(join(dir, 'web', 'config', 'app.conf'), 'utf8')).toBe('port=80\n');
    expect(await readFile(join(dir, 'web', 'config', 'mode'), 'utf8')).toBe('fast');
    // The kubelet's layout: each name a link through ..data, swapped at once on a change.
    expect(await readlink(join(dir, 'web', 'config', 'mode'))).toBe('..data/mode');
    expect((await lstat(join(dir, 'web', 'config', '..data'))).isSymbolicLink()).toBe(true);
    // A Secret's files are 0400; the rest 0644.
    expect((await stat(join(dir, 'web', 'creds', 'db', 'password'))).mode & 0o777).toBe(0o400);
    expect(await readFile(join(dir, 'web', 'creds', 'db', 'password'), 'utf8')).toBe('s3cr3t');
    expect((await stat(join(dir, 'web', 'config', 'mode'))).mode & 0o777).toBe(0o644);
    expect(await readFile(join(dir, 'web', 'info', 'labels'), 'utf8')).toBe('app="web"');
    // No Secret value in any event or in /pods.
    const shown = JSON.stringify([f.events.events, await podListOf(k)]);
    expect(shown).not.toContain('s3cr3t');
  });

  it('rewrites the files of a running pod when its ConfigMap changes, and restarts nothing', async () => {
    const source = new ScriptedSource('a', { initial: [web] });
    const k = f.kubelet([source], { volumeFilesDir: dir });
    await k.start();
    source.sink.update([web], [configMap({ mode: 'fast' }), secret]);
    await settle();
    await k.sync();
    const id = f.one('web', 'main').id;
    source.sink.update([web], [configMap({ mode: 'slow', extra: 'yes' }), secret]);
    await settle();
    await k.sync();
    await k.close();
    expect(await readFile(join(dir, 'web', 'config', 'mode'), 'utf8')).toBe('slow');
    expect(await readFile(join(dir, 'web', 'config', 'extra'), 'utf8')).toBe('yes');
    expect(f.one('web', 'main').id).toBe(id);
    // The variable was read when the container was made, as the kubelet reads it.
    expect((await f.runtime.inspect(id)).spec.env['MODE']).toBe('fast');
  });

  it('keeps the last files when the ConfigMap goes, and removes them with the pod', async () => {
    const source = new ScriptedSource('a', { initial: [web] });
    const k = f.kubelet([source], { volumeFilesDir: dir });
    await k.start();
    source.sink.update([web], [configMap({ mode: 'fast' }), secret]);
    await settle();
    await k.sync();
    source.sink.update([web], [secret]);
    await settle();
    await k.sync();
    expect(await readFile(join(dir, 'web', 'config', 'mode'), 'utf8')).toBe('fast');
    source.sink.update([], [secret]);
    await settle();
    await k.sync();
    await expect(stat(join(dir, 'web'))).rejects.toThrow(/ENOENT/);
  });

  it('without a directory for the files, holds the pod back naming the option that gives one', async () => {
    const source = new ScriptedSource('a', { initial: [web] });
    const k = f.kubelet([source]);
    await k.start();
    source.sink.update([web], [configMap({ mode: 'fast' }), secret]);
    await settle();
    await k.sync();
    expect(f.of('web')).toEqual([]);
    const failed = f.events.events.find((e) => e.type === 'ContainerFailed');
    expect(failed?.message).toContain('--volume-files-dir');
  });

  it('restarted, runs the restored pod on without a word about its objects until the source delivers them (issue 48)', async () => {
    const checkpoints = new FileSourceCheckpoints(dir);
    const first = new ScriptedSource('a', { initial: [web] });
    const k1 = f.kubelet([first], { volumeFilesDir: join(dir, 'files'), checkpoints });
    await k1.start();
    first.sink.update([web], [configMap({ mode: 'fast' }), secret]);
    await settle();
    await k1.sync();
    const running = f.one('web', 'main').id;
    await k1.close();

    // The same node again: the set comes back from its checkpoint, the objects (never checkpointed) with the source only.
    const restarted = (logger: RecordingLogger) => {
      const source = new ScriptedSource('a');
      const k = f.kubelet([source], {
        volumeFilesDir: join(dir, 'files'),
        checkpoints: new FileSourceCheckpoints(dir),
        logger,
      });
      return { source, k };
    };
    const quiet = new RecordingLogger();
    const k2 = restarted(quiet).k;
    await k2.start();
    await settle();
    await k2.sync();
    await k2.sync();
    await k2.close(); // waits for the refresh of files under way
    expect(f.one('web', 'main').id).toBe(running);
    expect(quiet.at('warn').map((e) => e.message)).toEqual([]);
    expect(f.events.events.filter((e) => e.reason === 'CreateContainerConfigError')).toEqual([]);
    expect(await readFile(join(dir, 'files', 'web', 'config', 'mode'), 'utf8')).toBe('fast');

    // Delivered, the objects are written anew.
    const told = new RecordingLogger();
    const third = restarted(told);
    await third.k.start();
    third.source.sink.update([web], [configMap({ mode: 'slow' }), secret]);
    await settle();
    await third.k.sync();
    await third.k.close();
    expect(await readFile(join(dir, 'files', 'web', 'config', 'mode'), 'utf8')).toBe('slow');
    expect(told.at('warn')).toEqual([]);

    // Delivered without one, its absence is said (and the files are kept as they were).
    const missing = new RecordingLogger();
    const fourth = restarted(missing);
    await fourth.k.start();
    fourth.source.sink.update([web], [configMap({ mode: 'slow' })]);
    await settle();
    await fourth.k.sync();
    await fourth.k.close();
    expect(f.one('web', 'main').id).toBe(running);
    expect(missing.at('warn').map((e) => e.message)).toEqual([expect.stringContaining('secret "web-secret" not found')]);
    expect(await readFile(join(dir, 'files', 'web', 'creds', 'db', 'password'), 'utf8')).toBe('s3cr3t');
  });
});
