import { Composer, Parser, type CST } from 'yaml';
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
  /** Set when no manifest can be read from the text (not UTF-8, YAML syntax, too deep, alias bomb, too large, a bare scalar). */
  readonly unreadable?: KubeletError;
}

export interface ParseOptions {
  /** Texts longer than this are unreadable. Default 1 MiB. */
  readonly maxBytes?: number;
}

const DEFAULT_MAX_BYTES = 1024 * 1024;
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Decodes YAML or JSON holding one manifest or a list of them (JSON is YAML), then validates each.
 * Empty text is an empty list. A list may also be spread over several `---` documents.
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
  let items: unknown[];
  try {
    items = decode(text);
  } catch (error) {
    const message = error instanceof Error ? error.message.split('\n')[0] : String(error);
    return unreadable(`${origin}: not valid YAML or JSON: ${message}`, error);
  }
  const listed = items.length !== 1 || Array.isArray(items[0]);
  const flat = items.flatMap((item) => (Array.isArray(item) ? item : [item]));
  // A word, a number or a list where a manifest should be is not a manifest with a wrong field:
  // it is text that is not a manifest document (an HTML error page served with 200, a file cut
  // short). Rejected as a manifest without an id, it would drop the last good set; unreadable keeps it.
  const stray = flat.findIndex((item) => typeof item !== 'object' || item === null || Array.isArray(item));
  if (stray >= 0) {
    const what = Array.isArray(flat[stray]) ? 'a list' : flat[stray] === null ? 'null' : `a ${typeof flat[stray]}`;
    return unreadable(`${origin}: ${listed ? `item ${stray} is` : 'the document is'} ${what}, not a manifest`);
  }
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

function unreadable(message: string, cause?: unknown): ParsedManifests {
  return { manifests: [], rejected: [], unreadable: new KubeletError('InvalidManifest', message, cause === undefined ? {} : { cause }) };
}

/**
 * Far deeper than any manifest (a probe's port is six levels down in a list), far shallower than
 * what overflows the stack of yaml's recursive composer (about 1,000 levels). An overflow there is
 * not just an error: in Node 20 the next deep text then kills the process in V8's RegExp compiler.
 */
const MAX_NESTING = 64;

/**
 * The rough depth at which a text is refused before yaml lexes it: lexing a megabyte of `[[[…` or
 * `- - - …` takes yaml over a second, which would stall the agent on every read of such a file or
 * body. The scan also counts brackets inside strings, so its limit is far above MAX_NESTING; the
 * exact check follows.
 */
const MAX_ROUGH_DEPTH = 1000;

/** Brackets open at once, plus the `- ` (or `? `) indicators that head the line they are on. */
function roughDepth(text: string): number {
  let open = 0;
  let indicators = 0;
  let lineHead = true;
  let max = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x0a) {
      lineHead = true;
      indicators = 0;
      continue;
    }
    if (lineHead) {
      const after = text.charCodeAt(i + 1);
      if ((c === 0x2d || c === 0x3f) && (after === 0x20 || after === 0x09 || after === 0x0a || Number.isNaN(after))) {
        indicators += 1;
        max = Math.max(max, open + indicators);
        continue;
      }
      if (c !== 0x20 && c !== 0x09) lineHead = false;
    }
    if (c === 0x5b || c === 0x7b) max = Math.max(max, ++open + indicators);
    else if ((c === 0x5d || c === 0x7d) && open > 0) open -= 1;
  }
  return max;
}

function decode(text: string): unknown[] {
  if (roughDepth(text) > MAX_ROUGH_DEPTH) throw new Error(`more than ${MAX_ROUGH_DEPTH} brackets or list indicators open at once: nested too deep`);
  // yaml's parser keeps its own stack, so the nesting can be measured before the composer recurses.
  const tokens = Array.from(new Parser().parse(text));
  const depth = nestingDepth(tokens);
  if (depth > MAX_NESTING) throw new Error(`nested deeper than ${MAX_NESTING} levels`);
  // uniqueKeys and the default alias limit turn duplicate keys and "billion laughs" into errors;
  // logLevel keeps a hostile document from writing warnings to the agent's stderr.
  const docs = Array.from(new Composer({ uniqueKeys: true, logLevel: 'error' }).compose(tokens));
  const out: unknown[] = [];
  for (const doc of docs) {
    if (doc.errors.length > 0) throw doc.errors[0];
    const value: unknown = doc.toJS({ maxAliasCount: 100 });
    if (value !== null && value !== undefined) out.push(value);
  }
  return out;
}

/** How many collections deep the documents go, counted without recursion. */
function nestingDepth(tokens: readonly CST.Token[]): number {
  let max = 0;
  const pending: Array<[CST.Token, number]> = tokens.map((t) => [t, 0]);
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [token, depth] = next;
    max = Math.max(max, depth);
    if (token.type === 'document') {
      if (token.value !== undefined) pending.push([token.value, depth]);
    } else if ('items' in token) {
      for (const item of token.items) {
        if ('key' in item && item.key != null) pending.push([item.key, depth + 1]);
        if ('value' in item && item.value != null) pending.push([item.value, depth + 1]);
      }
    }
  }
  return max;
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
