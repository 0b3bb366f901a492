import { isUtf8 } from 'node:buffer';
import fc from 'fast-check';
import { renderDocument, documentStyle } from './render.js';
import { validManifest } from './valid-manifests.js';

/** A text no manifest can be read from, as bytes (some are not UTF-8), and what kind it is. */
export interface UnreadableText {
  readonly kind: string;
  readonly bytes: Uint8Array;
}

/** Byte sequences that are not UTF-8: a stray continuation, overlong forms, a surrogate, a bare lead byte. */
const BAD_UTF8 = [[0xff], [0xfe], [0x80], [0xc3, 0x28], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0xe2, 0x82]];

const utf8 = (text: string) => new TextEncoder().encode(text);

/** A megabyte printed as numbers would bury a failure report: fast-check shows this instead. */
function unreadable(kind: string, bytes: Uint8Array): UnreadableText {
  const head = JSON.stringify(Buffer.from(bytes.subarray(0, 120)).toString('latin1'));
  return Object.defineProperty({ kind, bytes }, fc.toStringMethod, {
    value: () => `{ kind: ${JSON.stringify(kind)}, ${bytes.length} bytes, latin1 head: ${head} }`,
  });
}

/** A valid manifest with bad bytes spliced in (sometimes next to a real U+FFFD, which must not excuse them). */
const nonUtf8 = fc
  .tuple(
    validManifest(),
    documentStyle,
    fc.array(fc.tuple(fc.nat(), fc.constantFrom(...BAD_UTF8)), { minLength: 1, maxLength: 3 }),
    fc.boolean(),
  )
  .map(([manifest, style, splices, withReplacement]) => {
    const bytes = [...utf8(renderDocument(manifest, style))];
    if (withReplacement) bytes.splice(0, 0, ...utf8('# \uFFFD\n'));
    for (const [at, bad] of splices) bytes.splice(at % (bytes.length + 1), 0, ...bad);
    return unreadable('non-utf8', Uint8Array.from(bytes));
  })
  // Splices can meet and make valid UTF-8 (`e2 82` next to `80` is U+2080): such a text is not a case of this kind.
  .filter(({ bytes }) => !isUtf8(bytes));

/** Nesting deeper than a recursive parser's stack: `[[[[…`, `{"a":{"a":…`, and compact block lists `- - - …`. */
const deepNesting = fc
  .tuple(fc.integer({ min: 1_000, max: 20_000 }), fc.constantFrom('[', '{"a":', '- '), fc.boolean())
  .map(([depth, open, closed]) =>
    unreadable('deep-nesting', utf8(`${open.repeat(depth)}${closed && open !== '- ' ? (open === '[' ? ']' : '}').repeat(depth) : ''}`)),
  );

/** "Billion laughs": each anchor is a list of aliases to the one before. */
const aliasBomb = fc.tuple(fc.integer({ min: 5, max: 12 }), fc.integer({ min: 5, max: 10 })).map(([levels, width]) => {
  const lines = ['a0: &a0 [lol]'];
  for (let i = 1; i < levels; i += 1) lines.push(`a${i}: &a${i} [${Array.from({ length: width }, () => `*a${i - 1}`).join(', ')}]`);
  return unreadable('alias-bomb', utf8(`${lines.join('\n')}\n`));
});

/**
 * Any alias, where a manifest author might use one: a manifest listed twice, a value, a key, an
 * item of a flow list. Manifests need no aliases, so every one is refused (issue 17).
 */
const aliasUse = fc.tuple(validManifest(), fc.constantFrom('list', 'value', 'key', 'flow')).map(([manifest, where]) => {
  const json = JSON.stringify(manifest);
  const id = `"id":${JSON.stringify(manifest['id'])}`;
  const anchored = json.replace(id, `${id.replace(':', ': &id ')}`);
  const text = {
    list: `- &m ${json}\n- *m\n`,
    value: anchored.replace(/}$/, ', "alias": *id}'),
    key: anchored.replace(/}$/, ', *id : x}'),
    flow: anchored.replace(/}$/, ', "more": [*id, *id]}'),
  }[where];
  return unreadable('alias', utf8(text));
});

/**
 * What froze and killed the agent (issue 17): a command list anchored once and reused by up to 99
 * containers (a 500,000-item one held 400 MB; here at most 5,000, as the anchor is lexed before
 * the first alias is refused), and a mapping of alias keys (`{*a, *a, …}`, whose duplicate check
 * yaml does in quadratic time: 128 KB froze the agent for 17 s).
 */
const aliasExpansion = fc.oneof(
  fc.tuple(fc.integer({ min: 1, max: 5_000 }), fc.integer({ min: 2, max: 99 })).map(([items, copies]) => {
    const command = `[${Array.from({ length: items }, () => 'a').join(',')}]`;
    const containers = Array.from(
      { length: copies },
      (_, i) => `  - name: c${i}\n    image: busybox\n    command: ${i === 0 ? `&cmd ${command}` : '*cmd'}\n`,
    );
    return unreadable('alias-expansion', utf8(`id: big\ncontainers:\n${containers.join('')}`));
  }),
  fc.integer({ min: 1, max: 40_000 }).map((keys) => unreadable('alias-keys', utf8(`id: x\nc: &a x\nb: {${'*a,'.repeat(keys)}*a}\n`))),
);

