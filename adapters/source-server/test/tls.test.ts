import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { copyFile } from 'node:fs/promises';
import { createServer as createHttpsServer, request, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ManualClock, RecordingSink } from '@kubelet-ts/conformance';
import { TestCertificates, type CertificatePair } from '@kubelet-ts/testkit';
import { AuthThrottle, ServerManifestSource, agentApiListener, type ServerManifestSourceOptions } from '../src/index.js';
import { FakeView } from './fake-view.js';

const TOKEN = 'tls-test-token';
const manifest = JSON.stringify({ id: 'web', containers: [{ name: 'main', image: 'app:1' }] });
let certs: TestCertificates;

beforeAll(async () => {
  certs = await TestCertificates.create();
});
afterAll(async () => {
  await certs.destroy();
});

interface Answer {
  readonly status: number;
  readonly body: string;
  readonly peerCn?: string;
  readonly headers: Record<string, string | string[] | undefined>;
}

/** One request over TLS trusting `ca` (the test CA unless said), presenting `client` if given. */
function call(
  url: string,
  path: string,
  options: { ca?: string; client?: CertificatePair; headers?: Record<string, string>; method?: string; body?: string } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}${path}`,
      {
        method: options.method ?? 'GET',
        ca: options.ca ?? certs.ca.cert,
        ...(options.client === undefined ? {} : { cert: options.client.cert, key: options.client.key }),
        headers: options.headers ?? {},
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const peer = (res.socket as import('node:tls').TLSSocket).getPeerCertificate?.();
          resolve({
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks).toString('utf8'),
            headers: res.headers,
            ...(peer?.subject?.CN === undefined ? {} : { peerCn: String(peer.subject.CN) }),
          });
        });
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

const postManifest = (url: string, options: Parameters<typeof call>[2] = {}) =>
  call(url, '/container', {
    ...options,
    method: 'POST',
    body: manifest,
    headers: { 'content-type': 'application/json', ...options.headers },
  });

describe('ServerManifestSource over TLS', () => {
  let source: ServerManifestSource | undefined;
  let sink: RecordingSink;

  afterEach(async () => {
    await source?.close();
    source = undefined;
  });

  const start = async (options: ServerManifestSourceOptions) => {
    sink = new RecordingSink();
    source = new ServerManifestSource({ port: 0, ...options });
    await source.start(sink);
    return source.url;
  };

  it("serves HTTPS with --tls-cert-file/--tls-private-key-file; plain HTTP gets Go's 400 (tls-attacks.test.ts)", async () => {
    const url = await start({ tls: { certFile: certs.server.certFile, keyFile: certs.server.keyFile } });
    expect(url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const answer = await postManifest(url);
    expect(answer.status).toBe(201);
    expect(answer.peerCn).toBe('server');
    expect((await fetch(url.replace('https:', 'http:') + '/healthz')).status).toBe(400);
  });

  it('a client trusting another CA refuses the server', async () => {
    const url = await start({ tls: { certFile: certs.server.certFile, keyFile: certs.server.keyFile } });
    await expect(call(url, '/container', { ca: certs.otherCa.cert })).rejects.toThrow(/self-signed|unable to verify|certificate/i);
  });

  describe('with --client-ca-file', () => {
    const tls = () => ({ certFile: certs.server.certFile, keyFile: certs.server.keyFile, clientCaFile: certs.ca.certFile });

    it('lets in a client certificate the CA signed, on manifest and mounted routes', async () => {
      const url = await start({ tls: tls() });
      source!.mount(async (_req, u) => (u.pathname === '/pods' ? { status: 200, json: [] } : undefined));
      expect((await postManifest(url, { client: certs.client })).status).toBe(201);
      expect((await call(url, '/pods', { client: certs.client })).status).toBe(200);
    });

    it.each([
      ['no certificate', () => undefined],
      ['an expired certificate', () => certs.expiredClient],
      ['a certificate of another CA', () => certs.otherClient],
    ])('refuses %s with 401 and changes nothing', async (_, client) => {
      const url = await start({ tls: tls() });
      const given = client();
      const answer = await postManifest(url, given === undefined ? {} : { client: given });
      expect(answer.status).toBe(401);
      expect(JSON.parse(answer.body).error).toMatch(/client certificate signed by the client CA/);
      expect((await call(url, '/pods', given === undefined ? {} : { client: given })).status).toBe(401);
      expect(sink.updates).toEqual([[]]);
    });

    it('leaves /healthz open without a certificate', async () => {
      const url = await start({ tls: tls() });
      source!.mount(async (_req, u) => (u.pathname === '/healthz' ? { status: 200, json: { status: 'ok' } } : undefined));
      expect((await call(url, '/healthz')).status).toBe(200);
    });

    it('with a token too, either one authenticates (as the kubelet accepts any of its authenticators)', async () => {
      const url = await start({ tls: tls(), authToken: TOKEN });
      expect((await postManifest(url, { client: certs.client })).status).toBe(201);
      expect((await postManifest(url, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
      expect((await postManifest(url, { client: certs.otherClient, headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
      const neither = await postManifest(url, { client: certs.expiredClient, headers: { authorization: 'Bearer wrong' } });
      expect(neither.status).toBe(401);
      expect(JSON.parse(neither.body).error).toMatch(/client certificate signed by the client CA or a valid bearer token/);
    });
  });

  it('serves a replaced certificate from the next connection on, without a restart (read on the clock)', async () => {
    const clock = new ManualClock(Date.now());
    const certFile = join(certs.dir, 'live.pem');
    const keyFile = join(certs.dir, 'live-key.pem');
    await copyFile(certs.server.certFile, certFile);
    await copyFile(certs.server.keyFile, keyFile);
    const url = await start({ tls: { certFile, keyFile, reloadIntervalMs: 1000 }, clock });
    expect((await postManifest(url)).peerCn).toBe('server');
    const rotated = await certs.issue('rotated-server', { server: true });
    // The certificate first, then the key: between the two the pair does not match, and the old one stays.
    await copyFile(rotated.certFile, certFile);
    await clock.advance(1000);
    await new Promise((r) => setTimeout(r, 100));
    expect((await call(url, '/nothing')).peerCn).toBe('server');
    await copyFile(rotated.keyFile, keyFile);
    await clock.advance(1000);
    await new Promise((r) => setTimeout(r, 100));
    expect((await call(url, '/nothing')).peerCn).toBe('rotated-server');
  });

  it('refuses to start with a certificate file it cannot read, naming the flag', () => {
    expect(() => new ServerManifestSource({ tls: { certFile: '/nonexistent.pem', keyFile: certs.server.keyFile } })).toThrow(
      /--tls-cert-file.*\/nonexistent\.pem/,
    );
    expect(() => new ServerManifestSource({ tls: { certFile: certs.server.certFile, keyFile: certs.client.keyFile } })).toThrow(
      /do not make a usable certificate/,
    );
  });

  it('takes an Origin of its own https:// pages, not http:// ones', async () => {
    const url = await start({ tls: { certFile: certs.server.certFile, keyFile: certs.server.keyFile } });
    source!.mount(async (_req, u) => (u.pathname === '/pods' ? { status: 200, json: [] } : undefined));
    expect((await call(url, '/pods', { headers: { origin: url } })).status).toBe(200);
    expect((await call(url, '/pods', { headers: { origin: url.replace('https:', 'http:') } })).status).toBe(403);
  });
});

describe('secure by default', () => {
  it.each(['0.0.0.0', '::', '192.0.2.10', 'node.example'])(
    'refuses to serve %s without a token or client CA, naming the flags',
    (address) => {
      expect(() => new ServerManifestSource({ address })).toThrow(/--auth-token.*--client-ca-file.*--insecure-allow-unauthenticated/);
      // A server certificate alone encrypts but authenticates nobody.
      expect(() => new ServerManifestSource({ address, tls: { certFile: certs.server.certFile, keyFile: certs.server.keyFile } })).toThrow(
        /--insecure-allow-unauthenticated/,
      );
    },
  );

  it.each([
    ['a token', { authToken: TOKEN }],
    ['a client CA', { tls: { certFile: '', keyFile: '', clientCaFile: '' } }],
    ['--insecure-allow-unauthenticated', { insecureAllowUnauthenticated: true }],
  ])('serves a non-loopback address with %s', (_, options) => {
    const tls =
      'tls' in options ? { tls: { certFile: certs.server.certFile, keyFile: certs.server.keyFile, clientCaFile: certs.ca.certFile } } : {};
    expect(() => new ServerManifestSource({ address: '0.0.0.0', ...options, ...tls })).not.toThrow();
  });

  it.each(['127.0.0.1', '127.0.0.2', '::1', 'localhost'])('serves loopback %s without authentication, as before', (address) => {
    expect(() => new ServerManifestSource({ address })).not.toThrow();
  });
});

describe('repeated authentication failures', () => {
  let source: ServerManifestSource | undefined;
  afterEach(async () => {
    await source?.close();
    source = undefined;
  });

  it('get 429 with Retry-After after 10 from one address, for a lockout doubling per failure; a valid token or client certificate is not held up', async () => {
    const clock = new ManualClock(Date.now());
    source = new ServerManifestSource({
      port: 0,
      authToken: TOKEN,
      clock,
      tls: { certFile: certs.server.certFile, keyFile: certs.server.keyFile, clientCaFile: certs.ca.certFile },
    });
    await source.start(new RecordingSink());
    const url = source.url;
    const wrong = { headers: { authorization: 'Bearer guess' } };
    for (let i = 0; i < 10; i++) expect((await call(url, '/pods', wrong)).status).toBe(401);
    expect((await call(url, '/pods', wrong)).status).toBe(401); // the 11th failure locks for 1 s
    const locked = await call(url, '/pods', wrong);
    expect(locked.status).toBe(429);
    expect(locked.headers['retry-after']).toBe('1');
    // A valid caller beside the guesser is never locked out by it (issue 27): the right token gets in.
    expect((await call(url, '/pods', { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(404);
    expect((await postManifest(url, { client: certs.client })).status).toBe(201);
    await clock.advance(5000);
    expect((await call(url, '/pods', wrong)).status).toBe(401); // the 13th: 4 s
    expect((await call(url, '/pods', wrong)).headers['retry-after']).toBe('4');
    await clock.advance(20_000);
    // Not forgiven by a success (a guesser could interleave a valid caller's requests): the next failure locks again.
    expect((await call(url, '/pods', { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(404);
    expect((await call(url, '/pods', wrong)).status).toBe(401);
    expect((await call(url, '/pods', wrong)).status).toBe(429);
  });

  it('count all of loopback as one network, an IPv6 /64 as one, and an IPv4 address as one (issue 27)', () => {
    const throttle = new AuthThrottle(new ManualClock(0), { freeFailures: 3 });
    for (const address of ['127.0.0.1', '127.0.0.2', '::1']) throttle.failed(address);
    throttle.failed('::ffff:127.9.9.9');
    expect(throttle.lockedFor('127.200.0.1')).toBe(1000);
    expect(throttle.lockedFor('0:0:0:0:0:0:0:1')).toBe(1000);
    for (const address of ['2001:db8:1:2::1', '2001:db8:1:2:ffff::9', '2001:0db8:0001:0002::3']) throttle.failed(address);
    throttle.failed('2001:db8:1:2:0:0:1.2.3.4');
    expect(throttle.lockedFor('2001:db8:1:2::77')).toBe(1000);
    expect(throttle.lockedFor('2001:db8:1:3::1')).toBe(0);
    for (const address of ['10.0.0.1', '10.0.0.1', '10.0.0.1', '::ffff:10.0.0.1']) throttle.failed(address);
    expect(throttle.lockedFor('10.0.0.1')).toBe(1000);
    expect(throttle.lockedFor('10.0.0.2')).toBe(0);
    expect(throttle.size).toBe(3);
  });

  it('are counted per address, bounded, and forgotten after a while', async () => {
    const clock = new ManualClock(0);
    const throttle = new AuthThrottle(clock, {
      freeFailures: 1,
      firstLockoutMs: 1000,
      maxLockoutMs: 4000,
      forgetAfterMs: 60_000,
      maxAddresses: 3,
    });
    throttle.failed('a');
    expect(throttle.lockedFor('a')).toBe(0);
    for (let i = 0; i < 10; i++) throttle.failed('a');
    expect(throttle.lockedFor('a')).toBe(4000); // bounded
    expect(throttle.lockedFor('b')).toBe(0);
    for (const address of ['b', 'c', 'd']) throttle.failed(address);
    expect(throttle.size).toBe(3); // 'a' failed longest ago and went first
    expect(throttle.lockedFor('a')).toBe(0);
    throttle.failed('b');
    throttle.failed('b');
    expect(throttle.lockedFor('b')).toBe(2000);
    await clock.advance(60_000);
    expect(throttle.lockedFor('b')).toBe(0);
    throttle.failed('b');
    expect(throttle.lockedFor('b')).toBe(0); // counted from one again
  });
});

describe('agentApiListener on an embedder’s https server', () => {
  let server: Server | undefined;
  afterEach(async () => {
    await new Promise((r) => (server === undefined ? r(undefined) : server.close(r)));
    server = undefined;
  });

  it('takes a client certificate as authentication with clientCertificates: true', async () => {
    server = createHttpsServer(
      { cert: certs.server.cert, key: certs.server.key, ca: certs.ca.cert, requestCert: true, rejectUnauthorized: false },
      agentApiListener(new FakeView(), { clientCertificates: true, authToken: TOKEN }),
    );
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
    expect((await call(url, '/pods', { client: certs.client })).status).toBe(200);
    expect((await call(url, '/pods', { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
    expect((await call(url, '/pods', { client: certs.otherClient })).status).toBe(401);
    expect((await call(url, '/healthz')).status).toBe(200);
  });
});

describe('curl against the agent server', () => {
  let source: ServerManifestSource | undefined;
  afterEach(async () => {
    await source?.close();
    source = undefined;
  });
  const curl = async (args: string[]): Promise<string> => {
    try {
      const { stdout } = await promisify(execFile)('curl', ['-s', '-o', '/dev/null', '-w', '%{http_code}', ...args]);
      return stdout;
    } catch (error) {
      return `exit ${(error as { code?: number }).code}: ${(error as { stdout?: string }).stdout ?? ''}`;
    }
  };

  it('shows the same: the CA-signed client in, no, expired or foreign certificates 401, a foreign server CA refused', async () => {
    source = new ServerManifestSource({
      port: 0,
      tls: { certFile: certs.server.certFile, keyFile: certs.server.keyFile, clientCaFile: certs.ca.certFile },
    });
    await source.start(new RecordingSink());
    const pods = `${source.url}/nothing`;
    expect(await curl(['--cacert', certs.ca.certFile, '--cert', certs.client.certFile, '--key', certs.client.keyFile, pods])).toBe('404');
    expect(await curl(['--cacert', certs.ca.certFile, pods])).toBe('401');
    expect(
      await curl(['--cacert', certs.ca.certFile, '--cert', certs.expiredClient.certFile, '--key', certs.expiredClient.keyFile, pods]),
    ).toBe('401');
    expect(
      await curl(['--cacert', certs.ca.certFile, '--cert', certs.otherClient.certFile, '--key', certs.otherClient.keyFile, pods]),
    ).toBe('401');
    expect(await curl(['--cacert', certs.otherCa.certFile, pods])).toMatch(/^exit 60/); // curl: peer certificate cannot be authenticated
  });
});
