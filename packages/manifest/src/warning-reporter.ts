import { createHash } from 'node:crypto';
import { canonicalJson, type SourceWarning } from '@kubelet-ts/core';
import type { ManifestWarnings } from './parse.js';

/**
 * Says each warning of a source's manifests once per manifest version: a re-read that finds the
 * same manifest says nothing, a changed manifest that still uses a deprecated field says it again.
 * What the last call did not hold is forgotten, so a manifest that comes back is warned about anew.
 * A source keeps one per document it reads (a file, a URL's body, an etcd key).
 */
export class WarningReporter {
  private said = new Set<string>();

  report(items: readonly ManifestWarnings[], emit: (warning: SourceWarning) => void): void {
    const now = new Set<string>();
    for (const item of items) {
      // A digest, not the manifest's JSON itself: what is remembered stays small.
      const version = createHash('sha256').update(canonicalJson(item.manifest)).digest('hex');
      for (const w of item.warnings) {
        const key = `${item.origin}\u0000${item.index ?? ''}\u0000${w.field}\u0000${version}`;
        now.add(key);
        if (this.said.has(key)) continue;
        const where = item.index === undefined ? item.origin : `${item.origin}[${item.index}]`;
        emit({
          reason: w.reason,
          podId: item.manifest.id,
          field: w.field,
          paths: w.paths,
          message: `${where} (id "${item.manifest.id}"): ${w.paths.join(', ')}: ${w.message}`,
        });
      }
    }
    this.said = now;
  }

  /** Forgets what was said (a restarted source says everything afresh). */
  reset(): void {
    this.said = new Set();
  }
}
