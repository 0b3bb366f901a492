import { afterEach, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { type AddressInfo, type Socket, connect, createServer } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocket } from 'ws';
import type { ServerManifestSource, AgentApiOptions } from '../src/index.js';
import type { SpdyStream } from '../src/spdy-session.js';
import { serveSpdyPortForward } from '../src/spdy-streams.js';
import type { FakeView } from './fake-view.js';
import { execPath, startStreamServer } from './stream-fixture.js';
import { type Refusal, type SpdyClient, readAll, spdyOver, spdyUpgrade, tunnel } from './spdy-client.js';

const TOKEN = 'spdy-streams-token';
const auth = { authorization: `Bearer ${TOKEN}` };
const v4 = { ...auth, 'X-Stream-Protocol-Version': 'v4.channel.k8s.io' };
const portForwardProtocol = { ...auth, 'X-Stream-Protocol-Version': 'portforward.k8s.io' };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A local TCP server echoing what it is sent (each connection half-closed in turn). */
async function echoServer(): Promise<{ port: number; connections: Socket[]; close(): Promise<void> }> {
  const connections: Socket[] = [];
  const server = createServer({ allowHalfOpen: true }, (c) => {
    connections.push(c);
    c.pipe(c);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    connections,
    close: () =>
      new Promise((resolve) => {
        for (const c of connections) c.destroy();
        server.close(() => resolve());
      }),
  };
}

/** The port-forward connections of `view` made to 127.0.0.1 for real, after `delayMs`; `made` lists them. */
function dialForReal(view: FakeView, delayMs = 0): Duplex[] {
  const made: Duplex[] = [];
  view.portForward = async (_target, port) => {
    await sleep(delayMs);
    const c = connect(port, '127.0.0.1');
    made.push(c);
    await new Promise<void>((resolve, reject) => {
      c.once('connect', resolve);
      c.once('error', (error) => reject(new Error(`connect ${(error as NodeJS.ErrnoException).code ?? error.message}`)));
    });
    return c;
  };
  return made;
}

/** The streams of one forwarded connection, opened as client-go does: error (closed for writing), then data. */
async function forwardPair(client: SpdyClient, port: number, requestId: number): Promise<{ error: SpdyStream; data: SpdyStream }> {
  const headers = { port: String(port), requestid: String(requestId) };
  const error = await client.open({ ...headers, streamtype: 'error' });
  error.end();
  const data = await client.open({ ...headers, streamtype: 'data' });
  return { error, data };
}

/** Sends `bytes` on a stream, half-closes it, and gives back all it got until its end. */
async function roundTrip(stream: Duplex, bytes: Buffer): Promise<Buffer> {
  const got = new Promise<Buffer>((resolve) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.once('end', () => resolve(Buffer.concat(chunks)));
  });
  stream.end(bytes);
  return got;
}

const refused = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: Refusal) => e,
  );

