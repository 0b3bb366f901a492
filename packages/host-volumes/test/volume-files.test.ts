import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdir, mkdtemp, readdir, readFile, readlink, realpath, rm, stat, statfs, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mountSourceDir, podVolumeDir, removePodVolumes, volumeFilesWritten, writeVolumeFiles } from '../src/index.js';

const file = (path: string, data: string, mode = 0o644) => ({ path, data: Buffer.from(data), mode });

describe('volumes of files are written as the kubelet writes them: whole versions, swapped at once', () => {
  let root: string;
  beforeEach(async () => {
    root = join(await realpath(await mkdtemp(join(tmpdir(), 'kubelet-ts-files-'))), 'root');
  });
  afterEach(async () => {
    await rm(join(root, '..'), { recursive: true, force: true });
  });

  it('writes each name as a link through ..data, and a new version replaces the old whole', async () => {
    expect(await volumeFilesWritten(root, 'web', 'cfg')).toBe(false);
    const first = await writeVolumeFiles(root, 'web', 'cfg', [file('a', '1'), file('dir/b', '2', 0o400)]);
    expect(first).toMatchObject({ dir: join(root, 'web', 'cfg'), changed: true });
    expect(await volumeFilesWritten(root, 'web', 'cfg')).toBe(true);
    expect(await readlink(join(first.dir, 'a'))).toBe('..data/a');
    expect(await readFile(join(first.dir, 'dir', 'b'), 'utf8')).toBe('2');
    expect((await stat(join(first.dir, 'dir', 'b'))).mode & 0o777).toBe(0o400);
    const version = await readlink(join(first.dir, '..data'));

    // The same payload again writes nothing.
    expect((await writeVolumeFiles(root, 'web', 'cfg', [file('a', '1'), file('dir/b', '2', 0o400)], {}, first.digest)).changed).toBe(false);
    const second = await writeVolumeFiles(root, 'web', 'cfg', [file('a', 'one'), file('c', '3')], {}, first.digest);
    expect(second.changed).toBe(true);
    expect(await readFile(join(first.dir, 'a'), 'utf8')).toBe('one');
    // The name no longer given, and the old version, are gone.
    const entries = (await readdir(first.dir)).sort();
    expect(entries).toEqual(['..data', await readlink(join(first.dir, '..data')), 'a', 'c'].sort());
    expect(entries).not.toContain(version);
    expect(entries).not.toContain('dir');
  });

  it('gives the files to the pod’s group, readable by it', async () => {
    const { dir } = await writeVolumeFiles(root, 'web', 'sec', [file('token', 't', 0o400)], { uid: 1000, gid: 2000 });
    const s = await stat(join(dir, 'token'));
    expect([s.mode & 0o777, s.uid, s.gid]).toEqual([0o440, 1000, 2000]);
  });

  it('refuses a volume directory that a link was planted in place of', async () => {
    const other = await mkdtemp(join(tmpdir(), 'kubelet-ts-elsewhere-'));
    try {
      await writeVolumeFiles(root, 'web', 'cfg', [file('a', '1')]);
      await rm(join(root, 'web', 'cfg'), { recursive: true });
      await symlink(other, join(root, 'web', 'cfg'));
      await expect(writeVolumeFiles(root, 'web', 'cfg', [file('a', '2')])).rejects.toThrow(/symbolic link/);
      expect(await readdir(other)).toEqual([]);
    } finally {
      await rm(other, { recursive: true, force: true });
    }
  });
});

describe('a subPath binds a path inside its volume, never outside', () => {
  let root: string;
  beforeEach(async () => {
    root = join(await realpath(await mkdtemp(join(tmpdir(), 'kubelet-ts-subpath-'))), 'root');
  });
  afterEach(async () => {
    await rm(join(root, '..'), { recursive: true, force: true });
  });
  const mount = (subPath: string, extra: object = {}) => ({ volume: 'data', containerPath: '/data', readOnly: false, subPath, ...extra });

  it('makes a missing subPath as a directory of the volume, writable by any user', async () => {
    const dir = await mountSourceDir(root, 'web', mount('mysql/data'));
    expect(dir).toBe(join(root, 'web', 'data', 'mysql', 'data'));
    expect((await stat(dir)).mode & 0o777).toBe(0o777);
  });

  it("resolves a ConfigMap key to its version's file, as the kubelet binds it", async () => {
    const { dir } = await writeVolumeFiles(root, 'web', 'cfg', [{ path: 'nginx.conf', data: Buffer.from('x'), mode: 0o644 }]);
    const source = await mountSourceDir(root, 'web', mount('nginx.conf', { volume: 'cfg', hostPath: dir }));
    expect(source).toBe(join(dir, await readlink(join(dir, '..data')), 'nginx.conf'));
  });

  it('refuses a subPath that a link inside the volume leads out of, and makes nothing there', async () => {
    const outside = await mkdtemp(join(tmpdir(), 'kubelet-ts-outside-'));
    try {
      const volume = await mountSourceDir(root, 'web', { volume: 'data', containerPath: '/data', readOnly: false });
      await symlink(outside, join(volume, 'escape'));
      await expect(mountSourceDir(root, 'web', mount('escape/new'))).rejects.toThrow(/outside the volume/);
      expect(await readdir(outside)).toEqual([]);
      await mkdir(join(volume, 'ok'));
      expect(await mountSourceDir(root, 'web', mount('ok'))).toBe(join(volume, 'ok'));
    } finally {
      await rm(outside, { recursive: true, force: true });
    }
  });
});

describe('an emptyDir in memory is a tmpfs of its size limit, unmounted with its pod', () => {
  let root: string;
  beforeEach(async () => {
    root = join(await realpath(await mkdtemp(join(tmpdir(), 'kubelet-ts-tmpfs-'))), 'root');
  });
  afterEach(async () => {
    await removePodVolumes(root, 'web');
    await rm(join(root, '..'), { recursive: true, force: true });
  });
  const mounts = async () => (await readFile('/proc/self/mountinfo', 'utf8')).split('\n').filter((l) => l.includes(` ${root}/`));

  it('mounts it once, of the size and mode asked, and removes it with the pod', async () => {
    const emptyDir = { medium: 'Memory' as const, sizeLimit: 8 * 1024 * 1024, mode: 0o1777 };
    const dir = await podVolumeDir(root, 'web', 'cache', undefined, emptyDir);
    expect(await podVolumeDir(root, 'web', 'cache', undefined, emptyDir)).toBe(dir);
    const mounted = await mounts();
    expect(mounted).toHaveLength(1);
    expect(mounted[0]).toMatch(new RegExp(` ${dir} .* - tmpfs tmpfs .*size=8192k`));
    expect((await stat(dir)).mode & 0o7777).toBe(0o1777);
    const { bsize, blocks } = await statfs(dir);
    expect(bsize * blocks).toBe(8 * 1024 * 1024);
    await removePodVolumes(root, 'web');
    expect(await mounts()).toEqual([]);
    await expect(stat(join(root, 'web'))).rejects.toThrow(/ENOENT/);
  });

  it('gives a disk emptyDir the mode asked', async () => {
    const dir = await podVolumeDir(root, 'web', 'tmp', undefined, { mode: 0o1777 });
    expect((await stat(dir)).mode & 0o7777).toBe(0o1777);
    expect(await mounts()).toEqual([]);
  });
});
