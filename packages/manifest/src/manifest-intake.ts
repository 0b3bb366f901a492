import {
  ChangeReporter,
  KubeletError,
  hostAccessOf,
  objectKey,
  type ContainerManifest,
  type HostAccess,
  type SourceObject,
  type SourceSink,
} from '@kubelet-ts/core';
import {
  parseManifests,
  rejectionError,
  retainLastGood,
  retainLastGoodObjects,
  type ManifestWarnings,
  type ParsedManifests,
} from './parse.js';
import { DeliveredSet, firstOfEachId } from './set-delivery.js';
import { sourceLimitProblem, type SourceLimits } from './source-limits.js';
import { WarningReporter } from './warning-reporter.js';

/** With the host access the manifests may take (see `HostAccess`). */
export interface ManifestIntakeOptions extends HostAccess {
  /** The adapter that every problem names (`file`, `http`, `etcd`, `server`). */
  readonly adapter: string;
  /** What the documents may hold together (default 1,000 manifests, 16 MiB as JSON). */
  readonly limits?: SourceLimits | undefined;
  /** Texts longer than this, in bytes, are unreadable. Default 1 MiB. */
  readonly maxBytes?: number | undefined;
  /**
   * What messages call the documents together when they hold more than the limits, e.g.
   * `/etc/kubelet: the files`. Default `the <adapter> source's documents`.
   */
  readonly describedAs?: string | undefined;
}

/** The id of a manifest written without one, by its position in the text (see `ParseOptions.idFor`). */
export type IdFor = (position: number | undefined) => string;

/** A document whose manifests a source has already checked as a whole (a request to the agent's server). */
export interface HeldDocument {
  readonly origin: string;
  readonly manifests: readonly ContainerManifest[];
  readonly warnings?: readonly ManifestWarnings[];
  /** The ConfigMaps and Secrets given with them. */
  readonly objects?: readonly SourceObject[];
}

interface DocumentState {
  /** Its last good content, manifest by manifest (see `retainLastGood`), the first of each id. */
  manifests: readonly ContainerManifest[];
  /** Its last good ConfigMaps and Secrets, object by object (see `retainLastGoodObjects`). */
  objects: readonly SourceObject[];
  /** The deprecated spellings of those manifests, as its last readable text used them. */
  warnings: readonly ManifestWarnings[];
  /** What its last read found wrong. */
  problems: readonly KubeletError[];
  readonly reported: ChangeReporter;
  /** Some text of it was readable: until then it holds nothing that is known, not even an empty set. */
  good: boolean;
}

/**
 * How a source takes manifests in: bytes and where they came from go in; the set to run, its
 * problems and warnings come out, each said once. A source has one document or several, each
 * named by its origin: the files of a directory, a URL's body, an etcd key, the manifests posted
 * to the agent's server.
 *
 * - A text is parsed within bounds. A manifest that turns invalid keeps its last good version; a
 *   text that is unreadable, or could not be had at all (`fail`), changes nothing but the problem.
 * - An id given twice is taken from its first place, in a document and then in document order,
 *   and each repeat is a `Conflict`.
 * - A set over the limits is not delivered: the one delivered last stays in force.
 * - The set is delivered when it changed, and always first after `start` (so an empty set is seen
 *   too), unless no document was ever readable: an unreadable text is never an empty set.
 * - Problems are said as `ChangeReporter` says them, each document's apart: in full when they
 *   change, nothing when they repeat. Warnings once per manifest version (`WarningReporter`).
 *
 * Nothing is said until `commit`, so that a source reads all it has, then speaks once.
 */
export class ManifestIntake {
  private readonly documents = new Map<string, DocumentState>();
  private readonly delivered = new DeliveredSet();
  private readonly conflicts = new ChangeReporter();
  private readonly overLimit = new ChangeReporter();
  private readonly warned = new WarningReporter();
  private readonly describedAs: string;
  private sink: SourceSink | undefined;
  /** The agent's kept set from before its restart (`SourceSink.restored`), while some document has not been readable yet. */
  private carried: readonly ContainerManifest[] | undefined;
  private startedOnce = false;

