import {
  KubeletError,
  formatFieldErrors,
  validateManifest,
  type ContainerManifest,
  type FieldError,
  type ValidationWarning,
  hostAccessOf,
  objectKey,
  type HostAccess,
  type SourceObject,
} from '@kubelet-ts/core';
import { decodeV1Object, isV1Object } from './v1/objects.js';
import { DEFAULT_MAX_MANIFESTS } from './source-limits.js';
import { isKubernetesObject, v1ListItems, validateV1Pod } from './v1/validate-v1.js';
import { RefusedText, decodeYaml, type DecodedText } from './yaml-decode.js';

/** One rejected manifest from a document: where it came from and every field that is wrong. */
export interface RejectedManifest {
  /** The file path, URL or key the text came from. */
  readonly origin: string;
  /** Position in the list, when the document held a list. */
  readonly index?: number;
  /** The manifest's id when it could be read, so that its last good version can be kept. */
  readonly id?: string;
  /** For a ConfigMap or Secret, its key (`kind/namespace/name`, see `objectKey`) when it could be read, for the same reason. */
  readonly objectKey?: string;
  readonly errors: readonly FieldError[];
}

/** An accepted manifest that uses deprecated spellings; `WarningReporter` says each once per manifest version. */
export interface ManifestWarnings {
  readonly origin: string;
  /** Position in the list, when the document held a list. */
  readonly index?: number;
  readonly manifest: ContainerManifest;
  readonly warnings: readonly ValidationWarning[];
}

/** What `parseManifests` read from one text: the manifests, the objects beside them, what it refused, and deprecated spellings. */
export interface ParsedManifests {
  readonly manifests: readonly ContainerManifest[];
  /** The ConfigMaps and Secrets given beside the pods (`kind: ConfigMap`, `kind: Secret`), which the pods read by name. */
  readonly objects: readonly SourceObject[];
  readonly rejected: readonly RejectedManifest[];
  /** The accepted manifests that use deprecated spellings, with what they use. */
  readonly warnings: readonly ManifestWarnings[];
  /**
   * Set when no manifest can be read from the text: not UTF-8, a YAML syntax error, too deep, an
   * alias, too large, too many tokens or manifests, a bare scalar. A source keeps its last good set.
   */
  readonly unreadable?: KubeletError;
}

/** Limits on one text; over any of them, the text is unreadable and the message names the limit. */
/** With the host access the manifests may take (see `HostAccess`). */
export interface ParseOptions extends HostAccess {
  /**
   * A pod's `nodeSelector` and node affinity are read, not matched: the agent's admission matches
   * them and shows a pod for another node `Failed` (`NodeAffinity`), as for pods of a cluster.
   * Default false: a pod for another node is refused by field.
   */
  readonly placementAtAdmission?: boolean;
  /** Texts longer than this, in UTF-8 bytes, are unreadable. Default 1 MiB. */
  readonly maxBytes?: number | undefined;
  /**
   * YAML lexical tokens (a value, an indicator such as `:` or `[`, a line break, a comment) one text
   * may hold. Default 250,000: yaml spends 2-9 µs on each, so this bounds the time one text can hold
   * the agent's only thread to about a second on a slow machine, while a list of 1,000 ordinary
   * manifests (about 100 tokens each in YAML, 130 in compact JSON) fits.
   */
  readonly maxTokens?: number | undefined;
  /**
   * Manifests one text may hold, counted before any is validated. Default 1,000, the most one
   * source may hold (see `SourceLimits`).
   */
  readonly maxManifests?: number | undefined;
  /**
   * The id of a manifest written without one, by its position in the text (`undefined` when the
   * text holds one manifest rather than a list). A source passes `derivedManifestId` of where the
   * text came from; without it, every manifest must have an id.
   */
  readonly idFor?: ((position: number | undefined) => string | undefined) | undefined;
}

