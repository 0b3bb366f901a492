import { describe, expect, it } from '@jest/globals';
import { isKubeletError } from '@kubelet-ts/core';
import { describeRejection, parseManifests, rejectionError, retainLastGood } from '../src/parse.js';

const WEB_YAML = `version: v1beta1
id: web
containers:
  - name: nginx
    image: nginx:1.7
    ports:
      - containerPort: 80
        hostPort: 8080
        protocol: tcp
`;

const DB_YAML = `version: v1beta1
id: db
containers:
  - name: redis
    image: redis
`;

function manifestJson(id: string, image = 'nginx'): object {
  return { version: 'v1beta1', id, containers: [{ name: 'app', image }] };
}

describe('parseManifests: decoding', () => {
  it('reads one YAML manifest and normalises it', () => {
    const parsed = parseManifests(WEB_YAML, '/etc/kubelet/web.yaml');
    expect(parsed.unreadable).toBeUndefined();
    expect(parsed.rejected).toEqual([]);
    expect(parsed.manifests).toHaveLength(1);
    expect(parsed.manifests[0]!.id).toBe('web');
    expect(parsed.manifests[0]!.containers[0]!.ports).toEqual([{ containerPort: 80, hostPort: 8080, protocol: 'TCP' }]);
  });

  it('reads a YAML list', () => {
    const text = `- id: web
  containers:
    - name: nginx
      image: nginx
- id: db
  containers:
    - name: redis
      image: redis
`;
    const parsed = parseManifests(text, 'list.yaml');
    expect(parsed.unreadable).toBeUndefined();
    expect(parsed.rejected).toEqual([]);
    expect(parsed.manifests.map((m) => m.id)).toEqual(['web', 'db']);
  });

  it('reads a JSON list', () => {
    const text = JSON.stringify([manifestJson('a'), manifestJson('b', 'busybox')], null, 2);
    const parsed = parseManifests(text, 'http://config/manifests');
    expect(parsed.unreadable).toBeUndefined();
    expect(parsed.rejected).toEqual([]);
    expect(parsed.manifests.map((m) => [m.id, m.containers[0]!.image])).toEqual([
      ['a', 'nginx'],
      ['b', 'busybox'],
    ]);
  });

  it('reads JSON indented with tabs', () => {
    const parsed = parseManifests(JSON.stringify(manifestJson('tabs'), null, '\t'), 'tabs.json');
    expect(parsed.unreadable).toBeUndefined();
    expect(parsed.manifests.map((m) => m.id)).toEqual(['tabs']);
  });

  it('reads several --- documents as one list', () => {
    const parsed = parseManifests(`${WEB_YAML}---\n${DB_YAML}`, 'multi.yaml');
    expect(parsed.unreadable).toBeUndefined();
    expect(parsed.rejected).toEqual([]);
    expect(parsed.manifests.map((m) => m.id)).toEqual(['web', 'db']);
  });

  it('skips empty documents between separators', () => {
    const parsed = parseManifests(`---\n${WEB_YAML}---\n# nothing here\n---\n${DB_YAML}---\n`, 'multi.yaml');
    expect(parsed.manifests.map((m) => m.id)).toEqual(['web', 'db']);
  });

  // One rule for every source (issue 27): no document at all is unreadable input, not "run nothing".
  it.each(['', '\n\n', '# only a comment\n', '---\n'])('reads %j as unreadable, saying how to write an empty list', (text) => {
    const parsed = parseManifests(text, 'empty.yaml');
    expect(parsed.unreadable?.message).toBe(
      'empty.yaml: empty (no manifest, not even an empty list), which is unreadable; to run nothing, write [] (or items: [])',
    );
    expect(parsed.manifests).toEqual([]);
  });

  it.each(['[]', '[]\n', 'kind: List\napiVersion: v1\nitems: []\n', '{"kind":"ContainerManifestList","items":[]}'])(
    'reads %j as an empty list',
    (text) => {
      const parsed = parseManifests(text, 'empty.yaml');
      expect(parsed.unreadable).toBeUndefined();
      expect(parsed.manifests).toEqual([]);
      expect(parsed.rejected).toEqual([]);
    },
  );

  it('accepts CRLF line endings and a byte order mark', () => {
    const parsed = parseManifests(`\uFEFF${WEB_YAML.replaceAll('\n', '\r\n')}`, 'windows.yaml');
    expect(parsed.unreadable).toBeUndefined();
    expect(parsed.manifests.map((m) => m.id)).toEqual(['web']);
  });
});

