import type { ContainerManifest, DesiredPod } from '@kubelet-ts/core';

export interface Conflict {
  readonly podId: string;
  /** The source whose manifest runs. */
  readonly winner: string;
  /** The source whose manifest with the same id is ignored. */
  readonly loser: string;
}

export interface DesiredState {
  readonly pods: readonly DesiredPod[];
  readonly conflicts: readonly Conflict[];
}

/**
 * Keeps the latest set of each source and unions them into the desired state. Sources rank in
 * the order they were configured: when two give the same manifest id, the earlier one's runs and
 * the conflict is reported, so there is never a second copy of a pod.
 */
export class SourceMux {
  private readonly order: readonly string[];
  private readonly sets = new Map<string, readonly ContainerManifest[]>();
  private cached: DesiredState | undefined;

  constructor(sourceNames: readonly string[]) {
    if (new Set(sourceNames).size !== sourceNames.length) throw new Error(`source names must be unique: ${sourceNames.join(', ')}`);
    this.order = sourceNames;
  }

  /** Replaces a source's set. Returns false when nothing changed (same manifest objects). */
  update(source: string, manifests: readonly ContainerManifest[]): boolean {
    if (!this.order.includes(source)) throw new Error(`unknown source ${source}`);
    const previous = this.sets.get(source);
    this.sets.set(source, manifests);
    if (previous !== undefined && sameObjects(previous, manifests)) return false;
    this.cached = undefined;
    return true;
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
    this.cached = { pods: [...byId.values()], conflicts };
    return this.cached;
  }
}

function sameObjects(a: readonly ContainerManifest[], b: readonly ContainerManifest[]): boolean {
  return a.length === b.length && a.every((m, i) => m === b[i]);
}
