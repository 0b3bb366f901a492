import {
  KubeletError,
  derivedManifestId,
  formatFieldErrors,
  validateManifest,
  type ContainerManifest,
  type FieldError,
  type ManifestSource,
  type SourceSink,
  hostAccessOf,
  type HostAccess,
} from '@kubelet-ts/core';
import type { ManifestWarnings } from './parse.js';
import { WarningReporter } from './warning-reporter.js';

/** The host access its manifests may take (see `HostAccess`); none by default. */
export type StaticManifestSourceOptions = HostAccess;

/**
 * A source whose set the embedder sets in code: `set()` delivers the complete new set at once.
 *
 * Manifests are validated here, whatever they are (objects written in plain JavaScript too, or
 * 2014-style ones with `path`, `key` or no id): `set()` and the constructor throw an
 * `InvalidManifest` error naming every wrong field (`[1].containers[0].image`) and change nothing.
 * What is delivered is the normalised form; a manifest without an id is named after the source and
 * its position (see `derivedManifestId`).
 */
export class StaticManifestSource implements ManifestSource {
  private sink: SourceSink | undefined;
  private manifests: readonly ContainerManifest[];
  private warnings: readonly ManifestWarnings[] = [];
  private readonly warned = new WarningReporter();
  private readonly hostAccess: HostAccess;

  constructor(
    readonly name: string,
    manifests: readonly ContainerManifest[] = [],
    options: StaticManifestSourceOptions = {},
  ) {
    this.hostAccess = hostAccessOf(options);
    this.manifests = this.validate(manifests);
  }

  async start(sink: SourceSink): Promise<void> {
    this.sink = sink;
    this.warned.reset();
    this.deliver();
  }

  async close(): Promise<void> {
    this.sink = undefined;
  }

  /** Validates `manifests` and, when all are valid, delivers them; otherwise throws and changes nothing. */
  set(manifests: readonly ContainerManifest[]): void {
    this.manifests = this.validate(manifests);
    this.deliver();
  }

  private deliver(): void {
    const sink = this.sink;
    if (sink === undefined) return;
    sink.update(this.manifests);
    this.warned.report(this.warnings, (w) => sink.warning?.(w));
  }

  private validate(input: readonly unknown[]): ContainerManifest[] {
    const origin = `static source "${this.name}"`;
    if (!Array.isArray(input)) throw new KubeletError('InvalidManifest', `${origin}: expected a list of manifests`, { adapter: this.name });
    const errors: FieldError[] = [];
    const valid: ContainerManifest[] = [];
    const warnings: ManifestWarnings[] = [];
    const seen = new Map<string, number>();
    input.forEach((raw, index) => {
      const result = validateManifest(raw, {
        ...this.hostAccess,
        defaultId: derivedManifestId(this.name, origin, index),
      });
      if (!result.ok) {
        errors.push(...result.errors.map((e) => ({ path: `[${index}]${e.path === '' ? '' : `.${e.path}`}`, message: e.message })));
        return;
      }
      const first = seen.get(result.manifest.id);
      if (first !== undefined)
        errors.push({ path: `[${index}].id`, message: `duplicate manifest id "${result.manifest.id}" (also [${first}])` });
      seen.set(result.manifest.id, first ?? index);
      valid.push(result.manifest);
      if (result.warnings.length > 0) warnings.push({ origin, index, manifest: result.manifest, warnings: result.warnings });
    });
    if (errors.length > 0) {
      throw new KubeletError('InvalidManifest', `${origin}: invalid manifests: ${formatFieldErrors(errors)}`, {
        adapter: this.name,
        fieldErrors: errors,
      });
    }
    this.warnings = warnings;
    return valid;
  }
}
