import { afterEach, describe, expect, it, jest } from '@jest/globals';
import type * as Crypto from 'node:crypto';
import { RecordingSink } from '@kubelet-ts/conformance';

/**
 * The lengths of the buffers each timingSafeEqual call compared. A timing test would be flaky; this
 * shows instead that every request, whatever token it brings, is checked by one constant-time
 * comparison of two SHA-256 digests (a plain `===`, or timingSafeEqual on the raw tokens, fails it).
 */
const compared: Array<[number, number]> = [];
jest.unstable_mockModule('node:crypto', () => {
  const real = jest.requireActual<typeof Crypto>('node:crypto');
  const timingSafeEqual = (a: NodeJS.ArrayBufferView, b: NodeJS.ArrayBufferView) => {
    compared.push([a.byteLength, b.byteLength]);
    return real.timingSafeEqual(a, b);
  };
  return { ...real, default: { ...real, timingSafeEqual }, timingSafeEqual };
});
const { ServerManifestSource, agentApiListener } = await import('../src/index.js');
const { FakeView } = await import('./fake-view.js');

const TOKEN = 's3cret-token';
const manifest = JSON.stringify({ id: 'web', containers: [{ name: 'main', image: 'app:1' }] });

describe('the bearer token', () => {
  let source: InstanceType<typeof ServerManifestSource> | undefined;
  let sink: RecordingSink;
  let url: string;

  afterEach(async () => {
    await source?.close();
    source = undefined;
  });

  const start = async () => {
    sink = new RecordingSink();
    source = new ServerManifestSource({ port: 0, authToken: TOKEN });
    await source.start(sink);
    url = source.url;
  };

  const post = (path: string, headers: Record<string, string> = {}) =>
    fetch(`${url}${path}`, { method: 'POST', body: manifest, headers: { 'content-type': 'application/json', ...headers } });

  it.each([
    ['no header', {}],
    ['an empty bearer', { authorization: 'Bearer ' }],
    ['a shorter token', { authorization: `Bearer ${TOKEN.slice(0, -1)}` }],
    ['a longer token', { authorization: `Bearer ${TOKEN}x` }],
    ['a very long token', { authorization: `Bearer ${TOKEN.repeat(500)}` }],
    ['the token with another scheme', { authorization: `Basic ${TOKEN}` }],
    ['the bare token', { authorization: TOKEN }],
    ['the token in another header', { 'x-auth-token': TOKEN }],
  ])('refuses %s with 401, and changes nothing', async (_, headers) => {
    await start();
    const res = await post('/container', headers);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
    expect(sink.ids).toEqual([]);
  });

  it.each(['token', 'access_token', 'auth-token', 'authorization'])(
    'does not take the token from the query string (?%s=)',
    async (name) => {
      await start();
      const value = name === 'authorization' ? `Bearer ${TOKEN}` : TOKEN;
      expect((await post(`/container?${name}=${encodeURIComponent(value)}`)).status).toBe(401);
      expect((await fetch(`${url}/pods?${name}=${encodeURIComponent(value)}`)).status).toBe(401);
      expect(sink.ids).toEqual([]);
    },
  );

  it.each(['bearer', 'BEARER', 'BeArEr'])('takes the scheme in any case (%s), as the API server does', async (scheme) => {
    await start();
    expect((await post('/container', { authorization: `${scheme} ${TOKEN}` })).status).toBe(201);
    expect((await post('/container', { authorization: `${scheme} ${TOKEN}x` })).status).toBe(401);
  });

  it('compares every presented token in constant time: digests of one length, whatever was sent', async () => {
    await start();
    compared.length = 0;
    for (const presented of ['', 'x', TOKEN.slice(0, -1), `${TOKEN}x`, TOKEN.repeat(500)]) {
      expect((await fetch(`${url}/pods`, { headers: { authorization: `Bearer ${presented}` } })).status).toBe(401);
    }
    expect((await post('/container', { authorization: `Bearer ${TOKEN}` })).status).toBe(201);
    expect(compared).toEqual(Array.from({ length: 6 }, () => [32, 32]));
    expect(sink.ids).toEqual(['web']);
  });
});

// An empty token was taken as given: the digest of '' matched the '' presented by a request with
// no Authorization header at all, so `--auth-token ''` served every route to anyone, logging auth: true.
describe('an empty token', () => {
  it.each(['', ' ', '\t\n'])('is refused by ServerManifestSource and agentApiListener (%j) rather than turning auth off', (token) => {
    expect(() => new ServerManifestSource({ authToken: token })).toThrow(/authToken is empty.*leave it out/);
    expect(() => agentApiListener(new FakeView(), { authToken: token })).toThrow(/authToken is empty.*leave it out/);
  });
});
