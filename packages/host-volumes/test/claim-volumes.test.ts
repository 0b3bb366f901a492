import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdir, mkdtemp, readdir, realpath, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeletError } from '@kubelet-ts/core';
import { claimVolumeDir, listClaimVolumes, podVolumeDir, removeClaimVolume, removePodVolumes } from '../src/index.js';

describe("claims' named volumes outlive their pods and go only when removed", () => {
  let base: string;
  let root: string;

  beforeEach(async () => {
    base = await realpath(await mkdtemp(join(tmpdir(), 'kubelet-ts-claims-')));
    root = join(base, 'root');
  });

  afterEach(async () => {
    await rm(base, { recursive: true, force: true });
  });

  it('makes <root>/.claims/<claim> once, keeps what is in it, and lists it', async () => {
    const dir = await claimVolumeDir(root, 'mysql-data');
    expect(dir).toBe(join(root, '.claims', 'mysql-data'));
    await writeFile(join(dir, 'ibdata1'), 'rows');
    expect(await claimVolumeDir(root, 'mysql-data')).toBe(dir);
    expect(await readdir(dir)).toEqual(['ibdata1']);
    await claimVolumeDir(root, 'www.example');
    expect(await listClaimVolumes(root)).toEqual(['mysql-data', 'www.example']);
  });

  it("is not touched by a pod's removal, even a pod that mounted it", async () => {
    const claim = await claimVolumeDir(root, 'data');
    await writeFile(join(claim, 'kept'), 'x');
    await podVolumeDir(root, 'web', 'cache');
    await removePodVolumes(root, 'web');
    expect(await readdir(claim)).toEqual(['kept']);
  });

  it('removes a claim and what is in it only when asked; false for one that is not there', async () => {
    await writeFile(join(await claimVolumeDir(root, 'data'), 'kept'), 'x');
    expect(await removeClaimVolume(root, 'data')).toBe(true);
    expect(await listClaimVolumes(root)).toEqual([]);
    expect(await removeClaimVolume(root, 'data')).toBe(false);
    expect(await removeClaimVolume(root, '../root')).toBe(false);
    expect(await listClaimVolumes(join(base, 'nowhere'))).toEqual([]);
  });

  it('refuses a name that is not a DNS subdomain, and a link planted at either level', async () => {
    await expect(claimVolumeDir(root, '../escape')).rejects.toThrow(/must be a DNS subdomain/);
    const outside = join(base, 'outside');
    await mkdir(outside);
    await mkdir(join(root, '.claims'), { recursive: true });
    await symlink(outside, join(root, '.claims', 'data'));
    const error = await claimVolumeDir(root, 'data').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(KubeletError);
    expect((error as Error).message).toContain('is a symbolic link');
    await rm(join(root, '.claims'), { recursive: true });
    await symlink(outside, join(root, '.claims'));
    await expect(claimVolumeDir(root, 'data')).rejects.toThrow(/is a symbolic link/);
    expect(await readdir(outside)).toEqual([]);
  });
});

describe('volume directories: writable by any user of a container, reachable by no other user of the host', () => {
  let base: string;

  beforeEach(async () => {
    base = await realpath(await mkdtemp(join(tmpdir(), 'kubelet-ts-modes-')));
  });

  afterEach(async () => {
    await rm(base, { recursive: true, force: true });
  });

  it('makes a pod volume and a claim 0777 (as the kubelet makes an emptyDir), what holds them 0750, whatever the umask', async () => {
    const before = process.umask(0o077);
    try {
      const volume = await podVolumeDir(base, 'web', 'data');
      const claim = await claimVolumeDir(base, 'db');
      const mode = async (path: string) => (await stat(path)).mode & 0o7777;
      expect(await mode(volume)).toBe(0o777);
      expect(await mode(claim)).toBe(0o777);
      expect(await mode(join(base, 'web'))).toBe(0o750);
      expect(await mode(join(base, '.claims'))).toBe(0o750);
    } finally {
      process.umask(before);
    }
  });
});
