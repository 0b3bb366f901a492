import { describe, expect, it } from '@jest/globals';
import { parseManifests } from '../src/parse.js';

const ADVICE = 'write the values out; anchors and aliases are not needed in a manifest';

/** `head`, then `item` repeated to fill `bytes`, then `tail`. */
function filled(head: string, item: string, tail: string, bytes: number): string {
  return `${head}${item.repeat(Math.floor((bytes - head.length - tail.length) / item.length))}${tail}`;
}

/** Parses and returns how long it took, in ms. */
function timed(text: string, origin = 'hostile.yaml'): { parsed: ReturnType<typeof parseManifests>; ms: number } {
  const started = performance.now();
  const parsed = parseManifests(text, origin);
  return { parsed, ms: performance.now() - started };
}

/**
 * Issue 17 item 1: anchors and aliases. yaml's `maxAliasCount` only counts aliases whose anchor
 * holds aliases itself, and its composer compares each key of a mapping with every earlier one,
 * so aliases as keys cost quadratic time before any alias limit is checked.
 */
describe('parseManifests: aliases', () => {
  it('refuses any alias as unreadable, naming the line and what to do', () => {
    const text = 'id: web\nimage: &img nginx\ncontainers:\n  - {name: a, image: *img}\n';
    const parsed = parseManifests(text, 'web.yaml');
    expect(parsed.unreadable?.code).toBe('InvalidManifest');
    expect(parsed.unreadable?.message).toBe(`web.yaml: line 4 uses an alias (*img): ${ADVICE}`);
    expect(parsed.manifests).toEqual([]);
    expect(parsed.rejected).toEqual([]);
  });

  it('reads an anchor nobody refers to, and `*` inside quoted and block scalars, as text', () => {
    const text =
      'id: &name web\ncontainers:\n  - name: a\n    image: busybox\n    command:\n      - "*a"\n      - \'*b\'\n      - x *c\n      - |\n        *d\n';
    const parsed = parseManifests(text, 'web.yaml');
    expect(parsed.unreadable).toBeUndefined();
    expect(parsed.manifests[0]!.containers[0]!.command).toEqual(['*a', '*b', 'x *c', '*d\n']);
  });

  // The report: 128 KB of `*a` keys froze the agent for 17 s, 256 KB for 66 s.
  it('refuses 128 KB and 1 MiB of alias keys in milliseconds', () => {
    for (const bytes of [128 * 1024, 1024 * 1024]) {
      const { parsed, ms } = timed(filled('id: x\nc: &a x\nb: {', '*a,', '*a}\n', bytes));
      expect(parsed.unreadable?.message).toBe(`hostile.yaml: line 3 uses an alias (*a): ${ADVICE}`);
      expect(ms).toBeLessThan(250);
    }
  });

  // Issue 17 item 2: one manifest whose command list was reused by 99 containers held 400 MB.
  it('refuses a list reused by 99 containers before expanding it', () => {
    const command = `[${Array.from({ length: 20_000 }, () => 'a').join(',')}]`;
    const containers = Array.from(
      { length: 99 },
      (_, i) => `  - name: c${i}\n    image: busybox\n    command: ${i === 0 ? `&cmd ${command}` : '*cmd'}\n`,
    );
    const { parsed, ms } = timed(`id: big\ncontainers:\n${containers.join('')}`);
    expect(parsed.unreadable?.message).toBe(`hostile.yaml: line 8 uses an alias (*cmd): ${ADVICE}`);
    expect(parsed.manifests).toEqual([]);
    // Lexing the 20,000-item anchor is all it costs (about 0.2 s); expanded, it was 2 million strings.
    expect(ms).toBeLessThan(1000);
  });

  it('refuses a YAML 1.1 merge key, which copies a mapping like an alias', () => {
    const parsed = parseManifests('%YAML 1.1\n---\nid: web\n<<: {containers: []}\n', 'merge.yaml');
    expect(parsed.unreadable?.message).toBe(`merge.yaml: line 4 uses a merge key (<<): ${ADVICE}`);
  });
});

