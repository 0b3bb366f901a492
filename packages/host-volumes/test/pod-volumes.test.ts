import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdir, mkdtemp, readdir, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { podVolumeDir } from '../src/index.js';

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
    await expect(podVolumeDir(root, podId, volume)).rejects.toMatchObject({
      code: 'InvalidManifest',
      message: expect.stringMatching(/DNS (label|subdomain)/),
    });
    expect(await tree(base)).toEqual(['outside', 'root']);
  });

  it('refuses a symbolic link planted at <root>/<pod>, naming it, and creates nothing through it', async () => {
    await symlink(outside, join(root, 'web'));
    const error = await podVolumeDir(root, 'web', 'data').catch((e: unknown) => e);
    expect(error).toMatchObject({
      code: 'Conflict',
      message: expect.stringContaining(`${join(root, 'web')} is a symbolic link (to ${outside})`),
    });
    expect(await tree(outside)).toEqual([]);
  });

  it('refuses a symbolic link planted at <root>/<pod>/<volume>', async () => {
    await mkdir(join(root, 'web'));
    await symlink(outside, join(root, 'web', 'data'));
    await expect(podVolumeDir(root, 'web', 'data')).rejects.toMatchObject({
      code: 'Conflict',
      message: expect.stringContaining(join(root, 'web', 'data')),
    });
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
    await expect(podVolumeDir(root, 'web', 'data')).rejects.toMatchObject({
      code: 'Conflict',
      message: expect.stringContaining('not a directory'),
    });
  });

  it('accepts a root that is itself a link (the operator chose it) and binds its real path', async () => {
    await symlink(root, join(base, 'link-to-root'));
    await expect(podVolumeDir(join(base, 'link-to-root'), 'web', 'data')).resolves.toBe(join(root, 'web', 'data'));
  });
});
