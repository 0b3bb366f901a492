import { afterAll, describe, expect, it } from '@jest/globals';
import { link, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ContainerManifest } from '@kubelet-ts/core';
import { measureVolume, volumeDirsOf } from '../src/volume-figures.js';

const roots: string[] = [];
afterAll(async () => {
  for (const root of roots) await rm(root, { recursive: true, force: true });
});

const temp = async () => {
  const root = await mkdtemp(join(tmpdir(), 'kubelet-ts-volume-figures-'));
  roots.push(root);
  return root;
};

const manifest = (volumes: ContainerManifest['volumes']): ContainerManifest =>
  ({ version: 'v1beta1', id: 'web', containers: [], volumes, restartPolicy: 'Always' }) as unknown as ContainerManifest;

describe('volumeDirsOf: the volumes of a pod the agent makes', () => {
  it("names a pod's own volumes, its claims and its volumes of files where the agent made them, and leaves host paths out", () => {
    const m = manifest([
      { name: 'cache' },
      { name: 'scratch', emptyDir: { medium: 'Memory' } },
      { name: 'data', claim: { name: 'db-data' } },
      { name: 'config', files: { sources: [] } },
      { name: 'logs', hostPath: { path: '/var/log' } },
    ] as unknown as ContainerManifest['volumes']);
    expect(volumeDirsOf(m, { volumesRoot: '/v', volumeFilesDir: '/f' })).toEqual([
      { name: 'cache', dir: '/v/web/cache' },
      { name: 'scratch', dir: '/v/web/scratch' },
      { name: 'data', dir: '/v/.claims/db-data', claim: 'db-data' },
      { name: 'config', dir: '/f/web/config' },
    ]);
    // Without a files directory, the volumes of files are not measured.
    expect(volumeDirsOf(m, { volumesRoot: '/v' }).map((v) => v.name)).toEqual(['cache', 'scratch', 'data']);
    expect(volumeDirsOf(m, {})).toEqual([]);
  });
});

describe('measureVolume: du of the directory, statfs of its file system', () => {
  it('sums the blocks of every file and directory below, counts each as an inode, and a hard-linked file once', async () => {
    const dir = join(await temp(), 'cache');
    await mkdir(join(dir, 'sub'), { recursive: true });
    await writeFile(join(dir, 'a'), Buffer.alloc(64 * 1024, 1));
    await writeFile(join(dir, 'sub', 'b'), Buffer.alloc(128 * 1024, 1));
    await link(join(dir, 'sub', 'b'), join(dir, 'b-again'));
    const usage = (await measureVolume({ name: 'cache', dir }, 'default', 7_000))!;
    // dir, sub, a, b (b-again is b): 4 inodes; 192 KiB of data plus the two directories' blocks.
    expect(usage.inodesUsed).toBe(4);
    expect(usage.usedBytes).toBeGreaterThanOrEqual(192 * 1024);
    expect(usage.usedBytes).toBeLessThan(192 * 1024 + 64 * 1024);
    expect(usage).toMatchObject({ name: 'cache', timestamp: 7_000 });
    expect(usage.capacityBytes).toBeGreaterThan(usage.availableBytes);
    expect(usage.inodes).toBeGreaterThan(usage.inodesFree!);
    expect(usage.claim).toBeUndefined();
  });

  it('never follows a link out of the volume: a link to a big file counts as the link alone', async () => {
    const root = await temp();
    await writeFile(join(root, 'outside'), Buffer.alloc(1024 * 1024, 1));
    const dir = join(root, 'vol');
    await mkdir(dir);
    await symlink(join(root, 'outside'), join(dir, 'link'));
    await symlink(root, join(dir, 'up'));
    const usage = (await measureVolume({ name: 'vol', dir }, 'default', 0))!;
    expect(usage.inodesUsed).toBe(3);
    expect(usage.usedBytes).toBeLessThan(64 * 1024);
  });

  it("names a claim's volume by its claim, in the pod's namespace; a volume not made (or gone) has no figures", async () => {
    const dir = join(await temp(), 'db-data');
    await mkdir(dir);
    expect(await measureVolume({ name: 'data', dir, claim: 'db-data' }, 'shop', 0)).toMatchObject({
      name: 'data',
      claim: { name: 'db-data', namespace: 'shop' },
      inodesUsed: 1,
    });
    expect(await measureVolume({ name: 'data', dir: join(dir, 'not-made') }, 'shop', 0)).toBeUndefined();
    await writeFile(join(dir, 'file'), 'x');
    expect(await measureVolume({ name: 'data', dir: join(dir, 'file') }, 'shop', 0)).toBeUndefined();
  });
});
