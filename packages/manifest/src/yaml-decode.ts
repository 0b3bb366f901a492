import { Composer, CST, Lexer, Parser, isMap, isPair, isScalar, isSeq, type Pair } from 'yaml';
import type { WrittenAs } from '@kubelet-ts/core';

export interface DecodedText {
  /** One value per non-empty document. */
  readonly values: readonly unknown[];
  readonly writtenAs: WrittenAs;
}

/**
 * Text refused before or while decoding, for a reason that is not a YAML syntax error: the message
 * is whole and says what to do.
 */
export class RefusedText extends Error {}

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

// What to do instead, in every refusal of an alias or a merge key: the reason alone leaves the author stuck.
const ALIAS_ADVICE = 'write the values out; anchors and aliases are not needed in a manifest';

/**
 * Decodes YAML (JSON is YAML) into plain values, refusing on the way what would make decoding
 * expensive or ambiguous:
 * - more than `maxTokens` lexical tokens: yaml spends 2-9 µs on each (a megabyte of `[x,x,…` is
 *   1.5 million of them, 5 s), so the count is checked as they come and bounds the time;
 * - any alias (`*a`), at the first one, before anything is composed. An alias copies its anchor
 *   wherever it appears, so a small text could stand for an unbounded manifest (99 containers
 *   reusing a 500,000-item command held 400 MB), and yaml's composer spends time quadratic in the
 *   aliases of one mapping (`{*a, *a, …}`: 128 KB froze the agent for 17 s). A bounded count would
 *   still let each alias copy a large anchor, so the expansion would need an accounting of its own;
 *   without aliases a manifest is exactly as large as its text. JSON has none, and no manifest
 *   needs them (a program writing manifests with a YAML library that aliases repeated objects by
 *   default, yaml's `aliasDuplicateObjects` or js-yaml's `noRefs`, must turn that off);
 * - a duplicate key, found with one set per mapping (yaml's own `uniqueKeys` check compares each key
 *   with every earlier one: a mapping of 100,000 keys took minutes), and keys that are not plain
 *   values (`? [a]`, a YAML 1.1 merge key `<<`), which JSON cannot express;
 * - nesting deeper than MAX_NESTING.
 */
export function decodeYaml(text: string, maxTokens: number): DecodedText {
  if (roughDepth(text) > MAX_ROUGH_DEPTH)
    throw new Error(`more than ${MAX_ROUGH_DEPTH} brackets or list indicators open at once: nested too deep`);
  const tokens = boundedParse(text, maxTokens);
  // yaml's parser keeps its own stack, so the nesting can be measured before the composer recurses.
  const depth = nestingDepth(tokens);
  if (depth > MAX_NESTING) throw new Error(`nested deeper than ${MAX_NESTING} levels`);
  // logLevel keeps a hostile document from writing warnings to the agent's stderr.
  const docs = Array.from(new Composer({ uniqueKeys: false, logLevel: 'error' }).compose(tokens));
  const converter = new PlainValues(text);
  const values: unknown[] = [];
  for (const doc of docs) {
    if (doc.errors.length > 0) throw doc.errors[0];
    const value = converter.value(doc.contents);
    if (value !== null && value !== undefined) values.push(value);
  }
  return { values, writtenAs: (holder, key) => converter.written.get(holder)?.get(key) };
}

/** yaml's lexer and parser driven one token at a time, stopping at the token budget or the first alias. */
function boundedParse(text: string, maxTokens: number): CST.Token[] {
  const parser = new Parser();
  const tokens: CST.Token[] = [];
  let count = 0;
  let offset = 0;
  let scalarFollows = false;
  for (const lexeme of new Lexer().lex(text)) {
    if (++count > maxTokens) {
      throw new RefusedText(
        `more than ${maxTokens} YAML tokens (values, indicators, line breaks) by line ${lineOf(text, offset)}: too long to read without stalling the agent; write fewer or shorter manifests in one document`,
      );
    }
    // The lexer announces a plain or block scalar with SCALAR; its text may begin with `*` (`|\n  *x`) and is no alias.
    // SCALAR, DOCUMENT and FLOW_END are the lexer's own marks, not text.
    let inText = true;
    if (scalarFollows) scalarFollows = false;
    else if (lexeme === CST.SCALAR) [scalarFollows, inText] = [true, false];
    else if (lexeme === CST.DOCUMENT || lexeme === CST.FLOW_END) inText = false;
    else if (lexeme.startsWith('*')) {
      throw new RefusedText(`line ${lineOf(text, offset)} uses an alias (${lexeme.slice(0, 40)}): ${ALIAS_ADVICE}`);
    }
    for (const token of parser.next(lexeme)) tokens.push(token);
    if (inText) offset += lexeme.length;
  }
  for (const token of parser.end()) tokens.push(token);
  return tokens;
}

/** Composed YAML nodes as plain JSON-like values; remembers how non-string scalars were written. */
class PlainValues {
  readonly written = new WeakMap<object, Map<string | number, string>>();

  constructor(private readonly text: string) {}

  value(node: unknown): unknown {
    if (node === null || node === undefined) return null;
    if (isScalar(node)) return node.value;
    if (isMap(node)) return this.map(node.items);
    if (isSeq(node)) {
      const out: unknown[] = [];
      node.items.forEach((item, i) => this.put(out, i, item));
      return out;
    }
    if (isPair(node)) return this.map([node]);
    // Aliases are refused while lexing; nothing else composes.
    throw new Error(`unexpected YAML node ${String(node)}`);
  }

  private map(items: readonly Pair[]): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    const seen = new Set<string>();
    for (const pair of items) {
      const key = this.key(pair.key);
      if (seen.has(key)) throw new Error(`duplicate key ${JSON.stringify(key.slice(0, 70))} at line ${this.lineOfNode(pair.key)}`);
      seen.add(key);
      this.put(out, key, pair.value);
    }
    return out;
  }

  /** A key as JSON (and yaml's toJS) would name it; null is the empty key. */
  private key(node: unknown): string {
    if (node === null || node === undefined) return '';
    if (isScalar(node)) {
      const value = node.value;
      if (value === null) return '';
      if (typeof value === 'symbol') throw new RefusedText(`line ${this.lineOfNode(node)} uses a merge key (<<): ${ALIAS_ADVICE}`);
      if (typeof value !== 'object') return String(value);
    }
    throw new RefusedText(
      `line ${this.lineOfNode(node)} has a key that is not a plain value (a list, mapping or binary): manifest keys are field names`,
    );
  }

  private put(holder: Record<string, unknown> | unknown[], key: string | number, node: unknown): void {
    const value = this.value(node);
    if (isScalar(node) && value !== null && typeof value !== 'string' && typeof node.source === 'string') {
      const known = this.written.get(holder) ?? new Map<string | number, string>();
      this.written.set(holder, known.set(key, node.source));
    }
    // `__proto__` is an ordinary key in JSON and YAML; assigning it would set the prototype instead.
    if (key === '__proto__') Object.defineProperty(holder, key, { value, enumerable: true, writable: true, configurable: true });
    else (holder as Record<string | number, unknown>)[key] = value;
  }

  private lineOfNode(node: unknown): number {
    const range = (node as { range?: [number, number, number] } | null)?.range;
    return lineOf(this.text, range?.[0] ?? 0);
  }
}

function lineOf(text: string, offset: number): number {
  let line = 1;
  for (let i = text.indexOf('\n'); i >= 0 && i < offset; i = text.indexOf('\n', i + 1)) line += 1;
  return line;
}

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
