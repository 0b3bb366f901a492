import type { ContainerManifest } from './manifest.js';
import type { SourceObject } from './objects.js';

/** Where a source reports. Each `update` replaces everything the source said before (SET semantics). */
export interface SourceSink {
  /**
   * The complete current set of this source's manifests, all valid, and the ConfigMaps and
   * Secrets it gives beside them (absent: none), which its pods read by name.
   */
  update(manifests: readonly ContainerManifest[], objects?: readonly SourceObject[]): void;
  /**
   * A problem the source hit (an invalid file, an unreachable backend). The source's last good set
   * stays in force. With `fatal`, the source has stopped working and its supervisor closes it and
   * starts it again after a back-off.
   */
  error(error: Error, options?: { readonly fatal?: boolean }): void;
  /**
   * Optional: a manifest the source delivers is valid but uses something to change (a deprecated
   * 2014 spelling). The agent records it as an event of type `warning.reason` (`DeprecatedField`)
   * and logs it. Sources say each warning once per manifest version (see `WarningReporter` in
   * `@kubelet-ts/manifest`), not on every re-read; a sink without this method drops them.
   */
  warning?(warning: SourceWarning): void;
  /**
   * The set this source last delivered before the agent restarted, when the agent keeps its
   * sources' last good sets on disk (kubelet-ts: `--root-dir`); absent otherwise. The agent runs it
   * until the source delivers. A source whose state is only what it was told (the agent's server)
   * continues from it; one that reads a backend (a file, a URL, etcd) reads that instead.
   */
  readonly restored?: readonly ContainerManifest[];
}

/** What a source says about a valid manifest that it delivers: one deprecated field of it. */
export interface SourceWarning {
  readonly reason: 'DeprecatedField';
  /** The manifest's id (derived or written). */
  readonly podId: string;
  /** The deprecated field, as a pattern: `containers[].volumeMounts[].path`, `containers[].env[].key`. */
  readonly field: string;
  /** Every place the manifest uses it. */
  readonly paths: readonly string[];
  /** One line: where the manifest came from, its id, the places, and what to write instead. */
  readonly message: string;
}

/**
 * A named origin of manifests (a file, a URL, an etcd key, the agent's own server).
 *
 * The contract:
 * - `start` begins delivering to `sink`; it resolves once the source is running (it need not have
 *   delivered yet). If it rejects, the supervisor calls `close` and tries again after a back-off.
 * - The first `update` marks the source as "seen": until every source has been seen, the agent
 *   stops nothing. A source with nothing to run delivers an empty set rather than staying silent.
 * - A backend that fails is reported through `error`, never by delivering an empty set.
 * - `close` stops every timer, watcher, socket and client; it is idempotent, and no `sink` call
 *   happens after it resolves.
 */
export interface ManifestSource {
  /** Unique among the agent's sources (`file`, `http`, `etcd`, `server`, or the embedder's own). */
  readonly name: string;
  start(sink: SourceSink): Promise<void>;
  close(): Promise<void>;
}
