import { ChangeReporter, KubeletError, canonicalJson, type ContainerManifest } from '@kubelet-ts/core';

/**
 * Remembers the last set a source delivered, so that a re-read which changes nothing delivers
 * nothing; the first set after `reset` (a start) is always delivered, so an empty set is seen too.
 */
export class DeliveredSet {
  private readonly fingerprints = new ChangeReporter();

  /** True when `manifests` differs from the last set passed here since `reset`. */
  changed(manifests: readonly ContainerManifest[]): boolean {
    return this.fingerprints.changed(canonicalJson(manifests));
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
