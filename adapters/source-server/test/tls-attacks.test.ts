import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { copyFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { ManualClock, RecordingLogger, RecordingSink } from '@kubelet-ts/conformance';
import { TestCertificates } from '@kubelet-ts/testkit';
import { ServerManifestSource, type ServerManifestSourceOptions } from '../src/index.js';

// What a second attack broke in the TLS server (issue 27 items 1 to 3).

let certs: TestCertificates;
beforeAll(async () => {
  certs = await TestCertificates.create();
});
afterAll(async () => {
  await certs.destroy();
});

let source: ServerManifestSource | undefined;
const clients: Socket[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.destroy();
  await source?.close();
  source = undefined;
});

const start = async (options: ServerManifestSourceOptions = {}) => {
  source = new ServerManifestSource({ port: 0, tls: { certFile: certs.server.certFile, keyFile: certs.server.keyFile }, ...options });
  source.mount(async (_req, u) => (u.pathname === '/healthz' ? { status: 200, json: { status: 'ok' } } : undefined));
  await source.start(new RecordingSink());
  return { url: source.url, port: Number(new URL(source.url).port) };
};

/** A raw connection that sends `first` (or nothing); `closed` is how long until the server closed it, or 'open' after `capMs`. */
async function silentClient(port: number, capMs: number, first?: Buffer): Promise<{ closed: Promise<number | 'open'> }> {
  const socket = connect(port, '127.0.0.1');
  clients.push(socket);
  socket.on('error', () => undefined);
  await new Promise((resolve) => socket.once('connect', resolve));
  const opened = Date.now();
  if (first !== undefined) socket.write(first);
  const closed = new Promise<number | 'open'>((resolve) => {
    const cap = setTimeout(() => resolve('open'), capMs);
    socket.on('close', () => {
      clearTimeout(cap);
      resolve(Date.now() - opened);
    });
  });
  return { closed };
}

