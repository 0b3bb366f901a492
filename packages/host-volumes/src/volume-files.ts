import { createHash } from 'node:crypto';
import { chmod, chown, lstat, mkdir, readdir, readlink, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { VolumeFile } from '@kubelet-ts/core';
import { ownDirectory, podVolumeDir } from './pod-volumes.js';

/** Who owns the files: the pod's `runAsUser` and `fsGroup`, when it sets them; root otherwise. */
export interface FilesOwner {
  readonly uid?: number;
  readonly gid?: number;
}

const DATA = '..data';
const DATA_TMP = '..data_tmp';

/**
 * Writes a volume of files (ConfigMap, Secret, downward API) into `<root>/<pod>/<volume>` as the
 * kubelet's AtomicWriter does, so that a container that has the directory bound sees either the
 * old files or the new, never a mix: the files go into a new `..<time>` directory, the `..data`
 * link is swapped to it with one rename, each top-level name is a link through `..data`, and the
 * old directory goes. Files get their mode, owned by `owner` (with a group, readable by it, as the
 * kubelet's fsGroup ownership makes them). Returns the directory to bind, and whether anything
 * changed (`digest` is what the caller last wrote there; the same payload writes nothing).
 */
export async function writeVolumeFiles(
  root: string,
  podId: string,
  volume: string,
  files: readonly VolumeFile[],
  owner: FilesOwner = {},
  digest?: string,
): Promise<{ readonly dir: string; readonly digest: string; readonly changed: boolean }> {
  const dir = await podVolumeDir(root, podId, volume);
  const next = payloadDigest(files, owner);
  if (digest === next && (await isLink(join(dir, DATA)))) return { dir, digest: next, changed: false };
  // The directory itself: traversable by any user the container runs as; the files' modes say who reads them.
  await ownDirectory(dir, root, 0o755);
  const version = `..${new Date().toISOString().replace(/[:.]/g, '_')}.${process.pid}.${Math.random().toString(36).slice(2, 8)}`;
  const versionDir = join(dir, version);
  await mkdir(versionDir, { mode: 0o755 });
  for (const file of files) {
    const target = join(versionDir, file.path);
    await mkdir(dirname(target), { recursive: true, mode: 0o755 });
    // With a group (the pod's fsGroup), its members read every file, as the kubelet's ownership change makes them.
    const mode = owner.gid === undefined ? file.mode : file.mode | 0o440;
    await writeFile(target, file.data, { mode });
    await chownIf(target, owner);
    // writeFile's mode is filtered by the umask: set it as asked.
    await chmod(target, mode);
  }
  const previous = await readlink(join(dir, DATA)).catch(() => undefined);
  await rm(join(dir, DATA_TMP), { force: true });
  await symlink(version, join(dir, DATA_TMP));
  await rename(join(dir, DATA_TMP), join(dir, DATA));
  // Each top-level name a link through ..data; the names no longer given go.
  const wanted = new Set(files.map((f) => f.path.split('/')[0]!));
  for (const name of wanted) {
    const link = join(dir, name);
    if (!(await isLink(link))) await symlink(join(DATA, name), link);
  }
  for (const entry of await readdir(dir)) {
    if (entry.startsWith('..') || wanted.has(entry)) continue;
    await rm(join(dir, entry), { recursive: true, force: true });
  }
  if (previous !== undefined && previous !== version && previous.startsWith('..'))
    await rm(join(dir, previous), { recursive: true, force: true });
  return { dir, digest: next, changed: true };
}

/** Whether a pod's volume of files has been written in `<root>/<pod>/<volume>` (by this process or an earlier one). */
export async function volumeFilesWritten(root: string, podId: string, volume: string): Promise<boolean> {
  return isLink(join(root, podId, volume, DATA));
}

function payloadDigest(files: readonly VolumeFile[], owner: FilesOwner): string {
  const hash = createHash('sha256').update(`${owner.uid ?? ''}:${owner.gid ?? ''}\0`);
  for (const f of [...files].sort((a, b) => (a.path < b.path ? -1 : 1)))
    hash.update(`${f.path}\0${f.mode}\0${f.data.byteLength}\0`).update(f.data);
  return hash.digest('hex');
}

async function isLink(path: string): Promise<boolean> {
  return lstat(path).then(
    (s) => s.isSymbolicLink(),
    () => false,
  );
}

async function chownIf(path: string, owner: FilesOwner): Promise<void> {
  if (owner.uid === undefined && owner.gid === undefined) return;
  await chown(path, owner.uid ?? 0, owner.gid ?? 0);
}