  constructor(private readonly options: ManifestIntakeOptions) {
    this.describedAs = options.describedAs ?? `the ${options.adapter} source's documents`;
  }

  /** Speaks to `sink` from now on and tells it everything afresh: the set, and what stands. */
  start(sink: SourceSink): void {
    this.sink = sink;
    if (!this.startedOnce && sink.restored !== undefined && sink.restored.length > 0) this.carried = sink.restored;
    this.startedOnce = true;
    this.delivered.reset();
    this.conflicts.reset();
    this.overLimit.reset();
    this.warned.reset();
    for (const document of this.documents.values()) document.reported.reset();
  }

  /** Says nothing more; what it holds stays for the next `start`. */
  close(): void {
    this.sink = undefined;
  }

  /** Parses `bytes` as this intake reads texts, and changes nothing (for a source that takes a text whole or not at all). */
  parse(bytes: string | Uint8Array, origin: string, idFor?: IdFor): ParsedManifests {
    return parseManifests(bytes, origin, {
      maxBytes: this.options.maxBytes,
      maxManifests: this.options.limits?.maxManifests,
      ...hostAccessOf(this.options),
      idFor,
    });
  }

  /** `bytes` is now the text of document `origin`; without `idFor`, every manifest must have an id. */
  read(origin: string, bytes: string | Uint8Array, idFor?: IdFor): void {
    const parsed = this.parse(bytes, origin, idFor);
    const document = this.document(origin);
    if (parsed.unreadable !== undefined) {
      document.problems = [parsed.unreadable];
      return;
    }
    const { manifests, conflicts } = firstOfEachId(retainLastGood(parsed, document.manifests), origin, this.options.adapter);
    document.manifests = manifests;
    document.objects = retainLastGoodObjects(parsed, document.objects);
    document.warnings = parsed.warnings;
    document.problems = [...parsed.rejected.map((r) => rejectionError(r, this.options.adapter)), ...conflicts];
    document.good = true;
  }

  /** The text of `origin` could not be had (a read error, an empty etcd value): what it held stays, and `problem` stands until its next read. */
  fail(origin: string, problem: KubeletError): void {
    this.document(origin).problems = [problem];
  }

  /** The documents in force, in this order; the others are gone, with all they held. Origins never read are left out. */
  keep(origins: readonly string[]): void {
    const kept = origins.flatMap((origin) => {
      const document = this.documents.get(origin);
      return document === undefined ? [] : [[origin, document] as const];
    });
    this.documents.clear();
    for (const [origin, document] of kept) this.documents.set(origin, document);
  }

  /** Document `origin` is gone, with all it held; false when there was none. */
  drop(origin: string): boolean {
    return this.documents.delete(origin);
  }

  has(origin: string): boolean {
    return this.documents.has(origin);
  }

  /** What document `origin` holds now (its last good content), or undefined when there is none. */
  held(origin: string): readonly ContainerManifest[] | undefined {
    return this.documents.get(origin)?.manifests;
  }

  /**
   * Holds `documents` in place of those of the same origins (of all others too, with `replaceAll`),
   * as one change. When the documents would then hold more than the limits, nothing changes and
   * the reason is returned (a sentence naming the limit and its option).
   */
  hold(documents: readonly HeldDocument[], options: { readonly replaceAll?: boolean } = {}): string | undefined {
    const next = new Map(options.replaceAll === true ? [] : [...this.documents].map(([origin, d]) => [origin, d.manifests]));
    for (const d of documents) next.set(d.origin, d.manifests);
    const problem = sourceLimitProblem(this.union(next).manifests, this.options.limits);
    if (problem !== undefined) return problem;
    for (const held of documents) {
      const document = this.document(held.origin);
      document.manifests = held.manifests;
      document.objects = held.objects ?? [];
      document.warnings = held.warnings ?? [];
      document.problems = [];
      document.good = true;
    }
    if (options.replaceAll === true) this.keep(documents.map((d) => d.origin));
    return undefined;
  }