describe('/exec, /attach, /portForward over SPDY/3.1', () => {
  let source: ServerManifestSource | undefined;
  const clean: Array<() => unknown> = [];
  afterEach(async () => {
    for (const f of clean.splice(0).reverse()) await f();
    await source?.close();
    source = undefined;
  });
  const start = async (options: AgentApiOptions = {}) => {
    const started = await startStreamServer(TOKEN, options);
    source = started.source;
    return { view: started.view, url: started.url };
  };
  const exec = execPath;
  const upgrade = async (url: string, path: string, headers: Record<string, string>, options = {}) => {
    const client = await spdyUpgrade(url, path, headers, options);
    clean.push(() => client.socket.destroy());
    return client;
  };

  it('exec on v4: stdout and stderr on their streams, then the exit status as a metav1.Status on the error stream, then GOAWAY', async () => {
    const { url } = await start();
    const client = await upgrade(url, exec(['sh', '-c', 'echo out; echo err >&2; exit 3']), {
      ...auth,
      'X-Stream-Protocol-Version': 'v5.channel.k8s.io, v4.channel.k8s.io',
    });
    expect(client.protocol).toBe('v4.channel.k8s.io');
    let goaway = false;
    client.connection.on('frame', (frame: { type: string }) => {
      if (frame.type === 'GOAWAY') goaway = true;
    });
    const error = await client.open({ streamtype: 'error' });
    const stdout = await client.open({ streamtype: 'stdout' });
    const stderr = await client.open({ streamtype: 'stderr' });
    const [e, o, r] = await Promise.all([readAll(error), readAll(stdout), readAll(stderr)]);
    expect([o, r]).toEqual(['out\n', 'err\n']);
    expect(JSON.parse(e)).toEqual({
      metadata: {},
      status: 'Failure',
      message: 'command "sh -c echo out; echo err >&2; exit 3" terminated with non-zero exit code 3',
      reason: 'NonZeroExitCode',
      details: { causes: [{ reason: 'ExitCode', message: '3' }] },
    });
    // GOAWAY came after the streams' last bytes (a Go client stops reading there).
    expect(goaway).toBe(true);
    const ok = await upgrade(url, exec(['true'], 'stdout=1'), v4);
    const okError = await ok.open({ streamtype: 'error' });
    await ok.open({ streamtype: 'stdout' });
    expect(JSON.parse(await readAll(okError))).toEqual({ metadata: {}, status: 'Success' });
  });

  it('exec on v3 and v2: the error stream says a failure in words, and nothing on success', async () => {
    const { url } = await start();
    const failed = await upgrade(url, exec(['false'], 'stdout=1'), { ...auth, 'X-Stream-Protocol-Version': 'v3.channel.k8s.io' });
    expect(failed.protocol).toBe('v3.channel.k8s.io');
    const error = await failed.open({ streamtype: 'error' });
    await failed.open({ streamtype: 'stdout' });
    expect(await readAll(error)).toBe('command "false" terminated with non-zero exit code 1');
    const ok = await upgrade(url, exec(['true'], 'stdout=1'), { ...auth, 'X-Stream-Protocol-Version': 'v2.channel.k8s.io' });
    const okError = await ok.open({ streamtype: 'error' });
    await ok.open({ streamtype: 'stdout' });
    expect(await readAll(okError)).toBe('');
  });

  it('stdin to the process, its end from the stream FIN; 1 MiB each way with a client that never sends WINDOW_UPDATE', async () => {
    const { url } = await start();
    const client = await upgrade(url, exec(['cat'], 'stdin=1&stdout=1'), v4, { dropWindowUpdates: true });
    const error = await client.open({ streamtype: 'error' });
    const stdin = await client.open({ streamtype: 'stdin' });
    const stdout = await client.open({ streamtype: 'stdout' });
    const sent = randomBytes(1024 * 1024);
    const got = new Promise<Buffer>((resolve) => {
      const chunks: Buffer[] = [];
      stdout.on('data', (c: Buffer) => chunks.push(c));
      stdout.once('end', () => resolve(Buffer.concat(chunks)));
    });
    stdin.end(sent);
    expect((await got).equals(sent)).toBe(true);
    expect(client.windowUpdatesDropped()).toBeGreaterThan(0);
    expect(JSON.parse(await readAll(error))).toMatchObject({ status: 'Success' });
  });

  it('a terminal: its size from the resize stream (JSON, one a line) reaches the process; no stderr stream', async () => {
    const { url } = await start();
    const client = await upgrade(url, exec(['sh', '-c', 'read x; stty size'], 'stdin=1&stdout=1&stderr=1&tty=1'), v4);
    const error = await client.open({ streamtype: 'error' });
    const stdin = await client.open({ streamtype: 'stdin' });
    const stdout = await client.open({ streamtype: 'stdout' });
    const resize = await client.open({ streamtype: 'resize' });
    const out = readAll(stdout);
    resize.write(`${JSON.stringify({ Width: 80, Height: 24 })}\nnot json\n${JSON.stringify({ Width: 100 })}`);
    resize.write(`, "Height": 40}\n`.replace(', ', '')); // ignored: not an object
    resize.write(`${JSON.stringify({ Width: 100, Height: 40 })}\n`);
    await sleep(50);
    stdin.write('\n');
    expect(await out).toBe('40 100\n');
    expect(JSON.parse(await readAll(error))).toMatchObject({ status: 'Success' });
  });

  it('refuses a stream it does not expect (a second stdout, an unknown type) with RST_STREAM', async () => {
    const { url } = await start();
    const client = await upgrade(url, exec(['cat'], 'stdin=1&stdout=1'), v4);
    await client.open({ streamtype: 'stdout' });
    await expect(client.open({ streamtype: 'stdout' })).rejects.toThrow(/closed before its reply/);
    await expect(client.open({ streamtype: 'stderr' })).rejects.toThrow(/closed before its reply/);
    await expect(client.open({ streamtype: 'bogus' })).rejects.toThrow(/closed before its reply/);
  });

  it('attach: what the main process prints, until it ends', async () => {
    const { url, view } = await start();
    const client = await upgrade(url, '/attach/default/web/nginx?stdout=1&stderr=1', v4);
    const error = await client.open({ streamtype: 'error' });
    const stdout = await client.open({ streamtype: 'stdout' });
    const stderr = await client.open({ streamtype: 'stderr' });
    const { nginx } = await view.ids();
    const [out, err] = [readAll(stdout), readAll(stderr)];
    view.memory.print(nginx, 'stderr', 'warn\n');
    view.memory.print(nginx, 'stdout', 'info\n');
    await sleep(50);
    view.memory.exit(nginx, 0);
    expect([await out, await err]).toEqual(['info\n', 'warn\n']);
    expect(JSON.parse(await readAll(error))).toMatchObject({ status: 'Success' });
  });

  it('refuses before the upgrade, as plain HTTP: unknown pod or container, no protocol header, a protocol it does not speak, no token, a bad query', async () => {
    const { url } = await start();
    const missingPod = await refused(upgrade(url, '/exec/default/nope/nginx?command=true&stdout=1', v4));
    expect(missingPod).toMatchObject({ status: 404 });
    expect(JSON.parse(missingPod!.body)).toEqual({ error: 'pod "default/nope" does not exist on this node' });
    expect(await refused(upgrade(url, '/attach/default/web/nope?stdout=1', v4))).toMatchObject({ status: 404 });
    expect(await refused(upgrade(url, '/portForward/default/other', portForwardProtocol))).toMatchObject({ status: 404 });
    const noHeader = await refused(upgrade(url, exec(['true']), auth));
    expect(noHeader?.status).toBe(400);
    expect(JSON.parse(noHeader!.body).error).toMatch(/X-Stream-Protocol-Version/);
    const wrong = await refused(upgrade(url, exec(['true']), { ...auth, 'X-Stream-Protocol-Version': 'v5.channel.k8s.io' }));
    expect(wrong?.status).toBe(403);
    expect(wrong?.headers).toMatch(
      /x-accepted-stream-protocol-versions: v4.channel.k8s.io, v3.channel.k8s.io, v2.channel.k8s.io, channel.k8s.io/i,
    );
    expect(
      await refused(upgrade(url, '/portForward/default/web', { ...auth, 'X-Stream-Protocol-Version': 'v4.channel.k8s.io' })),
    ).toMatchObject({ status: 403 });
    expect(await refused(upgrade(url, exec(['true']), { 'X-Stream-Protocol-Version': 'v4.channel.k8s.io' }))).toMatchObject({
      status: 401,
    });
    expect(await refused(upgrade(url, '/exec/default/web/nginx?stdout=1', v4))).toMatchObject({ status: 400 });
    expect(await refused(upgrade(url, exec(['true']), v4, { method: 'PUT' }))).toMatchObject({ status: 405 });
  });

  it('closes the exec session when the connection drops, and when the client never opens its streams', async () => {
    const { url, view } = await start();
    const client = await upgrade(url, exec(['cat'], 'stdin=1&stdout=1'), v4);
    await client.open({ streamtype: 'error' });
    await client.open({ streamtype: 'stdin' });
    await client.open({ streamtype: 'stdout' });
    expect(view.memory.streams.open).toBe(1);
    client.socket.destroy();
    const deadline = Date.now() + 5_000;
    while (view.memory.streams.open > 0 && Date.now() < deadline) await sleep(10);
    expect(view.memory.streams.open).toBe(0);
    // Opened before the 101, never joined: closed when the client leaves without a stream.
    const idle = await upgrade(url, exec(['cat'], 'stdin=1&stdout=1'), v4);
    expect(view.memory.streams.open).toBe(1);
    idle.socket.destroy();
    while (view.memory.streams.open > 0 && Date.now() < deadline) await sleep(10);
    expect(view.memory.streams.open).toBe(0);
  });

  it('port-forward: two connections at once through a real TCP server, 1 MiB each way, the ports from the streams not the query', async () => {
    const { url, view } = await start();
    const echo = await echoServer();
    clean.push(() => echo.close());
    dialForReal(view);
    const client = await upgrade(url, '/portForward/default/web', portForwardProtocol, { dropWindowUpdates: true });
    expect(client.protocol).toBe('portforward.k8s.io');
    const [a, b] = await Promise.all([forwardPair(client, echo.port, 0), forwardPair(client, echo.port, 1)]);
    const [sentA, sentB] = [randomBytes(1024 * 1024), randomBytes(1024 * 1024)];
    const [gotA, gotB] = await Promise.all([roundTrip(a.data, sentA), roundTrip(b.data, sentB)]);
    expect(gotA.equals(sentA)).toBe(true);
    expect(gotB.equals(sentB)).toBe(true);
    expect(echo.connections).toHaveLength(2);
    expect(client.windowUpdatesDropped()).toBeGreaterThan(0);
    expect(await readAll(a.error)).toBe('');
  });

  it('port-forward: a refused port says why on its error stream, and its data stream ends', async () => {
    const { url, view } = await start();
    dialForReal(view);
    const client = await upgrade(url, '/portForward/default/web', portForwardProtocol, { method: 'GET' });
    const { error, data } = await forwardPair(client, 1, 7);
    const [message, rest] = await Promise.all([readAll(error), readAll(data)]);
    expect(message).toBe('error forwarding port 1 to pod default/web: connect ECONNREFUSED');
    expect(rest).toBe('');
    // The connection is still there for the next one.
    const again = await forwardPair(client, 2, 8);
    expect(await readAll(again.error)).toMatch(/^error forwarding port 2 /);
  });

  it('port-forward: a stream without a usable port or type is reset; streams without a requestID pair by their ids', async () => {
    const { url, view } = await start();
    const echo = await echoServer();
    clean.push(() => echo.close());
    dialForReal(view);
    const client = await upgrade(url, '/portForward/default/web', portForwardProtocol);
    await expect(client.open({ streamtype: 'data' })).rejects.toThrow(/closed before its reply/);
    await expect(client.open({ streamtype: 'data', port: '70000' })).rejects.toThrow(/closed before its reply/);
    await expect(client.open({ streamtype: 'other', port: '80' })).rejects.toThrow(/closed before its reply/);
    // Old clients: the error stream's id names the request, the data stream's is two more.
    const error = await client.open({ streamtype: 'error', port: String(echo.port) });
    const data = await client.open({ streamtype: 'data', port: String(echo.port) });
    expect((await roundTrip(data, Buffer.from('old'))).toString()).toBe('old');
    error.end();
  });

  it('port-forward: at most maxForwardedConnections open at once, SPDY and WebSocket sessions together', async () => {
    const { url, view } = await start({ maxForwardedConnections: 2 });
    const echo = await echoServer();
    clean.push(() => echo.close());
    dialForReal(view);
    // One over WebSocket, one over SPDY: the two the agent allows.
    const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/portForward/default/web?ports=${echo.port}`, ['v4.channel.k8s.io'], {
      headers: auth,
    });
    clean.push(() => ws.terminate());
    const wsData = new Promise<void>((resolve) =>
      ws.on('message', (m: Buffer) => {
        if (m[0] === 0 && m[1] === 0x78) resolve();
      }),
    );
    await new Promise((resolve) => ws.once('open', resolve));
    ws.send(Buffer.from([0, 0x78]));
    await wsData;
    const client = await upgrade(url, '/portForward/default/web', portForwardProtocol);
    const one = await forwardPair(client, echo.port, 1);
    one.data.write('x');
    await new Promise((resolve) => one.data.once('data', resolve));
    const third = await forwardPair(client, echo.port, 3);
    expect(await readAll(third.error)).toBe(
      `error forwarding port ${echo.port} to pod default/web: the agent forwards at most 2 connections at once; try again when one ends`,
    );
    // One ends: room again.
    await roundTrip(one.data, Buffer.alloc(0));
    const deadline = Date.now() + 5_000;
    for (let n = 4; ; n++) {
      const next = await forwardPair(client, echo.port, n);
      next.data.write('z');
      const answer = await Promise.race([
        new Promise<string>((resolve) => next.data.once('data', () => resolve('data'))),
        readAll(next.error),
      ]);
      if (answer === 'data') break;
      if (Date.now() > deadline) throw new Error(`still refused after 5 s: ${answer}`);
      await sleep(50);
    }
  });

  it('port-forward: dials a few at a time, none once the client has gone; what was made is closed', async () => {
    const { url, view } = await start();
    const echo = await echoServer();
    clean.push(() => echo.close());
    const made = dialForReal(view, 200);
    const client = await upgrade(url, '/portForward/default/web', portForwardProtocol);
    await Promise.all(Array.from({ length: 40 }, (_, i) => forwardPair(client, echo.port, i)));
    client.socket.destroy();
    // Forty at 200 ms each, four at a time, would take 2 s: the client left at once.
    await sleep(1_000);
    expect(made.length).toBeGreaterThan(0);
    expect(made.length).toBeLessThanOrEqual(4);
    expect(made.every((c) => c.destroyed)).toBe(true);
  });

  it('port-forward: the forwarded connections are closed when the client leaves', async () => {
    const { url, view } = await start();
    const echo = await echoServer();
    clean.push(() => echo.close());
    const made = dialForReal(view);
    const client = await upgrade(url, '/portForward/default/web', portForwardProtocol);
    const { data } = await forwardPair(client, echo.port, 0);
    data.write('hello');
    await new Promise((resolve) => data.once('data', resolve));
    client.socket.destroy();
    const deadline = Date.now() + 5_000;
    while (!made.every((c) => c.destroyed) && Date.now() < deadline) await sleep(10);
    expect(made.map((c) => c.destroyed)).toEqual([true]);
  });

  it('port-forward: a client that does not read slows the forwarded connection, the agent holds no more', async () => {
    const { url, view } = await start();
    let flooded = 0;
    const flood = createServer((c) => {
      const chunk = Buffer.alloc(64 * 1024, 0x61);
      const more = () => {
        while (!c.destroyed && c.write(chunk)) flooded += chunk.length;
        flooded += chunk.length;
      };
      c.on('drain', more);
      c.on('error', () => undefined);
      more();
    });
    await new Promise<void>((resolve) => flood.listen(0, '127.0.0.1', resolve));
    clean.push(() => new Promise((resolve) => flood.close(resolve)));
    dialForReal(view);
    const client = await upgrade(url, '/portForward/default/web', portForwardProtocol);
    const { data } = await forwardPair(client, (flood.address() as AddressInfo).port, 0);
    await new Promise((resolve) => data.once('data', resolve));
    // The client stops reading its socket (spdy-transport pipes it: a pipe resumes a paused source).
    client.socket.unpipe();
    client.socket.pause();
    await sleep(1_000);
    const after = flooded;
    await sleep(500);
    // What the kernel's socket buffers hold and a few chunks of the agent's, then nothing more.
    expect(after).toBeLessThan(32 * 1024 * 1024);
    expect(flooded).toBe(after);
  });

  it('port-forward: a destination that does not read stops the agent reading the client, the agent holds no more', async () => {
    const { url, view } = await start();
    const held: Socket[] = [];
    const stuck = createServer((c) => held.push(c.pause()));
    await new Promise<void>((resolve) => stuck.listen(0, '127.0.0.1', resolve));
    clean.push(
      () =>
        new Promise((resolve) => {
          for (const c of held) c.destroy();
          stuck.close(resolve);
        }),
    );
    const made = dialForReal(view);
    const client = await upgrade(url, '/portForward/default/web', portForwardProtocol);
    clean.push(() => client.socket.destroy());
    const { data } = await forwardPair(client, (stuck.address() as AddressInfo).port, 0);
    let writing = true;
    const chunk = Buffer.alloc(64 * 1024, 0x62);
    const more = () => {
      while (writing && data.write(chunk)) {
        // As fast as the connection takes it.
      }
      if (writing) data.once('drain', more);
    };
    more();
    await sleep(1_000);
    const after = (client.socket as Socket).bytesWritten;
    await sleep(500);
    writing = false;
    expect(made).toHaveLength(1);
    // The kernel's buffers, and what the agent read before it held the socket: then nothing more.
    expect(after).toBeLessThan(32 * 1024 * 1024);
    expect((client.socket as Socket).bytesWritten).toBeLessThan(after + 256 * 1024);
  });

  it('port-forward tunnelled in a WebSocket (SPDY/3.1+portforward.k8s.io): the same streams over its binary messages', async () => {
    const { url, view } = await start();
    const echo = await echoServer();
    clean.push(() => echo.close());
    dialForReal(view);
    // kubectl 1.32 names no port in the query: they come in the streams.
    const { bytes, protocol } = await tunnel(url, '/portForward/default/web', 'SPDY/3.1+portforward.k8s.io', auth);
    clean.push(() => bytes.destroy());
    expect(protocol).toBe('SPDY/3.1+portforward.k8s.io');
    const client = spdyOver(bytes, undefined);
    const [a, b] = await Promise.all([forwardPair(client, echo.port, 0), forwardPair(client, echo.port, 1)]);
    const [sentA, sentB] = [randomBytes(300 * 1024), randomBytes(300 * 1024)];
    const [gotA, gotB] = await Promise.all([roundTrip(a.data, sentA), roundTrip(b.data, sentB)]);
    expect(gotA.equals(sentA)).toBe(true);
    expect(gotB.equals(sentB)).toBe(true);
    // The WebSocket port-forward is as it was when the client offers one of its subprotocols too.
    await expect(tunnel(url, '/portForward/default/other', 'SPDY/3.1+portforward.k8s.io', auth)).rejects.toThrow(/404/);
  });

  it('says how to ask when a streaming route is asked without an upgrade', async () => {
    const { url } = await start();
    const plain = await fetch(`${url}${exec(['true'])}`, { method: 'POST', headers: auth });
    expect(plain.status).toBe(400);
    expect(((await plain.json()) as { error: string }).error).toMatch(/SPDY\/3\.1 with the header X-Stream-Protocol-Version/);
  });

  it('port-forward: a pair not complete in time is told so on its error stream; streams past the bound are refused', async () => {
    const server = createServer((socket) => {
      serveSpdyPortForward(socket, undefined, async () => ({ port: 1, error: 'never dialled' }), {
        streamCreationTimeoutMs: 100,
        maxStreams: 2,
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    clean.push(() => new Promise((resolve) => server.close(resolve)));
    const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
    clean.push(() => socket.destroy());
    await new Promise((resolve) => socket.once('connect', resolve));
    const client = spdyOver(socket, undefined);
    const lonely = await client.open({ streamtype: 'error', port: '80', requestid: '1' });
    lonely.end();
    expect(await readAll(lonely)).toBe('(request=1) timed out waiting for streams');
    // Two open at once at most (that one is closed now): a third is refused (RST_STREAM REFUSED_STREAM).
    await client.open({ streamtype: 'error', port: '80', requestid: '2' });
    await client.open({ streamtype: 'error', port: '80', requestid: '3' });
    await expect(client.open({ streamtype: 'error', port: '80', requestid: '4' })).rejects.toThrow(/closed before its reply/);
  });
});
