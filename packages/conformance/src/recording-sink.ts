import {
  objectKey,
  type ContainerManifest,
  type KubeletError,
  type SourceObject,
  type SourceSink,
  type SourceWarning,
} from '@kubelet-ts/core';

/** A sink that records what a source said, and waits for what a test expects. For source tests. */
export class RecordingSink implements SourceSink {
  readonly updates: (readonly ContainerManifest[])[] = [];
  readonly errors: KubeletError[] = [];
  readonly warnings: SourceWarning[] = [];

  /** The ConfigMaps and Secrets given with each update, in step with `updates`. */
  readonly objectUpdates: (readonly SourceObject[])[] = [];

  update(manifests: readonly ContainerManifest[], objects: readonly SourceObject[] = []): void {
    this.updates.push(manifests);
    this.objectUpdates.push(objects);
  }

  /** The latest ConfigMaps and Secrets, as `kind/namespace/name`, sorted. */
  get objectKeys(): string[] {
    return (this.objectUpdates.at(-1) ?? []).map((o) => objectKey(o.kind, o.namespace, o.name)).sort();
  }

  error(error: Error): void {
    this.errors.push(error as KubeletError);
  }

  warning(warning: SourceWarning): void {
    this.warnings.push(warning);
  }

  /** The ids of the latest set, sorted. */
  get ids(): string[] {
    return (this.updates.at(-1) ?? []).map((m) => m.id).sort();
  }

  /** The first container's image of manifest `id` in the latest set. */
  image(id: string): string | undefined {
    return this.updates.at(-1)?.find((m) => m.id === id)?.containers[0]?.image;
  }

  /** Waits until `check` holds; fails naming `what`, the latest ids and the errors so far. */
  async until(check: () => boolean, what: string, ms = 5000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!check()) {
      if (Date.now() > deadline)
        throw new Error(`timed out waiting for ${what}; ids=${this.ids.join(',')} errors=${this.errors.map((e) => e.message).join(' | ')}`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }
}