const DEFAULT_MAX_BYTES = 1024 * 1024;
const DEFAULT_MAX_TOKENS = 250_000;
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Decodes YAML or JSON holding one manifest or a list of them (JSON is YAML), then validates each.
 * Text with no document (empty, blank, comments only) is unreadable; `[]` is the empty list. A
 * list may also be spread over several `---` documents. Each
 * manifest is a 2014 manifest or a Kubernetes v1 Pod (it has `apiVersion` and `kind`; a v1 `List`
 * or `PodList` holds Pods), in any mix; both become the same domain manifest.
 *
 * Sources pass what they read as bytes: text that is not UTF-8 is unreadable. Decoding it with
 * replacement characters would run a manifest whose values (an env value, a command) silently
 * differ from what its author wrote.
 */
export function parseManifests(input: string | Uint8Array, origin: string, options: ParseOptions = {}): ParsedManifests {
  const max = options.maxBytes ?? DEFAULT_MAX_BYTES;
  if ((typeof input === 'string' ? Buffer.byteLength(input, 'utf8') : input.byteLength) > max) {
    return unreadable(`${origin}: larger than ${max} bytes`);
  }
  let text: string;
  try {
    text = typeof input === 'string' ? input : UTF8.decode(input);
  } catch (error) {
    return unreadable(`${origin}: not valid UTF-8`, error);
  }
  let decoded: DecodedText;
  try {
    decoded = decodeYaml(text, options.maxTokens ?? DEFAULT_MAX_TOKENS);
  } catch (error) {
    if (error instanceof RefusedText) return unreadable(`${origin}: ${error.message}`, error);
    const message = error instanceof Error ? error.message.split('\n')[0] : String(error);
    return unreadable(`${origin}: not valid YAML or JSON: ${message}`, error);
  }
  // One rule for every source (issue 27): text with no document at all (empty, blank, comments
  // only) is unreadable, as a cut-short write or a wrong body is, and keeps the last good set; an
  // explicit empty list (`[]`, `items: []`) is what runs nothing.
  if (decoded.values.length === 0)
    return unreadable(
      `${origin}: empty (no manifest, not even an empty list), which is unreadable; to run nothing, write [] (or items: [])`,
    );
  // The 2014 API's list kind, as etcd kept it: `{"kind": "ContainerManifestList", "items": [...]}`,
  // and a Kubernetes v1 `List` or `PodList`, whose items must each be a Pod.
  const inV1List = new WeakSet<object>();
  const items = decoded.values.map((item) => {
    if (isManifestList(item)) return item['items'];
    const v1Items = v1ListItems(item);
    v1Items?.forEach((i) => typeof i === 'object' && i !== null && inV1List.add(i));
    return v1Items ?? item;
  });
  const listed = items.length !== 1 || Array.isArray(items[0]);
  const flat = items.flatMap((item) => (Array.isArray(item) ? item : [item]));
  const maxManifests = options.maxManifests ?? DEFAULT_MAX_MANIFESTS;
  // Counted before validating: the work of a text stays bounded by what one source may hold.
  if (flat.length > maxManifests) {
    return unreadable(
      `${origin}: holds ${flat.length} manifests, more than the ${maxManifests} one source may hold; run fewer pods from it`,
    );
  }
  // A word, a number or a list where a manifest should be is not a manifest with a wrong field:
  // it is text that is not a manifest document (an HTML error page served with 200, a file cut
  // short). Rejected as a manifest without an id, it would drop the last good set; unreadable keeps it.
  const stray = flat.findIndex((item) => typeof item !== 'object' || item === null || Array.isArray(item));
  if (stray >= 0) {
    const what = Array.isArray(flat[stray]) ? 'a list' : flat[stray] === null ? 'null' : `a ${typeof flat[stray]}`;
    return unreadable(`${origin}: ${listed ? `item ${stray} is` : 'the document is'} ${what}, not a manifest`);
  }
  const manifests: ContainerManifest[] = [];
  const objects: SourceObject[] = [];
  const rejected: RejectedManifest[] = [];
  const warnings: ManifestWarnings[] = [];
  flat.forEach((item, index) => {
    const position = listed ? index : undefined;
    if (isV1Object(item)) {
      const read = decodeV1Object(item);
      if (read.ok) objects.push(read.object);
      else
        rejected.push({
          origin,
          ...(listed ? { index } : {}),
          ...(read.key === undefined ? {} : { objectKey: read.key }),
          errors: read.errors,
        });
      return;
    }
    const checks = {
      writtenAs: decoded.writtenAs,
      ...hostAccessOf(options),
      ...(options.placementAtAdmission === true ? { placementAtAdmission: true } : {}),
    };
    // A Kubernetes object, or any item of a v1 List, is read as a v1 Pod; the rest as 2014 manifests.
    const result =
      isKubernetesObject(item) || inV1List.has(item as object)
        ? validateV1Pod(item, checks)
        : validateManifest(item, { ...checks, ...(options.idFor === undefined ? {} : { defaultId: options.idFor(position) }) });
    if (result.ok) {
      manifests.push(result.manifest);
      if (result.warnings.length > 0)
        warnings.push({ origin, ...(listed ? { index } : {}), manifest: result.manifest, warnings: result.warnings });
    } else {
      rejected.push({
        origin,
        ...(listed ? { index } : {}),
        ...(result.id === undefined ? {} : { id: result.id }),
        errors: result.errors,
      });
    }
  });
  return { manifests, objects, rejected, warnings };
}

