import type { PodAdmission, RefusedPod } from './pod-admission.js';
import { objectLookupOf, type ContainerManifest, type DesiredPod, type ObjectLookup, type SourceObject } from '@kubelet-ts/core';

/** Two sources that give a pod of the same id: whose runs and whose is ignored. */
export interface Conflict {
  readonly podId: string;
  /** The source whose manifest runs. */
  readonly winner: string;
  /** The source whose manifest with the same id is ignored. */
  readonly loser: string;
}

/** What the sources ask for, merged: the pods to run, the conflicts between sources, the pods admission refused. */
export interface DesiredState {
  /** The pods to run: those the sources give, one per id, that the node admitted. */
  readonly pods: readonly DesiredPod[];
  readonly conflicts: readonly Conflict[];
  /** The pods the node's admission refused (see `PodAdmission`): shown `Failed`, never run. */
  readonly refused: readonly RefusedPod[];
}

/**
 * Keeps the latest set of each source and unions them into the desired state. Sources rank in
 * the order they were configured: when two give the same manifest id, the earlier one's runs and
 * the conflict is reported, so there is never a second copy of a pod.
 */
export class SourceMux {
  private readonly order: readonly string[];
  private readonly sets = new Map<string, readonly ContainerManifest[]>();
  /** Each source's ConfigMaps and Secrets, as the lookup its pods read. */
  private readonly objectSets = new Map<string, { readonly given: readonly SourceObject[]; readonly lookup: ObjectLookup }>();
  private cached: DesiredState | undefined;

  constructor(
    sourceNames: readonly string[],
    /** The node's admission; without it every pod is admitted. */
    private readonly admission?: PodAdmission,
  ) {
    if (new Set(sourceNames).size !== sourceNames.length) throw new Error(`source names must be unique: ${sourceNames.join(', ')}`);
    this.order = sourceNames;
  }

  /**
   * Replaces a source's set, and its ConfigMaps and Secrets (`objects`; absent: none). Returns false
   * when nothing changed (the same manifest and object values).
   */
  update(source: string, manifests: readonly ContainerManifest[], objects: readonly SourceObject[] = []): boolean {
    if (!this.order.includes(source)) throw new Error(`unknown source ${source}`);
    const previous = this.sets.get(source);
    this.sets.set(source, manifests);
    const before = this.objectSets.get(source)?.given ?? [];
    const objectsChanged = !sameObjects(before, objects);
    if (objectsChanged) {
      if (objects.length === 0) this.objectSets.delete(source);
      else this.objectSets.set(source, { given: objects, lookup: objectLookupOf(objects) });
    }
    if (previous !== undefined && sameObjects(previous, manifests) && !objectsChanged) return false;
    this.cached = undefined;
    return true;
  }

  /** The ConfigMaps and Secrets `source` gives beside its pods; undefined when it gives none. */
  objects(source: string): ObjectLookup | undefined {
    return this.objectSets.get(source)?.lookup;
  }

  /** True once every source has delivered at least once: only then may the agent stop anything. */
  allSeen(): boolean {
    return this.order.every((s) => this.sets.has(s));
  }

  /** Sources that have not delivered yet. */
  unseen(): string[] {
    return this.order.filter((s) => !this.sets.has(s));
  }

  desired(): DesiredState {
    if (this.cached !== undefined) return this.cached;
    const byId = new Map<string, DesiredPod>();
    const conflicts: Conflict[] = [];
    for (const source of this.order) {
      for (const manifest of this.sets.get(source) ?? []) {
        const existing = byId.get(manifest.id);
        if (existing === undefined) byId.set(manifest.id, { manifest, source });
        else conflicts.push({ podId: manifest.id, winner: existing.source, loser: source });
      }
    }
    const given = [...byId.values()];
    const { admitted, refused } = this.admission?.decide(given) ?? { admitted: given, refused: [] };
    this.cached = { pods: admitted, conflicts, refused };
    return this.cached;
  }
}

function sameObjects<T>(a: readonly T[], b: readonly T[]): boolean {
  return a.length === b.length && a.every((m, i) => m === b[i]);
}