/**
 * Just over the 250,000 YAML tokens a text may hold, in the shapes yaml is slowest on per byte:
 * tiny flow or block items, distinct keys (quadratic in yaml's own duplicate check), line breaks,
 * comments, empty documents. Each costs the agent up to the budget (about half a second) to refuse.
 */
const tokenFlood = fc.constantFrom('flow', 'block', 'keys', 'lines', 'comments', 'documents').map((shape) => {
  const n = 260_000;
  const text = {
    flow: () => `id: x\nb: [${'x,'.repeat(n / 3)}x]\n`,
    block: () => `id: x\nb:\n${'- x\n'.repeat(n / 4)}`,
    keys: () => `id: x\nb:\n${Array.from({ length: n / 7 }, (_, i) => `k${i}: 1\n`).join('')}`,
    lines: () => `id: x\n${'\n'.repeat(n)}`,
    comments: () => `id: x\n${'#\n'.repeat(n / 2)}`,
    documents: () => '---\n'.repeat(n / 2),
  }[shape]();
  return unreadable('token-flood', utf8(text));
});

/** More manifests in one text than one source may hold (1,000), each of them valid. */
const tooManyManifests = fc.tuple(fc.integer({ min: 1001, max: 1100 }), documentStyle).map(([count, style]) => {
  const manifests = Array.from({ length: count }, (_, i) => ({ id: `many-${i}`, containers: [{ name: 'a', image: 'busybox' }] }));
  return unreadable('too-many-manifests', utf8(renderDocument(manifests, style)));
});

/**
 * Over the 1 MiB every source reads; a valid manifest with a long comment, so only its size is
 * wrong. At most 1.25 MiB: etcd refuses requests over 1.5 MiB, and the sentinel goes with it.
 */
const oversized = fc.tuple(validManifest(), fc.integer({ min: 1024 * 1024 + 1, max: 1.25 * 1024 * 1024 })).map(([manifest, size]) => {
  const head = renderDocument(manifest, 'yaml');
  return unreadable('oversized', utf8(`${head}#${'x'.repeat(Math.max(0, size - head.length - 1))}`));
});

/** The same key twice in one mapping (YAML says it is an error; JSON.parse would keep the last). */
const duplicateKeys = fc.tuple(validManifest(), fc.constantFrom('id', 'containers'), fc.boolean()).map(([manifest, key, asJson]) => {
  const again = JSON.stringify(manifest[key]);
  const text = asJson
    ? JSON.stringify(manifest).replace(/}$/, `,${JSON.stringify(key)}:${again}}`)
    : `${renderDocument(manifest, 'yaml')}${JSON.stringify(key)}: ${again}\n`;
  return unreadable('duplicate-keys', utf8(text));
});

/** YAML syntax errors: an unclosed flow, a bad indent, a tab indent, an unterminated quote. */
const brokenSyntax = fc
  .constantFrom('{id: web', 'id: web\n  containers: [', 'id: "web', 'containers:\n\t- name: a', '[1, 2', 'a: b: c', 'key: [}', '- a\nb: c')
  .map((text) => unreadable('broken-syntax', utf8(text)));

/**
 * Texts that cannot be decoded into manifests at all: not UTF-8, nested deeper than a stack,
 * aliases (bombs, reuse, expansion), over the size limit, over the token budget, more manifests
 * than a source may hold, duplicate keys, broken syntax. Each must be reported and must change
 * nothing.
 */
export function unreadableText(): fc.Arbitrary<UnreadableText> {
  // Oversized texts are rare: each is a megabyte to write, send and hold. Token floods are rarer
  // still: each costs half a second to refuse, and one in 37 unreadable texts is enough to keep
  // every shape of them in a short run.
  return fc.oneof(
    { arbitrary: nonUtf8, weight: 8 },
    { arbitrary: deepNesting, weight: 4 },
    { arbitrary: aliasBomb, weight: 4 },
    { arbitrary: aliasUse, weight: 4 },
    { arbitrary: aliasExpansion, weight: 4 },
    { arbitrary: tokenFlood, weight: 1 },
    { arbitrary: tooManyManifests, weight: 2 },
    { arbitrary: oversized, weight: 2 },
    { arbitrary: duplicateKeys, weight: 4 },
    { arbitrary: brokenSyntax, weight: 4 },
  );
}

/**
 * Random JSON and YAML-looking text: mostly not manifests, sometimes by chance an empty list.
 * What a source must do with them is whatever parsing says; nothing may throw.
 */
export function randomText(): fc.Arbitrary<UnreadableText> {
  return fc.oneof(
    fc
      .jsonValue({ maxDepth: 4 })
      .chain((value) => documentStyle.map((style) => unreadable('random-json', utf8(renderDocument(value, style))))),
    fc.string({ unit: 'binary', maxLength: 200 }).map((text) => unreadable('random-text', utf8(text))),
    fc
      .array(
        fc.constantFrom(
          'id',
          ':',
          ' ',
          '\n',
          '- ',
          '[',
          ']',
          '{',
          '}',
          ',',
          '"',
          "'",
          '&a',
          '*a',
          '!!str',
          '---',
          '...',
          '#',
          'web',
          '80',
          '? ',
          '|',
          '>',
        ),
        { maxLength: 40 },
      )
      .map((parts) => unreadable('random-yaml', utf8(parts.join('')))),
  );
}