const healthz = (url: string): Promise<number> =>
  new Promise((resolve, reject) => {
    const req = httpsRequest(`${url}/healthz`, { ca: certs.ca.cert, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });

describe('half-open TLS handshakes (item 1)', () => {
  it('closes a connection that sends nothing, and one that stops mid-handshake, within handshakeTimeoutMs (Node alone: 120 s)', async () => {
    const { port } = await start({ handshakeTimeoutMs: 300 });
    const silent = await silentClient(port, 3000);
    // A TLS record header and no more: TLS has the socket now, and Node's handshake timeout applies.
    const stalled = await silentClient(port, 3000, Buffer.from([0x16, 0x03, 0x01]));
    const [silentAfter, stalledAfter] = await Promise.all([silent.closed, stalled.closed]);
    expect(silentAfter).toBeGreaterThanOrEqual(250);
    expect(silentAfter).toBeLessThan(1000);
    expect(stalledAfter).toBeGreaterThanOrEqual(250);
    expect(stalledAfter).toBeLessThan(1000);
  });

  it('closes connections past maxConnections at once, says so once, and /healthz answers again once the silent ones are gone', async () => {
    const logger = new RecordingLogger();
    const { url, port } = await start({ handshakeTimeoutMs: 500, maxConnections: 3, logger });
    const held = await Promise.all([1, 2, 3].map(() => silentClient(port, 3000)));
    const extra = await Promise.all([1, 2].map(() => silentClient(port, 3000)));
    for (const e of extra) expect(await e.closed).toBeLessThan(200);
    expect(logger.find('maximum of connections')).toHaveLength(1);
    for (const h of held) expect(await h.closed).toBeLessThan(1500);
    expect(await healthz(url)).toBe(200);
  });

  it('does not hold up close: a half-open handshake is ended with the server, not at its timeout', async () => {
    const { port } = await start({ handshakeTimeoutMs: 5000 });
    const silent = await silentClient(port, 3000);
    const stalled = await silentClient(port, 3000, Buffer.from([0x16, 0x03, 0x01]));
    await new Promise((r) => setTimeout(r, 50));
    const closing = Date.now();
    await source!.close();
    expect(Date.now() - closing).toBeLessThan(1000);
    expect(await silent.closed).not.toBe('open');
    expect(await stalled.closed).not.toBe('open');
  });
});

describe('TLS 1.2 cipher suites (item 2)', () => {
  /** The suite the server agrees to when the client offers only `ciphers` over TLS 1.2, or the handshake's error. */
  const negotiate = (port: number, ciphers?: string, maxVersion: 'TLSv1.2' | 'TLSv1.3' = 'TLSv1.2'): Promise<string> =>
    new Promise((resolve) => {
      const socket = tlsConnect(
        { host: '127.0.0.1', port, ca: certs.ca.cert, ...(ciphers === undefined ? {} : { ciphers }), maxVersion },
        () => {
          resolve(`${socket.getProtocol()} ${socket.getCipher().standardName}`);
          socket.end();
        },
      );
      socket.on('error', (error: NodeJS.ErrnoException) => resolve(`refused: ${error.code ?? error.message}`));
    });

  it('refuses CBC with SHA-1 and CCM8, takes ECDHE with AES-GCM or ChaCha20-Poly1305, and TLS 1.3 as before; after a certificate reload too', async () => {
    const clock = new ManualClock(Date.now());
    const certFile = join(certs.dir, 'cipher-live.pem');
    const keyFile = join(certs.dir, 'cipher-live-key.pem');
    await copyFile(certs.server.certFile, certFile);
    await copyFile(certs.server.keyFile, keyFile);
    const { port } = await start({ tls: { certFile, keyFile, reloadIntervalMs: 1000 }, clock });
    const check = async () => {
      // The test certificate's key is P-256: the ECDSA suites are the ones it could serve.
      expect(await negotiate(port, 'ECDHE-ECDSA-AES128-SHA')).toBe('refused: ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE');
      expect(await negotiate(port, 'ECDHE-ECDSA-AES256-SHA')).toBe('refused: ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE');
      expect(await negotiate(port, 'ECDHE-ECDSA-AES128-CCM8')).toBe('refused: ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE');
      expect(await negotiate(port, 'ECDHE-ECDSA-AES128-GCM-SHA256')).toBe('TLSv1.2 TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256');
      expect(await negotiate(port, 'ECDHE-ECDSA-CHACHA20-POLY1305')).toBe('TLSv1.2 TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256');
      expect(await negotiate(port, undefined, 'TLSv1.3')).toMatch(/^TLSv1\.3 TLS_/);
    };
    await check();
    const rotated = await certs.issue('cipher-rotated', { server: true });
    await copyFile(rotated.certFile, certFile);
    await copyFile(rotated.keyFile, keyFile);
    await clock.advance(1000);
    await new Promise((r) => setTimeout(r, 100));
    expect(await negotiate(port, undefined, 'TLSv1.3')).toMatch(/^TLSv1\.3/);
    await check();
  });
});

describe('a plain-HTTP request on the TLS port (item 3)', () => {
  const plain = (port: number, method: string, body?: string): Promise<{ status: number; body: string }> =>
    new Promise((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, path: '/healthz', method, agent: false }, (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (d: string) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      });
      req.on('error', reject);
      req.end(body);
    });

  it("gets Go's 400 with its sentence, a body or not, and the TLS port serves HTTPS as before", async () => {
    const { url, port } = await start({ handshakeTimeoutMs: 1000 });
    expect(await plain(port, 'GET')).toEqual({ status: 400, body: 'Client sent an HTTP request to an HTTPS server.\n' });
    expect((await plain(port, 'POST', 'x'.repeat(256 * 1024))).status).toBe(400);
    expect((await plain(port, 'DELETE')).status).toBe(400);
    expect(await healthz(url)).toBe(200);
  });
});
