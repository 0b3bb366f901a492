import { createServer as createHttpServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { TestCertificates } from '@kubelet-ts/testkit';
import { socketNetworkCheck } from '../src/network-check.js';

describe('socketNetworkCheck', () => {
  let server: Server | undefined;

  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => (server === undefined ? resolve(undefined) : server.close(resolve)));
  });

  it('judges http by status, tcp by connecting, over real sockets on 127.0.0.1', async () => {
    const statuses: Record<string, number> = { '/ok': 200, '/moved': 302, '/broken': 500 };
    server = createHttpServer((req, res) => {
      if (req.url === '/silent') return; // never answers
      res.writeHead(statuses[req.url ?? ''] ?? 404, { Location: '/ok' }).end();
    });
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    const open = (server.address() as AddressInfo).port;
    const closed = await freePort();

    const net = socketNetworkCheck;
    await expect(net.http('127.0.0.1', open, '/ok', 1_000)).resolves.toEqual({ ok: true, detail: 'status 200' });
    await expect(net.http('127.0.0.1', open, '/moved', 1_000)).resolves.toEqual({ ok: true, detail: 'status 302' });
    await expect(net.http('127.0.0.1', open, '/broken', 1_000)).resolves.toEqual({ ok: false, detail: 'status 500' });
    await expect(net.http('127.0.0.1', open, '/silent', 150)).resolves.toEqual({ ok: false, detail: 'no answer within 150 ms' });
    await expect(net.http('127.0.0.1', closed, '/ok', 1_000)).resolves.toEqual({ ok: false, detail: 'connection refused' });
    await expect(net.tcp('127.0.0.1', open, 1_000)).resolves.toEqual({ ok: true, detail: 'connected' });
    await expect(net.tcp('127.0.0.1', closed, 1_000)).resolves.toEqual({ ok: false, detail: 'connection refused' });
  });

  describe('https and headers', () => {
    let certs: TestCertificates;
    beforeAll(async () => {
      certs = await TestCertificates.create();
    });
    afterAll(async () => {
      await certs.destroy();
    });

    it('HTTPS does not verify the certificate (signed by a CA nobody trusts, as a self-signed one), as the kubelet does not', async () => {
      const seen: IncomingHttpHeaders[] = [];
      server = createHttpsServer({ cert: certs.server.cert, key: certs.server.key }, (req, res) => {
        seen.push(req.headers);
        res.writeHead(req.url === '/ok' ? 200 : 503).end();
      });
      await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
      const { port } = server.address() as AddressInfo;
      const net = socketNetworkCheck;
      await expect(net.http('127.0.0.1', port, '/ok', 1_000, { scheme: 'HTTPS' })).resolves.toEqual({ ok: true, detail: 'status 200' });
      await expect(net.http('127.0.0.1', port, '/down', 1_000, { scheme: 'HTTPS' })).resolves.toEqual({ ok: false, detail: 'status 503' });
      // Plain HTTP to a TLS port is no answer the prober can read: a failure, not a crash.
      await expect(net.http('127.0.0.1', port, '/ok', 1_000)).resolves.toMatchObject({ ok: false });
      expect(seen).toHaveLength(2);
    });

    it('sends httpHeaders as given, a repeated name as a list, and lets one replace the User-Agent', async () => {
      const seen: IncomingHttpHeaders[] = [];
      server = createHttpServer((req, res) => {
        seen.push(req.headers);
        res.writeHead(200).end();
      });
      await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
      const { port } = server.address() as AddressInfo;
      const headers = [
        { name: 'X-Probe', value: 'a' },
        { name: 'x-probe', value: 'b' },
        { name: 'Authorization', value: 'Bearer t' },
      ];
      await expect(socketNetworkCheck.http('127.0.0.1', port, '/', 1_000, { headers })).resolves.toMatchObject({ ok: true });
      await socketNetworkCheck.http('127.0.0.1', port, '/', 1_000, { headers: [{ name: 'User-Agent', value: 'mine/1' }] });
      await socketNetworkCheck.http('127.0.0.1', port, '/', 1_000);
      expect(seen[0]).toMatchObject({ 'x-probe': 'a, b', authorization: 'Bearer t', 'user-agent': 'kubelet-ts-probe' });
      expect(seen[1]?.['user-agent']).toBe('mine/1');
      expect(seen[2]?.['user-agent']).toBe('kubelet-ts-probe');
    });
  });
});

/** A port that nothing listens on: bound once by the system, then released. */
async function freePort(): Promise<number> {
  const s = createNetServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as AddressInfo;
  await new Promise((resolve) => s.close(resolve));
  return port;
}