describe('parseManifests: rejected manifests', () => {
  it('returns the valid items of a list and rejects the invalid one with origin, index, id and errors', () => {
    const text = JSON.stringify([
      manifestJson('a'),
      { id: 'b', containers: [{ name: 'app', image: 'nginx', ports: [{ containerPort: 80, protocol: 'SCTP' }] }] },
      manifestJson('c'),
    ]);
    const parsed = parseManifests(text, 'list.json');
    expect(parsed.unreadable).toBeUndefined();
    expect(parsed.manifests.map((m) => m.id)).toEqual(['a', 'c']);
    expect(parsed.rejected).toHaveLength(1);
    const [r] = parsed.rejected;
    expect(r!.origin).toBe('list.json');
    expect(r!.index).toBe(1);
    expect(r!.id).toBe('b');
    expect(r!.errors.map((e) => e.path)).toEqual(['containers[0].ports[0].protocol']);
  });

  it('numbers the items of several documents as one list', () => {
    const parsed = parseManifests(`${WEB_YAML}---\nid: broken\n`, 'multi.yaml');
    expect(parsed.manifests.map((m) => m.id)).toEqual(['web']);
    expect(parsed.rejected).toHaveLength(1);
    expect(parsed.rejected[0]!.index).toBe(1);
    expect(parsed.rejected[0]!.id).toBe('broken');
  });

  it('gives no index to the rejection of a single manifest, and no id when none could be read', () => {
    const parsed = parseManifests('containers:\n  - name: app\n    image: nginx\n', 'one.yaml');
    expect(parsed.manifests).toEqual([]);
    expect(parsed.rejected).toHaveLength(1);
    expect(parsed.rejected[0]).not.toHaveProperty('index');
    expect(parsed.rejected[0]).not.toHaveProperty('id');
    expect(parsed.rejected[0]!.errors).toEqual([{ path: 'id', message: 'is required' }]);
  });
});