/** A 2014 `ContainerManifestList` wrapper (any `apiVersion`), whose `items` are the manifests. */
function isManifestList(item: unknown): item is { readonly items: unknown[] } & Record<string, unknown> {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) return false;
  const record = item as Record<string, unknown>;
  return typeof record['kind'] === 'string' && record['kind'].toLowerCase() === 'containermanifestlist' && Array.isArray(record['items']);
}

function unreadable(message: string, cause?: unknown): ParsedManifests {
  return {
    manifests: [],
    objects: [],
    rejected: [],
    warnings: [],
    unreadable: new KubeletError('InvalidManifest', message, cause === undefined ? {} : { cause }),
  };
}

/** A one-line description of a rejected manifest, naming every wrong field. */
export function describeRejection(r: RejectedManifest): string {
  const where = r.index === undefined ? r.origin : `${r.origin}[${r.index}]`;
  const id = r.id !== undefined ? ` (id "${r.id}")` : r.objectKey !== undefined ? ` (${r.objectKey})` : '';
  return `${where}${id}: ${formatFieldErrors(r.errors)}`;
}

/** The rejection as an error, so that sources can report it through the usual channel. */
export function rejectionError(r: RejectedManifest, adapter?: string): KubeletError {
  return new KubeletError('InvalidManifest', describeRejection(r), { adapter, fieldErrors: r.errors });
}

/** "Nothing is lost" for ConfigMaps and Secrets: one now rejected keeps its last good version; an unreadable document keeps all. */
export function retainLastGoodObjects(parsed: ParsedManifests, previous: readonly SourceObject[]): readonly SourceObject[] {
  if (parsed.unreadable !== undefined) return previous;
  const keyOf = (o: SourceObject) => objectKey(o.kind, o.namespace, o.name);
  const kept = new Set(parsed.objects.map(keyOf));
  const out = [...parsed.objects];
  for (const r of parsed.rejected) {
    if (r.objectKey === undefined || kept.has(r.objectKey)) continue;
    const last = previous.find((o) => keyOf(o) === r.objectKey);
    if (last !== undefined) {
      kept.add(r.objectKey);
      out.push(last);
    }
  }
  return out;
}

/**
 * Applies "nothing is lost" to a re-read document: a manifest that is now rejected but was valid
 * the last time keeps its last good version, and an unreadable document keeps everything it had.
 */
export function retainLastGood(parsed: ParsedManifests, previous: readonly ContainerManifest[]): readonly ContainerManifest[] {
  if (parsed.unreadable !== undefined) return previous;
  const kept = new Map(parsed.manifests.map((m) => [m.id, m]));
  const order = [...parsed.manifests];
  for (const r of parsed.rejected) {
    if (r.id === undefined || kept.has(r.id)) continue;
    const last = previous.find((m) => m.id === r.id);
    if (last !== undefined) {
      kept.set(last.id, last);
      order.push(last);
    }
  }
  return order;
}
