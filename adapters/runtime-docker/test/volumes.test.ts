import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdir, mkdtemp, readdir, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Labels, buildContainerSpec, buildSandboxSpec, validateManifest, type ContainerManifest, type ContainerSpec } from '@kubelet-ts/core';
import { buildTestImages, independentDocker, removeLabelled, type TestImages } from '@kubelet-ts/testkit';
import { DockerRuntime } from '../src/index.js';
import { podVolumeDir } from '@kubelet-ts/core';

const NODE = `volumes-test-${process.pid}`;

/** Everything under `dir`, as relative paths (links not followed). */
async function tree(dir: string): Promise<string[]> {
  return (await readdir(dir, { recursive: true })).sort();
}

describe('pod volume directories stay under the volumes root', () => {
  let base: string;
  let root: string;
  let outside: string;

  beforeEach(async () => {
    base = await realpath(await mkdtemp(join(tmpdir(), 'kubelet-ts-volume-dirs-')));
    root = join(base, 'root');
    outside = join(base, 'outside');
    await mkdir(root);
    await mkdir(outside);
  });

  afterEach(async () => {
    await rm(base, { recursive: true, force: true });
  });

  it('makes <root>/<pod>/<volume> and returns it', async () => {
    await expect(podVolumeDir(root, 'web', 'data')).resolves.toBe(join(root, 'web', 'data'));
    // Again: an existing directory is used as it is.
    await expect(podVolumeDir(root, 'web', 'data')).resolves.toBe(join(root, 'web', 'data'));
    expect(await tree(root)).toEqual(['web', join('web', 'data')]);
  });

  it.each([
    ['..', 'data'],
    ['web', '..'],
    ['.', 'data'],
    ['web', '../../outside'],
    ['../outside', 'data'],
    ['/etc', 'data'],
    ['web', '/etc'],
    ['/tmp/outside', 'data'],
    ['web', 'a/b'],
    ['', 'data'],
    ['web', 'Data'],
  ])('refuses pod %j volume %j as InvalidManifest, making nothing', async (podId, volume) => {
    await expect(podVolumeDir(root, podId, volume)).rejects.toMatchObject({ code: 'InvalidManifest', message: expect.stringMatching(/DNS (label|subdomain)/) });
    expect(await tree(base)).toEqual(['outside', 'root']);
  });

  it('refuses a symbolic link planted at <root>/<pod>, naming it, and creates nothing through it', async () => {
    await symlink(outside, join(root, 'web'));
    const error = await podVolumeDir(root, 'web', 'data').catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'Conflict', message: expect.stringContaining(`${join(root, 'web')} is a symbolic link (to ${outside})`) });
    expect(await tree(outside)).toEqual([]);
  });

  it('refuses a symbolic link planted at <root>/<pod>/<volume>', async () => {
    await mkdir(join(root, 'web'));
    await symlink(outside, join(root, 'web', 'data'));
    await expect(podVolumeDir(root, 'web', 'data')).rejects.toMatchObject({ code: 'Conflict', message: expect.stringContaining(join(root, 'web', 'data')) });
    expect(await tree(outside)).toEqual([]);
  });

  it('refuses a dangling link without making its target', async () => {
    await symlink(join(outside, 'made-by-us'), join(root, 'web'));
    await expect(podVolumeDir(root, 'web', 'data')).rejects.toMatchObject({ code: 'Conflict' });
    expect(await tree(outside)).toEqual([]);
  });

  it("refuses a link to another pod's volume inside the root too: volumes are not shared", async () => {
    await podVolumeDir(root, 'other', 'data');
    await mkdir(join(root, 'web'));
    await symlink(join(root, 'other', 'data'), join(root, 'web', 'data'));
    await expect(podVolumeDir(root, 'web', 'data')).rejects.toMatchObject({ code: 'Conflict' });
  });

  it('refuses a file where the volume directory should be', async () => {
    await mkdir(join(root, 'web'));
    await writeFile(join(root, 'web', 'data'), 'x');
    await expect(podVolumeDir(root, 'web', 'data')).rejects.toMatchObject({ code: 'Conflict', message: expect.stringContaining('not a directory') });
  });

  it('accepts a root that is itself a link (the operator chose it) and binds its real path', async () => {
    await symlink(root, join(base, 'link-to-root'));
    await expect(podVolumeDir(join(base, 'link-to-root'), 'web', 'data')).resolves.toBe(join(root, 'web', 'data'));
  });
});

