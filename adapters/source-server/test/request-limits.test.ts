import { afterEach, describe, expect, it } from '@jest/globals';
import { connect, type Socket } from 'node:net';
import { RecordingSink } from '@kubelet-ts/conformance';
import { ServerManifestSource, type ServerManifestSourceOptions } from '../src/index.js';

/** A raw connection to the server: what it answered, and when the server closed it. */
interface RawClient {
  readonly socket: Socket;
  readonly closed: Promise<{ answer: string; afterMs: number }>;
}

function rawClient(port: number): Promise<RawClient> {
  return new Promise((resolve) => {
    const opened = Date.now();
    let answer = '';
    const socket = connect(port, '127.0.0.1');
    const closed = new Promise<{ answer: string; afterMs: number }>((done) => {
      socket.on('data', (d) => (answer += d.toString()));
      socket.on('close', () => done({ answer, afterMs: Date.now() - opened }));
      socket.on('error', () => undefined);
    });
    socket.on('connect', () => resolve({ socket, closed }));
  });
}

/** Writes `parts` one every `everyMs` until the socket closes or they run out. */
async function dribble(socket: Socket, parts: readonly string[], everyMs: number): Promise<void> {
  for (const part of parts) {
    if (socket.destroyed || !socket.writable) return;
    socket.write(part);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

describe('the agent server against oversized and slow requests', () => {
  let source: ServerManifestSource | undefined;

  afterEach(async () => {
    await source?.close();
    source = undefined;
  });

  const start = async (options: ServerManifestSourceOptions) => {
    const sink = new RecordingSink();
    source = new ServerManifestSource({ port: 0, ...options });
    await source.start(sink);
    return { sink, port: Number(new URL(source.url).port) };
  };

  it('answers 413 to a chunked body over the limit (no Content-Length to go by) and drops the connection', async () => {
    const { sink, port } = await start({ maxBodyBytes: 1024 });
    const client = await rawClient(port);
    client.socket.write(
      `POST /container HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`,
    );
    // 600-byte chunks, forever if nobody stops it: the server must stop reading after the limit.
    const chunk = `258\r\n${' '.repeat(600)}\r\n`;
    void dribble(
      client.socket,
      Array.from({ length: 200 }, () => chunk),
      5,
    );
    const { answer, afterMs } = await client.closed;
    expect(answer).toMatch(/^HTTP\/1\.1 413/);
    expect(afterMs).toBeLessThan(2000);
    expect(sink.updates).toHaveLength(1);
  });

  it('answers 413 at once to a declared Content-Length over the limit, without waiting for the body', async () => {
    const { sink, port } = await start({ maxBodyBytes: 1024 });
    const client = await rawClient(port);
    client.socket.write(
      `POST /containers HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n`,
    );
    const { answer, afterMs } = await client.closed;
    expect(answer).toMatch(/^HTTP\/1\.1 413/);
    expect(afterMs).toBeLessThan(2000);
    expect(sink.updates).toHaveLength(1);
  });

  it('drops a client that dribbles its headers (slowloris) once the request timeout is up', async () => {
    const { port } = await start({ requestTimeoutMs: 300 });
    const client = await rawClient(port);
    // A header line every 50 ms keeps the socket busy but never ends the head of the request.
    void dribble(client.socket, ['GET /pods HTTP/1.1\r\n', ...Array.from({ length: 200 }, (_, i) => `X-Slow-${i}: y\r\n`)], 50);
    const { answer, afterMs } = await client.closed;
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
    expect(afterMs).toBeLessThan(3000);
  });

  it('drops a client that opens a connection and sends nothing', async () => {
    const { port } = await start({ requestTimeoutMs: 300 });
    const client = await rawClient(port);
    const { afterMs } = await client.closed;
    expect(afterMs).toBeLessThan(3000);
  });
});
