import { parseAllDocuments } from 'yaml';
import { KubeletError, formatFieldErrors, type FieldError } from './errors.js';
import type { ContainerManifest } from './manifest.js';
import { validateManifest } from './validate.js';

/** One rejected manifest from a document: where it came from and every field that is wrong. */
export interface RejectedManifest {
  /** The file path, URL or key the text came from. */
  readonly origin: string;
  /** Position in the list, when the document held a list. */
  readonly index?: number;
  /** The manifest's id when it could be read, so that its last good version can be kept. */
  readonly id?: string;
  readonly errors: readonly FieldError[];
}

export interface ParsedManifests {
  readonly manifests: readonly ContainerManifest[];
  readonly rejected: readonly RejectedManifest[];
  /** Set when the text could not be decoded at all (YAML syntax, alias bomb, too large, …). */
  readonly unreadable?: KubeletError;
}

export interface ParseOptions {
  /** Texts longer than this are unreadable. Default 1 MiB. */
  readonly maxBytes?: number;
}

const DEFAULT_MAX_BYTES = 1024 * 1024;

/**
 * Decodes YAML or JSON holding one manifest or a list of them (JSON is YAML), then validates each.
 * Empty text is an empty list. A list may also be spread over several `---` documents.
 */
export function parseManifests(text: string, origin: string, options: ParseOptions = {}): ParsedManifests {
  const max = options.maxBytes ?? DEFAULT_MAX_BYTES;
  if (Buffer.byteLength(text, 'utf8') > max) {
    return { manifests: [], rejected: [], unreadable: new KubeletError('InvalidManifest', `${origin}: larger than ${max} bytes`) };
  }
  let items: unknown[];
  try {
    items = decode(text);
  } catch (error) {
    const message = error instanceof Error ? error.message.split('\n')[0] : String(error);
    return {
      manifests: [],
      rejected: [],
      unreadable: new KubeletError('InvalidManifest', `${origin}: not valid YAML or JSON: ${message}`, { cause: error }),
    };
  }
  const listed = items.length !== 1 || Array.isArray(items[0]);
  const flat = items.flatMap((item) => (Array.isArray(item) ? item : [item]));
  const manifests: ContainerManifest[] = [];
  const rejected: RejectedManifest[] = [];
  flat.forEach((item, index) => {
    const result = validateManifest(item);
    if (result.ok) manifests.push(result.manifest);
    else {
      rejected.push({
        origin,
        ...(listed ? { index } : {}),
        ...(result.id === undefined ? {} : { id: result.id }),
        errors: result.errors,
      });
    }
  });
  return { manifests, rejected };
}

function decode(text: string): unknown[] {
  // uniqueKeys and the default alias limit turn duplicate keys and "billion laughs" into errors.
  const docs = parseAllDocuments(text, { uniqueKeys: true, prettyErrors: false });
  if (!Array.isArray(docs)) return [];
  const out: unknown[] = [];
  for (const doc of docs) {
    if (doc.errors.length > 0) throw doc.errors[0];
    const value: unknown = doc.toJS({ maxAliasCount: 100 });
    if (value !== null && value !== undefined) out.push(value);
  }
  return out;
}

/** A one-line description of a rejected manifest, naming every wrong field. */
export function describeRejection(r: RejectedManifest): string {
  const where = r.index === undefined ? r.origin : `${r.origin}[${r.index}]`;
  const id = r.id === undefined ? '' : ` (id "${r.id}")`;
  return `${where}${id}: ${formatFieldErrors(r.errors)}`;
}

/** The rejection as an error, so that sources can report it through the usual channel. */
export function rejectionError(r: RejectedManifest, adapter?: string): KubeletError {
  return new KubeletError('InvalidManifest', describeRejection(r), { adapter, fieldErrors: r.errors });
}

/**
 * Applies "nothing is lost" to a re-read document: a manifest that is now rejected but was valid
 * the last time keeps its last good version, and an unreadable document keeps everything it had.
 */
export function retainLastGood(
  parsed: ParsedManifests,
  previous: readonly ContainerManifest[],
): readonly ContainerManifest[] {
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
