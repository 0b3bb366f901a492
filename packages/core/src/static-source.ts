import type { ContainerManifest } from './manifest.js';
import type { ManifestSource, SourceSink } from './source.js';

/** A source whose set the embedder sets in code: `set()` delivers the complete new set at once. */
export class StaticManifestSource implements ManifestSource {
  private sink: SourceSink | undefined;
  private manifests: readonly ContainerManifest[];

  constructor(
    readonly name: string,
    manifests: readonly ContainerManifest[] = [],
  ) {
    this.manifests = manifests;
  }

  async start(sink: SourceSink): Promise<void> {
    this.sink = sink;
    sink.update(this.manifests);
  }

  async close(): Promise<void> {
    this.sink = undefined;
  }

  set(manifests: readonly ContainerManifest[]): void {
    this.manifests = manifests;
    this.sink?.update(manifests);
  }
}
