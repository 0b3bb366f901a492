import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from '@jest/globals';
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
});

/** A port that nothing listens on: bound once by the system, then released. */
async function freePort(): Promise<number> {
  const s = createNetServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as AddressInfo;
  await new Promise((resolve) => s.close(resolve));
  return port;
}