describe('parseManifests: unreadable text', () => {
  // Found by the fuzz suite: rejected as a manifest without an id, such text dropped the source's
  // whole last good set, so an HTML error page served with 200 stopped every pod of the URL.
  it('marks a document that is a scalar, or a list item that is not a mapping, unreadable', () => {
    expect(parseManifests('<html>\n<body>Service Unavailable</body>\n</html>\n', 'page.yaml').unreadable?.message).toBe(
      'page.yaml: the document is a string, not a manifest',
    );
    expect(parseManifests('42', 'n.yaml').unreadable?.message).toBe('n.yaml: the document is a number, not a manifest');
    const list = parseManifests(JSON.stringify([manifestJson('a'), 'b', null]), 'list.json');
    expect(list.unreadable?.message).toBe('list.json: item 1 is a string, not a manifest');
    expect(list.manifests).toEqual([]);
    expect(parseManifests('- - id: a\n', 'nested.yaml').unreadable?.message).toBe('nested.yaml: item 0 is a list, not a manifest');
  });

  // Found by the fuzz suite: the yaml composer recurses once per level, and after one stack
  // overflow the next deep text killed Node 20 outright (a fatal OOM in V8's RegExp compiler).
  it('marks text nested deeper than 64 levels unreadable before composing it, however often it comes', () => {
    for (const text of ['['.repeat(2000), '['.repeat(2000), '{"a":'.repeat(20_000), '- '.repeat(20_000)]) {
      expect(parseManifests(text, 'deep.yaml').unreadable?.message).toMatch(
        /^deep\.yaml: not valid YAML or JSON: .*nested (deeper than 64 levels|too deep)$/,
      );
    }
    const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
    expect(parseManifests(`{"id": "a", "x": ${nested(64)}}`, 'ok.json').rejected[0]!.errors).toEqual([
      { path: 'x', message: 'unknown field' },
      expect.objectContaining({ path: 'containers' }),
    ]);
    expect(parseManifests(`{"id": "a", "x": ${nested(65)}}`, 'deep.json').unreadable).toBeDefined();
  });

  // Found by the fuzz suite: yaml took over a second to lex a megabyte of `[[[…` or `- - - …`
  // before any depth check could run, stalling the agent on every read of such a text.
  it('refuses a text with a thousand brackets or list indicators open before yaml lexes it', () => {
    for (const text of ['['.repeat(1_000_000), '{"a": '.repeat(150_000), '- '.repeat(500_000), '- [\n'.repeat(1000)]) {
      expect(parseManifests(text, 'deep.yaml').unreadable?.message).toBe(
        'deep.yaml: not valid YAML or JSON: more than 1000 brackets or list indicators open at once: nested too deep',
      );
    }
    // Brackets that close are no depth at all: two thousand of them in a command are fine.
    const wide = `id: a\ncontainers:\n  - name: c\n    image: busybox\n    command: ["sh", "-c", "echo ${'[]'.repeat(2000)}"]\n`;
    expect(parseManifests(wide, 'wide.yaml').manifests).toHaveLength(1);
  });

  // Found by the fuzz suite: decoded with replacement characters, a Latin-1 file ran with an env
  // value its author never wrote.
  it('marks bytes that are not UTF-8 unreadable, and reads UTF-8 bytes like text', () => {
    const text = `${WEB_YAML}    env:\n      - name: CITY\n        value: "Zürich"\n`;
    const latin1 = Buffer.from(text, 'latin1');
    expect(parseManifests(latin1, 'web.yaml').unreadable?.message).toBe('web.yaml: not valid UTF-8');
    // A real U+FFFD next to a bad byte must not pass for a decoded one.
    expect(parseManifests(Buffer.concat([Buffer.from('# \uFFFD\n'), latin1]), 'web.yaml').unreadable).toBeDefined();
    const utf8 = parseManifests(Buffer.from(`\uFEFF${text}`), 'web.yaml');
    expect(utf8.manifests[0]!.containers[0]!.env).toEqual([{ name: 'CITY', value: 'Zürich' }]);
    expect(parseManifests(Buffer.alloc(11, 'a'), 'big.yaml', { maxBytes: 10 }).unreadable?.message).toBe('big.yaml: larger than 10 bytes');
  });

  it('marks a YAML syntax error unreadable with InvalidManifest and the origin in the message', () => {
    const parsed = parseManifests('id: web\ncontainers: [\n  - name: a\n', '/etc/kubelet/broken.yaml');
    expect(parsed.manifests).toEqual([]);
    expect(parsed.rejected).toEqual([]);
    expect(parsed.unreadable).toBeDefined();
    expect(isKubeletError(parsed.unreadable, 'InvalidManifest')).toBe(true);
    expect(parsed.unreadable!.message).toContain('/etc/kubelet/broken.yaml');
  });

  it('marks a syntax error in a later document unreadable, discarding the good first document', () => {
    const parsed = parseManifests(`${WEB_YAML}---\nid: [unclosed\n`, 'multi.yaml');
    expect(parsed.unreadable?.code).toBe('InvalidManifest');
    expect(parsed.manifests).toEqual([]);
  });

  it('marks duplicate keys unreadable', () => {
    const parsed = parseManifests('id: web\nid: db\ncontainers:\n  - name: a\n    image: nginx\n', 'dup.yaml');
    expect(parsed.unreadable?.code).toBe('InvalidManifest');
    expect(parsed.unreadable!.message).toContain('dup.yaml');
    expect(parsed.manifests).toEqual([]);
  });

  it('marks duplicate keys in JSON unreadable', () => {
    const parsed = parseManifests('{"id": "web", "id": "db", "containers": []}', 'dup.json');
    expect(parsed.unreadable?.code).toBe('InvalidManifest');
  });

  it('marks an alias bomb ("billion laughs") unreadable, and quickly', () => {
    const lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
    const names = 'abcdefghi';
    for (let i = 1; i < names.length; i++) {
      const prev = names[i - 1]!;
      lines.push(`${names[i]}: &${names[i]} [${Array.from({ length: 9 }, () => `*${prev}`).join(',')}]`);
    }
    const started = Date.now();
    const parsed = parseManifests(`${lines.join('\n')}\n`, 'bomb.yaml');
    const elapsed = Date.now() - started;
    expect(parsed.unreadable?.code).toBe('InvalidManifest');
    expect(parsed.unreadable!.message).toContain('bomb.yaml');
    expect(parsed.manifests).toEqual([]);
    // 9^9 strings if expanded; the alias limit must stop it long before that.
    expect(elapsed).toBeLessThan(5000);
  });

  it('marks text over maxBytes unreadable, counting UTF-8 bytes rather than characters', () => {
    const text = `id: web\n# ${'é'.repeat(60)}\n`; // 71 characters, 131 bytes
    expect(parseManifests(text, 'big.yaml', { maxBytes: 200 }).unreadable).toBeUndefined();
    const parsed = parseManifests(text, 'big.yaml', { maxBytes: 100 });
    expect(parsed.unreadable?.code).toBe('InvalidManifest');
    expect(parsed.unreadable!.message).toContain('big.yaml');
    expect(parsed.unreadable!.message).toContain('100');
    expect(parsed.manifests).toEqual([]);
    expect(parsed.rejected).toEqual([]);
  });

  it('applies a 1 MiB limit by default', () => {
    const parsed = parseManifests(`# ${'x'.repeat(1024 * 1024)}\n`, 'huge.yaml');
    expect(parsed.unreadable?.code).toBe('InvalidManifest');
  });

  it('accepts text of exactly maxBytes', () => {
    const text = DB_YAML;
    const parsed = parseManifests(text, 'db.yaml', { maxBytes: Buffer.byteLength(text) });
    expect(parsed.unreadable).toBeUndefined();
    expect(parsed.manifests.map((m) => m.id)).toEqual(['db']);
  });
});

