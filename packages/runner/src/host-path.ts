import { constants } from 'node:fs';
import { mkdir, open, realpath, stat } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import { KubeletError, type HostPathType, type Mount } from '@kubelet-ts/core';

type Kind = 'directory' | 'file' | 'socket' | 'character device' | 'block device';

// What each checked type must find: the kubelet's `checkTypeInternal` (pkg/volume/hostpath).
const WANTED: Record<Exclude<HostPathType, ''>, Kind> = {
  DirectoryOrCreate: 'directory',
  Directory: 'directory',
  FileOrCreate: 'file',
  File: 'file',
  Socket: 'socket',
  CharDevice: 'character device',
  BlockDevice: 'block device',
};

/**
 * Makes sure the host path of a v1 `hostPath` volume is what its `type` says, as the kubelet does
 * before it starts a pod: `DirectoryOrCreate` makes a missing directory (mode 0755, parents too,
 * as `os.MkdirAll`), `FileOrCreate` a missing empty file (mode 0644; its parent directory must
 * exist, as in the kubelet, which does not make it), and every other type (`Directory`, `File`,
 * `Socket`, `CharDevice`, `BlockDevice`) must find the path existing and of that kind. Links are
 * followed, as the kubelet's `stat` does. `''` or no type checks no kind.
 *
 * Whatever the type, a path that resolves to the host's root (a link to `/`, `/proc/self/root`)
 * is refused with `InvalidManifest`: the validator refuses `/` as written, but only the file
 * system knows where a link leads, so the rule is checked again here, just before the mount.
 *
 * Rejects with `NotFound` (absent, or a parent missing) or `Conflict` (of another kind), naming
 * `volume` and the path and saying what to do.
 */
export async function prepareHostPath(path: string, type: HostPathType | undefined, volume: string): Promise<void> {
  await refuseHostRoot(path, volume);
  if (type === undefined || type === '') return;
  const wanted = WANTED[type];
  let found = await kindOf(path);
  const where = `volume ${JSON.stringify(volume)}: hostPath ${path} (type ${type})`;
  if (found === undefined && type === 'DirectoryOrCreate') {
    await create(where, async () => void (await mkdir(path, { recursive: true, mode: 0o755 })));
    found = await kindOf(path);
  } else if (found === undefined && type === 'FileOrCreate') {
    // O_CREAT without O_EXCL or O_TRUNC: a file made meanwhile by someone else is kept as it is.
    await create(where, async () => (await open(path, constants.O_RDONLY | constants.O_CREAT, 0o644)).close());
    found = await kindOf(path);
  }
  if (found === undefined) {
    const instead =
      wanted === 'directory'
        ? 'create it, or use type DirectoryOrCreate'
        : wanted === 'file'
          ? 'create it, or use type FileOrCreate'
          : `make the ${wanted} first`;
    throw new KubeletError('NotFound', `${where} does not exist: ${instead}`);
  }
  if (found !== wanted) {
    throw new KubeletError(
      'Conflict',
      `${where} is a ${found}, not a ${wanted}: point the volume at a ${wanted}, or set the type that matches (or '' for no check)`,
    );
  }
}

/**
 * `prepareHostPath` for each mount of a container spec that binds a host path, in order: a 2014
 * HOST mount (no type) is checked only for the host's root.
 */
export async function prepareHostPaths(mounts: readonly Mount[]): Promise<void> {
  for (const m of mounts) if (m.hostPath !== undefined) await prepareHostPath(m.hostPath, m.hostPathType, m.volume);
}

/**
 * Refuses a host path whose real path is `/` (issue 27 item 4). A path that does not exist yet
 * cannot be the root, and what is made for it (here or by the engine) is a new directory.
 */
async function refuseHostRoot(path: string, volume: string): Promise<void> {
  let real: string;
  try {
    real = await realpath(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return;
    throw new KubeletError(
      'Conflict',
      `volume ${JSON.stringify(volume)}: hostPath ${path} cannot be resolved (${code ?? String(error)}); fix the path or its permissions`,
      { cause: error },
    );
  }
  if (real !== '/') return;
  throw new KubeletError(
    'InvalidManifest',
    `volume ${JSON.stringify(volume)}: hostPath ${path} leads to the host's root directory "/" (through a link), which this agent never binds: ` +
      'point the volume at the directory the container needs (e.g. /var/lib/<app>), not at a link to the root',
  );
}

async function kindOf(path: string): Promise<Kind | 'other' | undefined> {
  let s: Stats;
  try {
    s = await stat(path);
  } catch (error) {
    // ENOTDIR: a parent is not a directory, so the path cannot exist (making it then says why).
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw error;
  }
  if (s.isDirectory()) return 'directory';
  if (s.isFile()) return 'file';
  if (s.isSocket()) return 'socket';
  if (s.isCharacterDevice()) return 'character device';
  if (s.isBlockDevice()) return 'block device';
  return 'other';
}

async function create(where: string, make: () => Promise<void>): Promise<void> {
  try {
    await make();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return;
    if (code === 'ENOENT')
      throw new KubeletError(
        'NotFound',
        `${where} cannot be created: its parent directory does not exist; create the parent first (FileOrCreate does not make it, as in the kubelet)`,
        { cause: error },
      );
    throw new KubeletError(
      'Conflict',
      `${where} cannot be created (${code ?? String(error)}); fix the host path's permissions or create it`,
      { cause: error },
    );
  }
}