describe('parseManifests: keys', () => {
  it('refuses keys that JSON would merge: the same key spelled as a number and a string', () => {
    const parsed = parseManifests('id: web\n1: a\n"1": b\ncontainers: [{name: a, image: nginx}]\n', 'dup.yaml');
    expect(parsed.unreadable?.message).toBe('dup.yaml: not valid YAML or JSON: duplicate key "1" at line 3');
  });

  it('refuses a key that is a list or mapping', () => {
    const parsed = parseManifests('id: web\n? [a, b]\n: 1\n', 'complex.yaml');
    expect(parsed.unreadable?.message).toBe(
      'complex.yaml: line 2 has a key that is not a plain value (a list, mapping or binary): manifest keys are field names',
    );
  });

  it('keeps `__proto__` an ordinary (unknown) field', () => {
    const parsed = parseManifests(
      '{"id": "web", "__proto__": {"containers": []}, "containers": [{"name": "a", "image": "nginx"}]}',
      'proto.json',
    );
    expect(parsed.rejected[0]!.errors).toEqual([{ path: '__proto__', message: 'unknown field' }]);
  });

  // yaml's own duplicate check compared each key with every earlier one: 25,000 keys took about 6 s.
  it('finds duplicates among 25,000 keys in linear time', () => {
    const keys = Array.from({ length: 25_000 }, (_, i) => `k${i}: ${i}\n`).join('');
    const { parsed, ms } = timed(`id: web\nx:\n${keys.replaceAll(/^/gm, '  ')}`);
    expect(parsed.rejected[0]!.errors[0]).toEqual({ path: 'x', message: 'unknown field' });
    const { parsed: twice } = timed(`id: web\n${keys}k0: again\n`);
    expect(twice.unreadable?.message).toBe('hostile.yaml: not valid YAML or JSON: duplicate key "k0" at line 25002');
    expect(ms).toBeLessThan(3000);
  });
});

/**
 * Issue 17 item 1: time. yaml spends a few µs on each lexical token, so a megabyte of `[x,x,…`
 * (1.5 million tokens) took 5 s. A budget of tokens, counted as they come, bounds it: each of
 * these takes 0.3-0.9 s here, and the bounds leave room for a loaded machine.
 */
describe('parseManifests: the token budget', () => {
  it('refuses a text over maxTokens as unreadable, naming the limit and where it was reached', () => {
    const text = 'id: web\ncontainers:\n  - name: a\n    image: nginx\n';
    expect(parseManifests(text, 'web.yaml', { maxTokens: 100 }).manifests).toHaveLength(1);
    expect(parseManifests(text, 'web.yaml', { maxTokens: 10 }).unreadable?.message).toBe(
      'web.yaml: more than 10 YAML tokens (values, indicators, line breaks) by line 2: too long to read without stalling the agent; write fewer or shorter manifests in one document',
    );
  });

  it('stops a megabyte of tiny values, line breaks, comments or documents after the default 250,000 tokens', () => {
    const texts = [
      filled('id: x\nb: [', 'x,', 'x]\n', 1024 * 1024 - 1),
      filled('id: x\nb:\n', '- x\n', '', 1024 * 1024),
      filled('id: x\n', '\n', '', 1024 * 1024),
      filled('id: x\n', '#\n', '', 1024 * 1024),
      filled('', '---\n', '', 1024 * 1024),
    ];
    for (const text of texts) {
      const { parsed, ms } = timed(text);
      expect(parsed.unreadable?.message).toMatch(/^hostile\.yaml: more than 250000 YAML tokens/);
      expect(ms).toBeLessThan(3000);
    }
  });

  it('reads a list of 1,000 ordinary manifests in YAML, well within the budget', () => {
    const one = (i: number) =>
      `- id: web-${i}\n  containers:\n    - name: web\n      image: nginx:1.7\n      ports:\n        - {containerPort: 80, hostPort: ${8000 + i}}\n      env:\n        - {name: MODE, value: prod}\n`;
    const parsed = parseManifests(Array.from({ length: 1000 }, (_, i) => one(i)).join(''), 'list.yaml');
    expect(parsed.unreadable).toBeUndefined();
    expect(parsed.manifests).toHaveLength(1000);
  });
});

/** Issue 17 item 2: what one text may hold. */
describe('parseManifests: manifests per text', () => {
  const list = (n: number) =>
    JSON.stringify(Array.from({ length: n }, (_, i) => ({ id: `m${i}`, containers: [{ name: 'a', image: 'busybox' }] })));

  it('refuses a text of more than maxManifests (default 1,000) as unreadable, before validating any', () => {
    expect(parseManifests(list(1000), 'etcd').manifests).toHaveLength(1000);
    expect(parseManifests(list(1001), 'etcd').unreadable?.message).toBe(
      'etcd: holds 1001 manifests, more than the 1000 one source may hold; run fewer pods from it',
    );
    expect(parseManifests(list(3), 'etcd', { maxManifests: 2 }).unreadable?.message).toBe(
      'etcd: holds 3 manifests, more than the 2 one source may hold; run fewer pods from it',
    );
  });
});