describe('describeRejection', () => {
  it('formats origin[index] (id "x"): path: message; path: message', () => {
    const text = describeRejection({
      origin: 'list.yaml',
      index: 2,
      id: 'web',
      errors: [
        { path: 'containers[0].image', message: 'is required' },
        { path: 'containers[0].memory', message: 'must be an integer, got string "1g"' },
      ],
    });
    expect(text).toBe(
      'list.yaml[2] (id "web"): containers[0].image: is required; containers[0].memory: must be an integer, got string "1g"',
    );
  });

  it('leaves out the index and id when unknown', () => {
    expect(describeRejection({ origin: 'one.yaml', errors: [{ path: 'id', message: 'is required' }] })).toBe('one.yaml: id: is required');
  });

  it('describes a real rejection from parseManifests', () => {
    const parsed = parseManifests(JSON.stringify([manifestJson('a'), { id: 'x' }]), 'src');
    expect(describeRejection(parsed.rejected[0]!)).toBe('src[1] (id "x"): containers: is required');
  });

  it('turns a rejection into an InvalidManifest error carrying the field errors', () => {
    const r = { origin: 'one.yaml', id: 'web', errors: [{ path: 'id', message: 'bad' }] };
    const error = rejectionError(r, 'file');
    expect(error.code).toBe('InvalidManifest');
    expect(error.adapter).toBe('file');
    expect(error.message).toBe('one.yaml (id "web"): id: bad');
    expect(error.fieldErrors).toEqual(r.errors);
  });
});

describe('retainLastGood', () => {
  const v1 = parseManifests(JSON.stringify([manifestJson('a', 'nginx:1'), manifestJson('b', 'redis:1')]), 'f.json');

  it('is set up with two valid manifests', () => {
    expect(v1.manifests.map((m) => m.id)).toEqual(['a', 'b']);
  });

  it('returns the new manifests when everything is valid', () => {
    const v2 = parseManifests(JSON.stringify([manifestJson('a', 'nginx:2'), manifestJson('b', 'redis:2')]), 'f.json');
    const result = retainLastGood(v2, v1.manifests);
    expect(result.map((m) => m.containers[0]!.image)).toEqual(['nginx:2', 'redis:2']);
  });

  it('keeps the previous version of a manifest that is now rejected, matched by id', () => {
    const broken = { id: 'b', containers: [{ name: 'app', image: 'redis:2', memory: 'lots' }] };
    const v2 = parseManifests(JSON.stringify([manifestJson('a', 'nginx:2'), broken]), 'f.json');
    expect(v2.rejected.map((r) => r.id)).toEqual(['b']);
    const result = retainLastGood(v2, v1.manifests);
    expect(result.map((m) => [m.id, m.containers[0]!.image])).toEqual([
      ['a', 'nginx:2'],
      ['b', 'redis:1'],
    ]);
    expect(result[1]).toBe(v1.manifests[1]);
  });

  it('drops a manifest that disappeared from a readable document', () => {
    const v2 = parseManifests(JSON.stringify([manifestJson('a', 'nginx:1')]), 'f.json');
    expect(retainLastGood(v2, v1.manifests).map((m) => m.id)).toEqual(['a']);
  });

  it('drops a rejected manifest that had no previous version', () => {
    const v2 = parseManifests(JSON.stringify([manifestJson('a'), { id: 'new' }]), 'f.json');
    expect(retainLastGood(v2, v1.manifests).map((m) => m.id)).toEqual(['a']);
  });

  it('does not keep an old version when a valid manifest with the same id is also present', () => {
    const v2 = parseManifests(JSON.stringify([manifestJson('b', 'redis:3'), { id: 'b' }]), 'f.json');
    const result = retainLastGood(v2, v1.manifests);
    expect(result.map((m) => [m.id, m.containers[0]!.image])).toEqual([['b', 'redis:3']]);
  });

  it('returns the previous manifests unchanged when the document is unreadable', () => {
    const v2 = parseManifests('id: [unclosed\n', 'f.json');
    expect(v2.unreadable).toBeDefined();
    expect(retainLastGood(v2, v1.manifests)).toBe(v1.manifests);
  });

  it('empties the list for a readable empty list, and keeps it for an empty document', () => {
    expect(retainLastGood(parseManifests('[]', 'f.json'), v1.manifests)).toEqual([]);
    expect(retainLastGood(parseManifests('', 'f.json'), v1.manifests)).toEqual(v1.manifests);
  });
});
