import { createHash } from 'node:crypto';
import { ChangeReporter, KubeletError, canonicalJson, type ContainerManifest, type SourceObject } from '@kubelet-ts/core';

/**
 * Remembers the last set a source delivered, so that a re-read which changes nothing delivers
 * nothing; the first set after `reset` (a start) is always delivered, so an empty set is seen too.
 */
export class DeliveredSet {
  private readonly fingerprints = new ChangeReporter();

  /** True when `manifests` (or the ConfigMaps and Secrets beside them) differ from the last passed here since `reset`. */
  changed(manifests: readonly ContainerManifest[], objects: readonly SourceObject[] = []): boolean {
    return this.fingerprints.changed(
      objects.length === 0 ? canonicalJson(manifests) : `${canonicalJson(manifests)}\n${objectsDigest(objects)}`,
    );
  }

  reset(): void {
    this.fingerprints.reset();
  }
}

/**
 * A manifest id given twice in one document: the first wins (as between two files of the file
 * source), and each repeat is a `Conflict` naming the origin.
 */
export function firstOfEachId(
  manifests: readonly ContainerManifest[],
  origin: string,
  adapter?: string,
): { manifests: ContainerManifest[]; conflicts: KubeletError[] } {
  const seen = new Set<string>();
  const conflicts: KubeletError[] = [];
  const kept = manifests.filter((m) => {
    if (!seen.has(m.id)) {
      seen.add(m.id);
      return true;
    }
    conflicts.push(new KubeletError('Conflict', `${origin}: manifest id "${m.id}" is given more than once; using the first`, { adapter }));
    return false;
  });
  return { manifests: kept, conflicts };
}

/** A digest of objects, their bytes included (kept as a digest: a Secret's bytes are held nowhere else than in the object). */
function objectsDigest(objects: readonly SourceObject[]): string {
  const hash = createHash('sha256');
  for (const o of objects) {
    hash.update(`${o.kind}\0${o.namespace}\0${o.name}\0`);
    for (const key of Object.keys(o.data).sort()) hash.update(`${key}\0${o.data[key]!.byteLength}\0`).update(o.data[key]!);
  }
  return hash.digest('hex');
}
