import { chmod, lstat, mkdir, readFile, readlink, realpath, rm } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { KubeletError, isDnsLabel, isManifestId, type EmptyDir } from '@kubelet-ts/core';

const execFileAsync = promisify(execFile);

/** Where the pod's own volume is, `<root>/<pod>/<volume>`, without making it (`podVolumeDir` makes it). */
export function podVolumePath(root: string, podId: string, volume: string): string {
  return join(root, podId, volume);
}

/**
 * Makes the host directory `<root>/<pod>/<volume>` and returns the path to bind. No name can lead
 * outside the root: both must be DNS labels (no `..`, no `/`), and each level below the root is
 * made with `mkdir` (never recursively) and then checked with `lstat`, so a symbolic link planted
 * at `<root>/<pod>` or `<root>/<pod>/<volume>` is refused rather than followed: neither the
 * directory the agent makes nor the one the engine mounts can be elsewhere. The root itself is
 * the operator's and may be a link; its real path is what the bind names.
 *
 * Only the agent writes at these two levels: a container sees the inside of its volume, so a link
 * it makes there lies below what the agent ever resolves.
 */
export async function podVolumeDir(root: string, podId: string, volume: string, adapter?: string, emptyDir?: EmptyDir): Promise<string> {
  for (const [what, , ok] of [
    ['pod id', podId, isManifestId(podId)],
    ['volume name', volume, isDnsLabel(volume)],
  ] as const) {
    if (!ok) {
      throw new KubeletError(
        'InvalidManifest',
        `volume ${JSON.stringify(volume)} of ${JSON.stringify(podId)}: the ${what} must be ${what === 'pod id' ? 'a manifest id (DNS subdomain)' : 'a DNS label'} to name a directory under ${root}`,
        adapter === undefined ? {} : { adapter },
      );
    }
  }
  await mkdir(root, { recursive: true });
  const realRoot = await realpath(root);
  const podDir = await ownDirectory(join(realRoot, podId), root, PRIVATE);
  const dir = await ownDirectory(join(podDir, volume), root, emptyDir?.mode ?? SHARED);
  if (emptyDir?.medium === 'Memory') await mountTmpfs(dir, volume, emptyDir);
  // Belt and braces: what the checks above allowed must resolve to itself, under the root.
  const resolved = await realpath(dir);
  if (resolved !== dir || !resolved.startsWith(realRoot + sep)) {
    throw new KubeletError('Conflict', `volume directory ${dir} resolves to ${resolved}, outside ${realRoot}; refusing to mount it`, {
      ...(adapter === undefined ? {} : { adapter }),
    });
  }
  return dir;
}

/**
 * What a volume directory is made with: writable by every user, as the kubelet makes an emptyDir
 * (0777), so that a container running as a non-root user (`runAsUser`) can write to its volumes;
 * what holds them is the agent's alone (0750), so no other user of the host reaches them.
 */
export const SHARED = 0o777;
export const PRIVATE = 0o750;

/** Makes `path` (with `mode`, whatever the umask) if missing; refuses it when it is a symbolic link or not a directory. */
export async function ownDirectory(path: string, root: string, mode: number): Promise<string> {
  try {
    await mkdir(path, { mode });
    await chmod(path, mode);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const stat = await lstat(path);
  if (stat.isSymbolicLink()) {
    const target = await readlink(path).catch(() => '?');
    throw new KubeletError(
      'Conflict',
      `volume directory ${path} is a symbolic link (to ${target}); refusing to follow it: pod volumes are plain directories under ${root}`,
    );
  }
  if (!stat.isDirectory()) {
    throw new KubeletError('Conflict', `volume directory ${path} exists and is not a directory; refusing to mount it`);
  }
  return path;
}

/**
 * Removes `<root>/<pod>` and every volume in it, once the pod is gone: a new pod with the same id
 * must not find the old pod's files. A link planted there is removed as a link, never followed.
 */
export async function removePodVolumes(root: string, podId: string): Promise<void> {
  if (!isManifestId(podId)) return;
  let realRoot: string;
  try {
    realRoot = await realpath(root);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  // A volume in memory is a tmpfs mounted there: unmounted first, or rm would stop at it.
  const podDir = join(realRoot, podId);
  for (const mounted of await mountsUnder(podDir)) await execFileAsync('umount', [mounted]).catch(() => undefined);
  // rm does not follow symbolic links, at the top or inside.
  await rm(podDir, { recursive: true, force: true });
}

/**
 * Mounts a tmpfs at a pod volume's directory (v1 `emptyDir.medium: Memory`), as the kubelet does:
 * of `sizeLimit` bytes when given (else the kernel's default, half the memory), with the volume's
 * mode. Once: a directory that is already a mount point is left as it is. Mounting needs root (or
 * CAP_SYS_ADMIN); without it the volume is refused, saying so.
 */
async function mountTmpfs(dir: string, volume: string, emptyDir: EmptyDir): Promise<void> {
  if ((await mountsUnder(dir)).includes(dir)) return;
  const mode = (emptyDir.mode ?? SHARED).toString(8);
  const options = [`mode=${mode}`, ...(emptyDir.sizeLimit === undefined ? [] : [`size=${emptyDir.sizeLimit}`])].join(',');
  try {
    await execFileAsync('mount', ['-t', 'tmpfs', '-o', options, 'tmpfs', dir]);
  } catch (error) {
    const said = ((error as { stderr?: string }).stderr ?? (error as Error).message).trim();
    throw new KubeletError(
      'Unsupported',
      `volume ${JSON.stringify(volume)}: medium Memory is a tmpfs mounted at ${dir}, which failed (${said}); run the agent as root, or leave medium out for a directory on the disk`,
    );
  }
}

/** The mount points at `dir` or below it, deepest first, from /proc/self/mountinfo. */
async function mountsUnder(dir: string): Promise<string[]> {
  const text = await readFile('/proc/self/mountinfo', 'utf8').catch(() => '');
  const points = text
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((p): p is string => p !== undefined)
    // mountinfo escapes space, tab, newline and backslash in octal.
    .map((p) => p.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8))));
  return points.filter((p) => p === dir || p.startsWith(dir + sep)).sort((a, b) => b.length - a.length);
}
