import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { Tokens, type ManifestSource } from '@kubelet-ts/core';
import { HttpManifestSource, parseHeaderFlag, registerHttpSource, type HttpManifestSourceOptions } from '../src/index.js';
import { objectDocuments, RecordingSink, heldClock } from '@kubelet-ts/conformance';
import { ManifestServer } from './manifest-server.js';

const manifest = (id: string, image = 'app:1') => `version: v1beta1\nid: ${id}\ncontainers:\n  - name: main\n    image: ${image}\n`;
const yamlList = (...items: string[]) => items.map((m) => `- ${m.replaceAll('\n', '\n  ').trimEnd()}`).join('\n') + '\n';
const json = (id: string, image = 'app:1') => ({ id, containers: [{ name: 'main', image }] });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const { pod: v1Pod, configMap, secret } = objectDocuments;

describe('HttpManifestSource', () => {
  let server: ManifestServer;
  const sources: ManifestSource[] = [];

  beforeEach(async () => {
    server = new ManifestServer();
    await server.listen();
  });

  afterEach(async () => {
    await Promise.all(sources.splice(0).map((s) => s.close()));
    await server.close();
  });

  const start = async (options: Partial<HttpManifestSourceOptions> = {}) => {
    const sink = new RecordingSink();
    const source = new HttpManifestSource({ url: server.url, checkFrequencyMs: 60_000, ...options });
    sources.push(source);
    await source.start(sink);
    return { sink, source };
  };

  it('delivers a YAML list on the first poll, before start resolves', async () => {
    server.serve(yamlList(manifest('a'), manifest('b', 'app:2')));
    const { sink } = await start();
    expect(sink.updates).toHaveLength(1);
    expect(sink.ids).toEqual(['a', 'b']);
    expect(sink.image('b')).toBe('app:2');
    expect(sink.errors).toEqual([]);
  });

  it('gives the ConfigMaps and Secrets of the body beside the pods', async () => {
    server.serve([v1Pod, configMap('fast'), secret].join('\n---\n'));
    const { sink } = await start();
    expect([sink.ids, sink.objectKeys, sink.errors]).toEqual([['web'], ['ConfigMap/default/web-config', 'Secret/default/web-secret'], []]);
  });

  it('reads a single YAML manifest, a JSON manifest and a JSON list', async () => {
    server.serve(manifest('single'));
    expect((await start()).sink.ids).toEqual(['single']);
    server.serve(JSON.stringify(json('one')), { 'content-type': 'application/json' });
    expect((await start()).sink.ids).toEqual(['one']);
    server.serve(JSON.stringify([json('x'), json('y')]), { 'content-type': 'application/json' });
    expect((await start()).sink.ids).toEqual(['x', 'y']);
  });

  it('waits between polls on the clock it is given', async () => {
    const { clock, timers } = heldClock();
    server.serve(manifest('a', 'app:1'));
    const { sink } = await start({ checkFrequencyMs: 20, clock });
    expect(timers.map((t) => t.ms)).toEqual([20]);
    await sleep(100);
    expect(server.requests).toHaveLength(1); // the next poll waits for the clock, not for 20 ms
    server.serve(manifest('a', 'app:2'));
    timers[0]!.fire();
    await sink.until(() => sink.image('a') === 'app:2', 'the poll the clock let through');
    expect(server.requests).toHaveLength(2);
    expect(timers.map((t) => t.ms)).toEqual([20, 20]);
  });

  it('delivers an edited body on a later poll, and an unchanged body only once', async () => {
    server.serve(manifest('a', 'app:1'));
    const { sink } = await start({ checkFrequencyMs: 20 });
    await sink.until(() => server.requests.length >= 4, 'several polls');
    expect(sink.updates).toHaveLength(1);
    server.serve(yamlList(manifest('a', 'app:2'), manifest('b')));
    await sink.until(() => sink.image('a') === 'app:2', 'the edit');
    expect(sink.ids).toEqual(['a', 'b']);
    const polls = server.requests.length;
    await sink.until(() => server.requests.length >= polls + 3, 'more polls');
    expect(sink.updates).toHaveLength(2);
    expect(sink.errors).toEqual([]);
  });

  it('never polls twice at once, even when the server is slower than the poll frequency', async () => {
    server.handler = (_req, res) => void setTimeout(() => res.end(manifest('a')), 40);
    const { sink } = await start({ checkFrequencyMs: 1 });
    await sink.until(() => server.requests.length >= 5, 'five polls');
    expect(server.maxInFlight).toBe(1);
  });

  it('sends If-None-Match with the last ETag, and a 304 changes nothing', async () => {
    let etag = '"v1"';
    let body = manifest('a', 'app:1');
    let notModified = 0;
    server.handler = (req, res) => {
      if (req.headers['if-none-match'] === etag) {
        notModified += 1;
        res.writeHead(304, { etag }).end();
      } else res.writeHead(200, { etag }).end(body);
    };
    const { sink } = await start({ checkFrequencyMs: 20 });
    expect(server.requests[0]?.['if-none-match']).toBeUndefined();
    await sink.until(() => notModified >= 3, 'conditional polls answered 304');
    expect(sink.updates).toHaveLength(1);
    expect(sink.errors).toEqual([]);
    etag = '"v2"';
    body = manifest('a', 'app:2');
    await sink.until(() => sink.image('a') === 'app:2', 'the new version');
    await sink.until(() => server.requests.at(-1)?.['if-none-match'] === '"v2"', 'the new ETag sent');
    expect(sink.updates).toHaveLength(2);
  });

  it('sends If-Modified-Since with the last Last-Modified, and a 304 changes nothing', async () => {
    const modified = new Date(Date.UTC(2014, 5, 6, 12, 0, 0)).toUTCString();
    let notModified = 0;
    server.handler = (req, res) => {
      if (req.headers['if-modified-since'] === modified) {
        notModified += 1;
        res.writeHead(304).end();
      } else res.writeHead(200, { 'last-modified': modified }).end(manifest('a'));
    };
    const { sink } = await start({ checkFrequencyMs: 20 });
    await sink.until(() => notModified >= 3, 'conditional polls answered 304');
    expect(sink.updates).toHaveLength(1);
    expect(sink.ids).toEqual(['a']);
    expect(sink.errors).toEqual([]);
  });

  it('sends the extra headers with every poll', async () => {
    server.serve(manifest('a'));
    const { sink } = await start({ checkFrequencyMs: 20, headers: { Authorization: 'Bearer s3cret', 'X-Node': 'node-1' } });
    await sink.until(() => server.requests.length >= 2, 'a second poll');
    for (const headers of server.requests) {
      expect(headers.authorization).toBe('Bearer s3cret');
      expect(headers['x-node']).toBe('node-1');
    }
  });

  it('reports a 500 once with the URL and status, keeps the last good set, and reports it again after a recovery', async () => {
    server.serve(manifest('a'));
    const { sink } = await start({ checkFrequencyMs: 20 });
    server.handler = (_req, res) => res.writeHead(500).end('boom');
    await sink.until(() => sink.errors.length === 1, 'the 500 reported');
    expect(sink.errors[0]?.code).toBe('Unavailable');
    expect(sink.errors[0]?.message).toContain(server.url);
    expect(sink.errors[0]?.message).toContain('500');
    const polls = server.requests.length;
    await sink.until(() => server.requests.length >= polls + 3, 'more failing polls');
    expect(sink.errors).toHaveLength(1);
    expect(sink.updates).toEqual([[expect.objectContaining({ id: 'a' })]]);
    server.serve(manifest('a'));
    const recovered = server.requests.length;
    await sink.until(() => server.requests.length >= recovered + 2, 'a good poll');
    expect(sink.updates).toHaveLength(1); // the same set: nothing to deliver
    server.handler = (_req, res) => res.writeHead(500).end('boom');
    await sink.until(() => sink.errors.length === 2, 'the same failure reported again after the recovery');
    expect(sink.errors[1]?.message).toBe(sink.errors[0]?.message);
    expect(sink.ids).toEqual(['a']);
  });

  it('reports a 404 as NotFound', async () => {
    server.handler = (_req, res) => res.writeHead(404).end();
    const { sink } = await start();
    expect(sink.errors.map((e) => e.code)).toEqual(['NotFound']);
    expect(sink.errors[0]?.message).toContain('404');
    expect(sink.updates).toEqual([]);
  });

  it('reports a body that is not YAML or JSON, once, and keeps the last good set', async () => {
    server.serve(manifest('a'));
    const { sink } = await start({ checkFrequencyMs: 20 });
    server.serve('id: a\ncontainers: [\n');
    await sink.until(() => sink.errors.length === 1, 'the garbage reported');
    expect(sink.errors[0]?.code).toBe('InvalidManifest');
    expect(sink.errors[0]?.message).toContain(server.url);
    const polls = server.requests.length;
    await sink.until(() => server.requests.length >= polls + 3, 'more polls');
    expect(sink.errors).toHaveLength(1);
    expect(sink.updates).toHaveLength(1);
    expect(sink.ids).toEqual(['a']);
  });

  // Found by the fuzz suite: read as text with replacement characters, a Latin-1 body ran with
  // values its author never wrote, and dropped the manifest whose id it garbled.
  it('reports a body that is not UTF-8 as unreadable and keeps the last good set', async () => {
    server.serve(manifest('a'));
    const { sink } = await start({ checkFrequencyMs: 20 });
    const latin1 = Buffer.from(`${manifest('a')}    env:\n      - name: CITY\n        value: Zürich\n`, 'latin1');
    server.handler = (_req, res) => res.end(latin1);
    await sink.until(() => sink.errors.length === 1, 'the body reported');
    expect(sink.errors[0]?.message).toBe(`${server.url}: not valid UTF-8`);
    expect(sink.updates).toHaveLength(1);
    expect(sink.ids).toEqual(['a']);
  });

  it('sends the credentials of the URL, and never shows its password in a message', async () => {
    server.handler = (_req, res) => res.writeHead(500).end();
    const url = server.url.replace('http://', 'http://agent:s3cret@');
    const { sink } = await start({ url });
    expect(server.requests[0]?.authorization).toBe(`Basic ${Buffer.from('agent:s3cret').toString('base64')}`);
    expect(sink.errors[0]?.message).toContain('http://agent:***@127.0.0.1');
    expect(sink.errors[0]?.message).not.toContain('s3cret');
  });

  it('does not deliver an unreadable first body, not even as an empty set', async () => {
    server.serve('{"id": "a", "containers": [');
    const { sink } = await start();
    expect(sink.updates).toEqual([]);
    expect(sink.errors.map((e) => e.code)).toEqual(['InvalidManifest']);
  });

  it('does not deliver again when the body changes but the set does not', async () => {
    server.serve(manifest('a'));
    const { sink } = await start({ checkFrequencyMs: 20 });
    server.serve(`# reformatted\n${manifest('a')}\n\n`);
    const polls = server.requests.length;
    await sink.until(() => server.requests.length >= polls + 3, 'polls of the new text');
    expect(sink.updates).toHaveLength(1);
  });

  it('delivers the valid manifests of a body, names the fields of the invalid one, and keeps its last good version', async () => {
    const badPort = (id: string) => `${manifest(id)}    ports:\n      - containerPort: 80\n        hostPort: 70000\n`;
    server.serve(yamlList(manifest('good'), badPort('bad')));
    const { sink } = await start({ checkFrequencyMs: 20 });
    expect(sink.ids).toEqual(['good']);
    expect(sink.errors.map((e) => e.code)).toEqual(['InvalidManifest']);
    expect(sink.errors[0]?.message).toContain(server.url);
    expect(sink.errors[0]?.message).toContain('containers[0].ports[0].hostPort: must be 0-65535');
    expect(sink.errors[0]?.fieldErrors.map((f) => f.path)).toEqual(['containers[0].ports[0].hostPort']);
    // `good` turns invalid: it keeps its last good version while the rest of the body moves on.
    server.serve(yamlList(badPort('good'), manifest('new')));
    await sink.until(() => sink.ids.join() === 'good,new', 'new delivered');
    expect(sink.image('good')).toBe('app:1');
    expect(sink.errors).toHaveLength(2);
    expect(sink.errors[1]?.message).toContain('(id "good")');
  });

  it('takes the first of two manifests with the same id, and reports the conflict once', async () => {
    server.serve(yamlList(manifest('web', 'app:first'), manifest('web', 'app:second')));
    const { sink } = await start({ checkFrequencyMs: 20 });
    await sink.until(() => server.requests.length >= 3, 'more polls');
    expect(sink.image('web')).toBe('app:first');
    expect(sink.updates).toHaveLength(1);
    expect(sink.errors.map((e) => e.code)).toEqual(['Conflict']);
    expect(sink.errors[0]?.message).toContain('"web"');
  });

  it('reports a server that does not answer as a Timeout, keeps the last good set, and recovers', async () => {
    server.serve(manifest('a', 'app:1'));
    const { sink } = await start({ checkFrequencyMs: 20, timeoutMs: 100 });
    server.hang();
    await sink.until(() => sink.errors.length === 1, 'the timeout reported');
    expect(sink.errors[0]?.code).toBe('Timeout');
    expect(sink.errors[0]?.message).toContain(server.url);
    expect(sink.ids).toEqual(['a']);
    server.serve(manifest('a', 'app:2'));
    await sink.until(() => sink.image('a') === 'app:2', 'the recovered server read');
    expect(sink.updates).toHaveLength(2);
  });

  it('starts while the backend is down, reports it, and delivers once it comes up', async () => {
    const port = Number(new URL(server.url).port);
    const url = server.url;
    await server.close();
    const sink = new RecordingSink();
    const source = new HttpManifestSource({ url, checkFrequencyMs: 20 });
    sources.push(source);
    await expect(source.start(sink)).resolves.toBeUndefined();
    expect(sink.updates).toEqual([]);
    expect(sink.errors.map((e) => e.code)).toEqual(['Unavailable']);
    expect(sink.errors[0]?.message).toContain(url);
    await sleep(60);
    expect(sink.errors).toHaveLength(1); // the same failure, said once
    server = new ManifestServer();
    server.serve(manifest('late'));
    await server.listen(port);
    await sink.until(() => sink.updates.length === 1, 'the first delivery');
    expect(sink.ids).toEqual(['late']);
  });

  // One rule for every source (issue 27): an empty body is unreadable, as an empty etcd value is;
  // only an explicit empty list runs nothing.
  it('keeps the last good set for an empty body, and says so; an empty list empties it', async () => {
    server.serve(manifest('a'));
    const { sink } = await start({ checkFrequencyMs: 20 });
    expect(sink.ids).toEqual(['a']);
    server.serve('');
    await sink.until(() => sink.errors.length === 1, 'the empty body reported');
    expect(sink.errors[0]?.message).toContain('empty (no manifest, not even an empty list), which is unreadable; to run nothing, write []');
    expect(sink.updates).toHaveLength(1);
    server.serve('[]');
    await sink.until(() => sink.updates.length === 2, 'the empty list delivered');
    expect(sink.ids).toEqual([]);
  });

  it('delivers nothing for an empty first body, not even an empty set', async () => {
    server.serve('\n');
    const { sink } = await start();
    expect(sink.updates).toEqual([]);
    expect(sink.errors).toHaveLength(1);
  });

  it('refuses a body over 1 MiB, with or without Content-Length, and keeps the last good set', async () => {
    server.serve(manifest('a'));
    const { sink } = await start({ checkFrequencyMs: 20 });
    const big = `# ${'x'.repeat(1024 * 1024)}\n${manifest('big')}`;
    server.serve(big);
    await sink.until(() => sink.errors.length === 1, 'the large body reported');
    expect(sink.errors[0]?.code).toBe('InvalidManifest');
    expect(sink.errors[0]?.message).toContain('larger than 1 MiB');
    expect(sink.errors[0]?.message).toContain(server.url);
    server.serve(manifest('a'));
    const polls = server.requests.length;
    await sink.until(() => server.requests.length >= polls + 2, 'a good poll in between');
    server.handler = (_req, res) => {
      // Chunked, without Content-Length: only counting what arrives can stop it.
      const chunk = `# ${'y'.repeat(64 * 1024)}\n`;
      for (let i = 0; i < 20; i += 1) res.write(chunk);
      res.end(manifest('big'));
    };
    await sink.until(() => sink.errors.length === 2, 'the chunked large body reported');
    expect(sink.errors[1]?.message).toContain('larger than 1 MiB');
    expect(sink.updates).toHaveLength(1);
    expect(sink.ids).toEqual(['a']);
  });

  it('closes promptly during a hanging request, and says nothing afterwards', async () => {
    server.serve(manifest('a'));
    const { sink, source } = await start({ checkFrequencyMs: 20, timeoutMs: 10_000 });
    server.hang();
    const polls = server.requests.length;
    await sink.until(() => server.requests.length > polls && server.inFlight === 1, 'a hanging request');
    const began = Date.now();
    await source.close();
    expect(Date.now() - began).toBeLessThan(500);
    await source.close(); // idempotent
    server.serve(manifest('b'));
    await sleep(100);
    expect(server.requests.length).toBe(polls + 1);
    expect(sink.updates).toHaveLength(1);
    expect(sink.errors).toEqual([]);
  });

  it('resolves start when closed during the first request', async () => {
    server.hang();
    const sink = new RecordingSink();
    const source = new HttpManifestSource({ url: server.url, timeoutMs: 10_000 });
    sources.push(source);
    const starting = source.start(sink);
    await sink.until(() => server.inFlight === 1, 'the first request');
    await source.close();
    await expect(starting).resolves.toBeUndefined();
    expect(sink.updates).toEqual([]);
    expect(sink.errors).toEqual([]);
  });

  it('starts again after close, as its supervisor does, and tells the new sink afresh', async () => {
    server.serve(manifest('a'));
    const { sink, source } = await start({ checkFrequencyMs: 20 });
    await source.close();
    const again = new RecordingSink();
    await source.start(again);
    expect(again.ids).toEqual(['a']);
    server.serve(manifest('b'));
    await again.until(() => again.ids.join() === 'b', 'b after the restart');
    expect(sink.updates).toHaveLength(1);
  });

  it('is registered as a source under its name', () => {
    const registered: unknown[] = [];
    const source = registerHttpSource(
      { register: (token, provider) => token === Tokens.Source && registered.push(provider.useValue) },
      { url: 'http://127.0.0.1:1/m', name: 'web-manifests' },
    );
    expect(registered).toEqual([source]);
    expect(source.name).toBe('web-manifests');
    expect(new HttpManifestSource({ url: 'https://example.test/m.yaml' }).name).toBe('http');
    expect(() => new HttpManifestSource({ url: 'file:///etc/manifests' })).toThrow(/http:\/\/ or https:\/\//);
  });
});

describe('parseHeaderFlag', () => {
  it('splits at the first colon and trims', () => {
    expect(parseHeaderFlag('Authorization: Bearer abc')).toEqual(['Authorization', 'Bearer abc']);
    expect(parseHeaderFlag('X-Origin:https://example.test:8443/x')).toEqual(['X-Origin', 'https://example.test:8443/x']);
    expect(parseHeaderFlag('  X-Empty :  ')).toEqual(['X-Empty', '']);
  });

  it('rejects a value that is not "Name: value"', () => {
    expect(() => parseHeaderFlag('Authorization Bearer abc')).toThrow(
      /malformed header "Authorization Bearer abc": expected "Name: value"/,
    );
    expect(() => parseHeaderFlag(': value')).toThrow(/the name is empty/);
    expect(() => parseHeaderFlag('Bad Name: value')).toThrow(/"Bad Name" is not a valid header name/);
    expect(() => parseHeaderFlag('X-Ok: a\r\nX-Injected: b')).toThrow(/control character/);
  });
});