describe('DockerRuntime volumes on a real engine', () => {
  const docker = independentDocker();
  let images: TestImages;
  let base: string;
  let root: string;
  let outside: string;
  let runtime: DockerRuntime;
  /**
   * The containers of these tests live in one sandbox, of a pod of its own: a test can then tell
   * that a refused create left no namespace of its pod behind.
   */
  let sandboxId: string;

  beforeAll(async () => {
    images = await buildTestImages();
    base = await realpath(await mkdtemp(join(tmpdir(), 'kubelet-ts-volumes-engine-')));
    root = join(base, 'root');
    outside = join(base, 'outside');
    await mkdir(outside);
    runtime = new DockerRuntime({ podInfraImage: images.pause, hostIp: '127.0.0.1', volumesRoot: root });
    sandboxId = (await runtime.runSandbox(buildSandboxSpec(manifest('volumes-tests', []), { node: NODE, source: 'test' }))).id;
  });

  afterAll(async () => {
    await removeLabelled(`${Labels.node}=${NODE}`);
    await rm(base, { recursive: true, force: true });
  });

  const manifest = (podId: string, containers: unknown[]): ContainerManifest => {
    const r = validateManifest({ id: podId, volumes: [{ name: 'data' }], containers });
    if (!r.ok) throw new Error(JSON.stringify(r.errors));
    return r.manifest;
  };

  const spec = (podId: string): ContainerSpec => {
    const m = manifest(podId, [{ name: 'main', image: images.busybox, command: ['sh', '-c', 'echo written > /data/file'], volumeMounts: [{ name: 'data', mountPath: '/data' }] }]);
    return buildContainerSpec(m, m.containers[0]!, { node: NODE, source: 'test' });
  };

  const created = async (podId: string) =>
    docker.listContainers({ all: true, filters: { label: [`${Labels.node}=${NODE}`, `${Labels.manifestId}=${podId}`] } });

  it('mounts the directory under the root, where the container writes', async () => {
    const c = await runtime.create(spec('writes'), sandboxId);
    await runtime.start(c.id);
    await docker.getContainer(c.id).wait();
    expect((await docker.getContainer(c.id).inspect()).HostConfig.Binds).toEqual([`${join(root, 'writes', 'data')}:/data:rw`]);
    expect(await readdir(join(root, 'writes', 'data'))).toEqual(['file']);
    await runtime.remove(c.id, { force: true });
  });

  it('creates no container (and no pod namespace) when a link is planted in the root, and mounts nothing outside it', async () => {
    await mkdir(root, { recursive: true });
    await symlink(outside, join(root, 'planted'));
    const error = await runtime.create(spec('planted'), sandboxId).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'Conflict', message: expect.stringContaining(`${join(root, 'planted')} is a symbolic link`) });
    expect(await created('planted')).toEqual([]);
    expect(await docker.listContainers({ all: true, filters: { label: [`${Labels.sandbox}=planted`] } })).toEqual([]);
    expect(await readdir(outside)).toEqual([]);
  });

  it('refuses a mount whose names could leave the root before the engine is asked', async () => {
    for (const [podId, volume] of [['..', 'data'], ['escape', '../../outside'], ['escape', '/etc']] as const) {
      const bad = { ...spec('escape'), podId, mounts: [{ volume, containerPath: '/x', readOnly: false }] };
      await expect(runtime.create(bad, sandboxId)).rejects.toMatchObject({ code: 'InvalidManifest' });
    }
    expect(await created('escape')).toEqual([]);
    expect(await readdir(outside)).toEqual([]);
  });
});
