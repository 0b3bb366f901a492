import type { BigIntStats, Dir } from 'node:fs';
import { lstat, opendir, statfs } from 'node:fs/promises';
import { join } from 'node:path';
import type { ContainerManifest, VolumeUsage } from '@kubelet-ts/core';
import { claimVolumePath, podVolumePath } from '@kubelet-ts/host-volumes';

/** Where the agent's volumes are on the host (a root left out: none of that kind here), and how often to walk them. */
export interface VolumeRoots {
  /** The runtime's volumes root: a pod's own volumes `<root>/<pod>/<volume>`, claims `<root>/.claims/<claim>`. */
  readonly volumesRoot?: string;
  /** The files of ConfigMap, Secret and downward API volumes, `<dir>/<pod>/<volume>` (`--volume-files-dir`). */
  readonly volumeFilesDir?: string;
  /** How often a pod's volumes are walked (the kubelet's `--volume-stats-agg-period`). Default 60 s. */
  readonly everyMs?: number;
}

/** A volume of a pod and the directory that holds it. */
export interface VolumeDir {
  readonly name: string;
  readonly dir: string;
  readonly claim?: string;
  /** An emptyDir on the disk: the `sizeLimit` it may outgrow (in memory, the tmpfs holds it to it). */
  readonly sizeLimit?: number;
}

/**
 * The directories of the volumes of `manifest` that the agent makes, as the kubelet measures
 * them: its own (emptyDir, 2014 volumes), its claims, its volumes of files. A host path is the
 * host's, not the pod's: the kubelet reports none, nor does this.
 */
export function volumeDirsOf(manifest: ContainerManifest, roots: VolumeRoots): VolumeDir[] {
  const dirs: VolumeDir[] = [];
  for (const v of manifest.volumes) {
    if (v.hostPath !== undefined) continue;
    if (v.claim !== undefined) {
      if (roots.volumesRoot !== undefined)
        dirs.push({ name: v.name, dir: claimVolumePath(roots.volumesRoot, v.claim.name), claim: v.claim.name });
    } else if (v.files !== undefined) {
      if (roots.volumeFilesDir !== undefined) dirs.push({ name: v.name, dir: podVolumePath(roots.volumeFilesDir, manifest.id, v.name) });
    } else if (roots.volumesRoot !== undefined) {
      const limit = v.emptyDir?.medium === undefined ? v.emptyDir?.sizeLimit : undefined;
      dirs.push({
        name: v.name,
        dir: podVolumePath(roots.volumesRoot, manifest.id, v.name),
        ...(limit === undefined ? {} : { sizeLimit: limit }),
      });
    }
  }
  return dirs;
}

/**
 * What a volume takes, as the kubelet's `du` metrics measure it (pkg/volume/util/fs `DiskUsage`):
 * a walk of its directory by `lstat`, never following a link nor crossing into another file
 * system, summing the blocks allocated (512 bytes each) and counting every entry as an inode, a
 * file with several links once; the file system's size, space and inodes by `statfs`. Undefined
 * for a directory that is not there (a volume not made yet, or gone).
 */
export async function measureVolume(volume: VolumeDir, namespace: string, now: number): Promise<VolumeUsage | undefined> {
  let root: BigIntStats;
  try {
    root = await lstat(volume.dir, { bigint: true });
  } catch {
    return undefined;
  }
  if (!root.isDirectory()) return undefined;
  const seen = new Set<bigint>();
  let blocks = 0n;
  let inodes = 0;
  const visit = async (path: string, stats: BigIntStats): Promise<void> => {
    if (stats.dev !== root.dev) return;
    if (stats.nlink > 1n && !stats.isDirectory()) {
      if (seen.has(stats.ino)) return;
      seen.add(stats.ino);
    }
    blocks += stats.blocks;
    inodes += 1;
    if (!stats.isDirectory()) return;
    let dir: Dir;
    try {
      dir = await opendir(path);
    } catch {
      return; // gone, or unreadable, while walked: what was seen stands
    }
    for await (const entry of dir) {
      const child = join(path, entry.name);
      const childStats = await lstat(child, { bigint: true }).catch(() => undefined);
      if (childStats !== undefined) await visit(child, childStats);
    }
  };
  await visit(volume.dir, root);
  const fs = await statfs(volume.dir).catch(() => undefined);
  return {
    name: volume.name,
    timestamp: now,
    usedBytes: Number(blocks * 512n),
    inodesUsed: inodes,
    capacityBytes: fs === undefined ? 0 : fs.blocks * fs.bsize,
    availableBytes: fs === undefined ? 0 : fs.bavail * fs.bsize,
    ...(fs === undefined ? {} : { inodes: fs.files, inodesFree: fs.ffree }),
    ...(volume.claim === undefined ? {} : { claim: { name: volume.claim, namespace } }),
  };
}
