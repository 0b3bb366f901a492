import { afterEach, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:net';
import { SpdyDialError, dialSpdy } from '../src/index.js';

/**
 * The client's upgrade, against raw TCP servers that answer as a streaming server may: it fails with
 * the server's status and body, or says it cannot reach it, or gives up after its time. (The SPDY
 * that follows is tested against Go's spdystream: containerd's streaming server in @kubelet-ts/runtime-cri,
 * and kube-apiserver in the integration tests.)
 */
describe('dialSpdy', () => {
  let server: Server | undefined;
  afterEach(async () => {
    await new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())));
    server = undefined;
  });

  const serve = (answer: (request: string, write: (text: string) => void, end: () => void) => void) =>
    new Promise<number>((resolve) => {
      server = createServer((socket) => {
        let request = '';
        socket.on('data', (chunk) => {
          request += chunk.toString('latin1');
          if (request.includes('\r\n\r\n'))
            answer(
              request,
              (t) => socket.write(t),
              () => socket.end(),
            );
        });
        socket.on('error', () => undefined);
      });
      server.listen(0, '127.0.0.1', () => resolve((server!.address() as { port: number }).port));
    });

  it('asks to upgrade to SPDY/3.1 with each protocol offered, and fails with the status and body of any other answer', async () => {
    let asked = '';
    const port = await serve((request, write, end) => {
      asked = request;
      const body = 'token not found';
      write(`HTTP/1.1 404 Not Found\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      end();
    });
    const failure = await dialSpdy(`http://127.0.0.1:${port}/exec/abc?x=1`, ['v4.channel.k8s.io', 'v3.channel.k8s.io'], 2_000).catch(
      (e: unknown) => e,
    );
    expect(failure).toBeInstanceOf(SpdyDialError);
    expect((failure as SpdyDialError).status).toBe(404);
    expect((failure as Error).message).toBe(`http://127.0.0.1:${port}/exec/abc?x=1 answered HTTP/1.1 404 Not Found: token not found`);
    expect(asked).toMatch(/^POST \/exec\/abc\?x=1 HTTP\/1\.1\r\n/);
    expect(asked).toContain('Upgrade: SPDY/3.1\r\n');
    expect(asked).toContain('X-Stream-Protocol-Version: v4.channel.k8s.io\r\nX-Stream-Protocol-Version: v3.channel.k8s.io\r\n');
  });

  it('says when nothing listens, when the server says nothing in time, and that it dials http:// only', async () => {
    const port = await serve(() => undefined);
    await expect(dialSpdy(`http://127.0.0.1:${port}/exec/x`, ['v4.channel.k8s.io'], 200)).rejects.toThrow(
      `http://127.0.0.1:${port}/exec/x did not answer the upgrade within 200 ms`,
    );
    await new Promise<void>((resolve) => server!.close(() => resolve()));
    server = undefined;
    await expect(dialSpdy(`http://127.0.0.1:${port}/exec/x`, ['v4.channel.k8s.io'], 1_000)).rejects.toThrow(
      /cannot be reached \(connect ECONNREFUSED/,
    );
    await expect(dialSpdy('https://127.0.0.1:1/exec/x', ['v4.channel.k8s.io'], 1_000)).rejects.toThrow(/only http:\/\/ is dialled/);
  });

  it('takes a 101 naming the protocol chosen, and bytes that came with it as the connection’s first', async () => {
    const port = await serve((_request, write) => {
      write(
        'HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n',
      );
    });
    const dialled = await dialSpdy(`http://127.0.0.1:${port}/exec/x`, ['v4.channel.k8s.io'], 2_000);
    expect(dialled.protocol).toBe('v4.channel.k8s.io');
    const closed = new Promise((resolve) => dialled.connection.once('close', resolve));
    dialled.socket.destroy();
    await closed;
  });
});