  /** Says what is new since the last commit: problems, warnings, and the set when it changed. */
  commit(): void {
    const sink = this.sink;
    if (sink === undefined) return;
    const { manifests, conflicts } = this.union(new Map([...this.documents].map(([origin, d]) => [origin, d.manifests])));
    const problem = sourceLimitProblem(manifests, this.options.limits);
    const say = (error: KubeletError) => sink.error(error);
    for (const document of this.documents.values()) document.reported.report(document.problems, say);
    const objects = this.objectUnion(conflicts);
    this.conflicts.report(conflicts, say);
    const over =
      problem === undefined
        ? []
        : [
            new KubeletError('InvalidManifest', `${this.describedAs} hold ${problem}; nothing changed until they hold less`, {
              adapter: this.options.adapter,
            }),
          ];
    this.overLimit.report(over, say);
    this.warned.report(
      [...this.documents.values()].flatMap((d) => d.warnings),
      (w) => sink.warning?.(w),
    );
    // Like an unreadable text, too much changes nothing: dropping some documents' pods to fit would
    // stop running pods because an unrelated document was added.
    if (problem !== undefined || !this.known()) return;
    const set = this.withCarried(manifests);
    if (this.delivered.changed(set, objects)) sink.update(set, objects);
  }

  /** The documents' ConfigMaps and Secrets in order, one of a kind, namespace and name given twice taken from the first. */
  private objectUnion(conflicts: KubeletError[]): SourceObject[] {
    const first = new Map<string, string>();
    const out: SourceObject[] = [];
    for (const [origin, document] of this.documents) {
      for (const o of document.objects) {
        const key = objectKey(o.kind, o.namespace, o.name);
        const earlier = first.get(key);
        if (earlier === undefined) {
          first.set(key, origin);
          out.push(o);
        } else {
          conflicts.push(
            new KubeletError('Conflict', `${o.kind} ${o.namespace}/${o.name} in ${origin} is also in ${earlier}; using ${earlier}`, {
              adapter: this.options.adapter,
            }),
          );
        }
      }
    }
    return out;
  }

  /**
   * A document that has not been readable since the agent restarted has given no state, so what
   * the agent kept from before (its checkpoint) runs beside what the readable documents give, for
   * every id they do not give, until each document has been readable once or is gone. The cost: a
   * pod removed from a readable document while the agent was down stays until then too.
   */
  private withCarried(manifests: ContainerManifest[]): readonly ContainerManifest[] {
    const carried = this.carried;
    if (carried === undefined) return manifests;
    if ([...this.documents.values()].every((d) => d.good)) {
      this.carried = undefined;
      return manifests;
    }
    const given = new Set(manifests.map((m) => m.id));
    return [...manifests, ...carried.filter((m) => !given.has(m.id))];
  }

  private document(origin: string): DocumentState {
    let document = this.documents.get(origin);
    if (document === undefined) {
      document = { manifests: [], objects: [], warnings: [], problems: [], reported: new ChangeReporter(), good: false };
      this.documents.set(origin, document);
    }
    return document;
  }

  /**
   * Whether the set means what it says. No document is an empty set (a missing directory, a
   * deleted key); documents none of which was ever readable say nothing yet: delivering their
   * empty set would stop what they may still ask for (a manifest file cut short when the agent
   * starts).
   */
  private known(): boolean {
    if (this.documents.size === 0) return true;
    for (const document of this.documents.values()) if (document.good) return true;
    return false;
  }

  /** The documents' manifests in order, an id given by two documents taken from the first. */
  private union(documents: ReadonlyMap<string, readonly ContainerManifest[]>): {
    manifests: ContainerManifest[];
    conflicts: KubeletError[];
  } {
    const firstOrigin = new Map<string, string>();
    const manifests: ContainerManifest[] = [];
    const conflicts: KubeletError[] = [];
    for (const [origin, held] of documents) {
      for (const manifest of held) {
        const first = firstOrigin.get(manifest.id);
        if (first === undefined) {
          firstOrigin.set(manifest.id, origin);
          manifests.push(manifest);
        } else {
          conflicts.push(
            new KubeletError('Conflict', `manifest id "${manifest.id}" in ${origin} is also in ${first}; using ${first}`, {
              adapter: this.options.adapter,
            }),
          );
        }
      }
    }
    return { manifests, conflicts };
  }
}
