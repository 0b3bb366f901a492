import { chmod, mkdir, readdir, realpath, rm } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { KubeletError, isManifestId, type Mount } from '@kubelet-ts/core';
import { PRIVATE, SHARED, ownDirectory, podVolumeDir } from './pod-volumes.js';

/**
 * The folder under the volumes root that holds the named volumes (claims). No pod id can be it:
 * a manifest id never starts with a dot.
 */
export const CLAIMS_FOLDER = '.claims';

/** Where a claim's named volume is, `<root>/.claims/<claim>`, without making it (`claimVolumeDir` makes it). */
export function claimVolumePath(root: string, claim: string): string {
  return join(root, CLAIMS_FOLDER, claim);
}

/**
 * Makes the claim's directory `<root>/.claims/<claim>` when it is missing and returns the path to
 * bind: the named volume a v1 `persistentVolumeClaim` becomes, as `podman kube play` makes one per
 * claim. It outlives every pod that mounts it; only `removeClaimVolume` removes it. As for pod
 * volumes, each level is made and checked as a plain directory, never a link followed.
 */
export async function claimVolumeDir(root: string, claim: string, adapter?: string): Promise<string> {
  if (!isManifestId(claim)) {
    throw new KubeletError(
      'InvalidManifest',
      `claim ${JSON.stringify(claim)}: the name must be a DNS subdomain to name a directory under ${root}`,
      {
        ...(adapter === undefined ? {} : { adapter }),
      },
    );
  }
  await mkdir(root, { recursive: true });
  const claims = await ownDirectory(join(await realpath(root), CLAIMS_FOLDER), root, PRIVATE);
  return ownDirectory(join(claims, claim), root, SHARED);
}

/** The claims that have a directory under `root`, by name. */
export async function listClaimVolumes(root: string): Promise<string[]> {
  const entries = await readdir(join(root, CLAIMS_FOLDER), { withFileTypes: true }).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return [];
    throw error;
  });
  return entries
    .filter((e) => e.isDirectory() && isManifestId(e.name))
    .map((e) => e.name)
    .sort();
}

/**
 * Removes a claim's directory and what is in it; false when there was none. A link planted there
 * is removed as a link, never followed.
 */
export async function removeClaimVolume(root: string, claim: string): Promise<boolean> {
  if (!isManifestId(claim)) return false;
  const dir = claimVolumePath(root, claim);
  const existed = (await listClaimVolumes(root)).includes(claim);
  await rm(dir, { recursive: true, force: true });
  return existed;
}

/**
 * The host directory (or file) a container's mount binds: a host path as it is (2014
 * `mountType: HOST`, v1 `hostPath`), a claim's named volume, or the pod's own volume directory; with a
 * `subPath`, that path inside it (see `subPathSource`).
 */
export async function mountSourceDir(root: string, podId: string, mount: Mount): Promise<string> {
  const base =
    mount.hostPath !== undefined
      ? mount.hostPath
      : mount.claim === undefined
        ? await podVolumeDir(root, podId, mount.volume, undefined, mount.emptyDir)
        : await claimVolumeDir(root, mount.claim);
  return mount.subPath === undefined ? base : subPathSource(base, mount.subPath, mount.volume);
}

/**
 * A volume's `subPath`, as the kubelet binds one: made as a directory when it is missing (so a
 * container can keep its data in one part of a shared volume), and followed to where it really is,
 * which must be inside the volume: a link a container planted there (`data -> /etc`) is refused,
 * never bound. A ConfigMap's key resolves to the file of the version it names, as in the kubelet
 * (which is why such a file is not updated when the ConfigMap changes).
 */
export async function subPathSource(base: string, subPath: string, volume: string): Promise<string> {
  const realBase = await realpath(base);
  const inside = (path: string) => path === realBase || path.startsWith(realBase + sep);
  const refuse = (real: string) =>
    new KubeletError(
      'Conflict',
      `volume "${volume}": subPath ${JSON.stringify(subPath)} leads to ${real}, outside the volume (${realBase}); refusing to bind it`,
    );
  // Step by step, each step followed before the next is made: nothing is ever made outside the volume.
  let at = realBase;
  for (const step of subPath.split('/')) {
    const next = join(at, step);
    const real = await realpath(next).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
      return undefined;
    });
    if (real === undefined) {
      await mkdir(next, { mode: SHARED });
      await chmod(next, SHARED);
      at = next;
    } else if (!inside(real)) throw refuse(real);
    else at = real;
  }
  return at;
}
