import { afterEach, describe, expect, it } from '@jest/globals';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocket } from 'ws';
import { type ServerManifestSource, agentApiListener, type AgentApiOptions } from '../src/index.js';
import { FakeView } from './fake-view.js';
import { execPath, startStreamServer } from './stream-fixture.js';

const TOKEN = 'stream-routes-token';
const auth = { authorization: `Bearer ${TOKEN}` };

/** A session as a client sees it: each channel's bytes as text, the status, and whether it closed. */
interface Seen {
  readonly ws: WebSocket;
  readonly channels: Map<number, string>;
  readonly closed: Promise<number>;
  /** Resolves when `done()` holds of what was seen (5 s at most). */
  until(done: (s: Seen) => boolean): Promise<void>;
  send(channel: number, data: string | Buffer): void;
}

function connect(url: string, path: string, protocols: string[], headers: Record<string, string> = auth): Promise<Seen> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${url.replace(/^http/, 'ws')}${path}`, protocols, { headers });
    const channels = new Map<number, string>();
    const waiters = new Set<() => void>();
    const closed = new Promise<number>((r) => ws.once('close', (code) => r(code)));
    const seen: Seen = {
      ws,
      channels,
      closed,
      send: (channel, data) => ws.send(Buffer.concat([Buffer.from([channel]), Buffer.from(data)])),
      until: (done) =>
        new Promise<void>((ok, fail) => {
          const timer = setTimeout(() => fail(new Error(`not seen within 5 s: ${JSON.stringify([...channels])}`)), 5_000);
          const check = () => {
            if (!done(seen)) return;
            clearTimeout(timer);
            waiters.delete(check);
            ok();
          };
          waiters.add(check);
          check();
        }),
    };
    ws.on('message', (data: Buffer) => {
      channels.set(data[0]!, (channels.get(data[0]!) ?? '') + data.subarray(1).toString('latin1'));
      for (const w of [...waiters]) w();
    });
    ws.once('open', () => resolve(seen));
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += String(c)));
      res.on('end', () => reject(Object.assign(new Error(`HTTP ${res.statusCode}: ${body}`), { status: res.statusCode, body })));
    });
    ws.once('error', reject);
  });
}
const refusal = (p: Promise<Seen>) =>
  p.then(
    (s) => {
      s.ws.close();
      return undefined;
    },
    (e: { status?: number; body?: string }) => ({
      status: e.status,
      error: e.body === undefined ? undefined : (JSON.parse(e.body) as { error: string }).error,
    }),
  );
const status = (s: Seen) => JSON.parse(s.channels.get(3) ?? 'null') as { status: string; reason?: string; details?: unknown } | null;

describe('/exec, /attach, /portForward over WebSocket, and POST /run', () => {
  let source: ServerManifestSource | undefined;
  afterEach(async () => {
    await source?.close();
    source = undefined;
  });
  const start = async (options: AgentApiOptions = {}) => {
    const started = await startStreamServer(TOKEN, options);
    source = started.source;
    return { view: started.view, url: started.url };
  };
  const exec = execPath;

  it('exec on v5: stdout and stderr on channels 1 and 2, then the exit status on 3 and a normal close', async () => {
    const { url } = await start();
    const s = await connect(url, exec(['sh', '-c', 'echo out; echo err >&2; exit 3']), ['v5.channel.k8s.io', 'v4.channel.k8s.io']);
    expect(s.ws.protocol).toBe('v5.channel.k8s.io');
    expect(await s.closed).toBe(1000);
    expect([s.channels.get(1), s.channels.get(2)]).toEqual(['out\n', 'err\n']);
    expect(status(s)).toMatchObject({
      status: 'Failure',
      reason: 'NonZeroExitCode',
      details: { causes: [{ reason: 'ExitCode', message: '3' }] },
    });
    const ok = await connect(url, exec(['true']), ['v4.channel.k8s.io']);
    expect(ok.ws.protocol).toBe('v4.channel.k8s.io');
    await ok.closed;
    expect(status(ok)).toEqual({ metadata: {}, status: 'Success' });
  });

  it('takes the streams as the API server names them to the kubelet: input, output, error', async () => {
    const { url } = await start();
    const s = await connect(url, exec(['sh', '-c', 'echo out; echo err >&2'], 'output=1&error=1'), ['v5.channel.k8s.io']);
    expect(await s.closed).toBe(1000);
    expect([s.channels.get(1), s.channels.get(2)]).toEqual(['out\n', 'err\n']);
    // error=1 with a terminal: a terminal has no stderr of its own, as with stderr=1.
    const tty = await connect(url, exec(['sh', '-c', 'echo err >&2'], 'output=1&error=1&tty=1'), ['v5.channel.k8s.io']);
    await tty.closed;
    expect(tty.channels.get(2)).toBeUndefined();
  });

  it('stdin on channel 0, its end from the v5 close message; a resize on channel 4 reaches a terminal', async () => {
    const { url } = await start();
    const cat = await connect(url, exec(['cat'], 'stdin=true&stdout=true'), ['v5.channel.k8s.io']);
    cat.send(0, 'hello\n');
    await cat.until((s) => s.channels.get(1) === 'hello\n');
    cat.send(255, Buffer.from([0]));
    await cat.closed;
    expect(status(cat)).toMatchObject({ status: 'Success' });
    const tty = await connect(url, exec(['sh', '-c', 'read x; stty size'], 'stdin=1&stdout=1&stderr=1&tty=1'), ['v4.channel.k8s.io']);
    tty.send(4, JSON.stringify({ Width: 100, Height: 40 }));
    tty.send(0, '\n');
    await tty.closed;
    expect(tty.channels.get(1)).toBe('40 100\n');
    expect(tty.channels.has(2)).toBe(false); // a terminal has no stderr of its own
  });

  it('refuses before the handshake: no token, a bad query, no subprotocol it speaks, an unknown or waiting container, a plain request', async () => {
    const { url, view } = await start();
    expect(await refusal(connect(url, exec(['true']), ['v5.channel.k8s.io'], {}))).toMatchObject({ status: 401 });
    expect(await refusal(connect(url, '/exec/default/web/nginx?stdout=1', ['v5.channel.k8s.io']))).toEqual({
      status: 400,
      error: 'command: give the command to run, one command= per word',
    });
    expect(await refusal(connect(url, exec(['true'], 'tty=1'), ['v5.channel.k8s.io']))).toMatchObject({
      status: 400,
      error: 'ask for at least one of stdin, stdout, stderr (or input, output, error) =1',
    });
    expect(await refusal(connect(url, exec(['true']), ['channel.k8s.io']))).toEqual({
      status: 400,
      error: 'offer one of the subprotocols v5.channel.k8s.io, v4.channel.k8s.io (offered: channel.k8s.io)',
    });
    expect(await refusal(connect(url, '/exec/default/web/nope?command=true&stdout=1', ['v5.channel.k8s.io']))).toEqual({
      status: 404,
      error: 'container "nope" is not in pod "default/web"',
    });
    expect(await refusal(connect(url, '/attach/default/web/init?stdout=1', ['v5.channel.k8s.io']))).toMatchObject({ status: 400 });
    expect(await refusal(connect(url, '/portForward/default/other?ports=8080', ['v4.channel.k8s.io']))).toMatchObject({ status: 404 });
    // Port 129 would speak on channels 256 and 257, which a byte numbers 0 and 1: the first port's.
    const ports = (n: number) => Array.from({ length: n }, (_, i) => 1000 + i).join(',');
    expect(await refusal(connect(url, `/portForward/default/web?ports=${ports(129)}`, ['v4.channel.k8s.io']))).toEqual({
      status: 400,
      error: 'ports: 129 ports named; one request forwards at most 128, as each takes two of the 256 one-byte channels',
    });
    expect(
      await refusal(connect(url, `/portForward/default/web?ports=${ports(100)}&port=${ports(29)}`, ['v4.channel.k8s.io'])),
    ).toMatchObject({
      status: 400,
    });
    view.hasStreams = false;
    expect(await refusal(connect(url, exec(['true']), ['v5.channel.k8s.io']))).toMatchObject({ status: 501 });
    const plain = await fetch(`${url}${exec(['true'])}`, { method: 'POST', headers: auth });
    expect(plain.status).toBe(400);
    expect(((await plain.json()) as { error: string }).error).toMatch(/upgrade with the subprotocol v5\.channel\.k8s\.io/);
  });

  it('refuses a cross-site upgrade (the Origin rule of every route)', async () => {
    const { url } = await start();
    expect(await refusal(connect(url, exec(['true']), ['v5.channel.k8s.io'], { ...auth, origin: 'https://evil.example' }))).toMatchObject({
      status: 403,
    });
  });

  it('attach: what the main process prints, until it ends', async () => {
    const { url, view } = await start();
    const s = await connect(url, '/attach/default/web/nginx?stdout=1&stderr=1', ['v5.channel.k8s.io']);
    const { nginx } = await view.ids();
    view.memory.print(nginx, 'stderr', 'warn\n');
    await s.until((x) => x.channels.get(2) === 'warn\n');
    view.memory.exit(nginx, 0);
    await s.closed;
    expect(status(s)).toMatchObject({ status: 'Success' });
  });

  it('portForward: the port first on both channels, then the bytes both ways; a refused port says why on its error channel', async () => {
    const { url, view } = await start();
    view.forwardDelayMs = 100;
    const s = await connect(url, '/portForward/default/web?ports=8080', ['v5.channel.k8s.io', 'v4.channel.k8s.io']);
    expect(s.ws.protocol).toBe('v4.channel.k8s.io');
    // Sent at once, before the port came back: kept until the connection is made (client-node sends so).
    s.send(0, 'early-');
    await s.until((x) => x.channels.get(0)?.length === 2 && x.channels.get(1)?.length === 2);
    expect(Buffer.from(s.channels.get(0)!, 'latin1').readUInt16LE()).toBe(8080);
    s.send(0, 'ping');
    await s.until((x) => x.channels.get(0)?.slice(2) === 'early-ping');
    s.ws.close();
    await s.closed;
    const refused = await connect(url, '/portForward/default/web?port=9999', ['v4.channel.k8s.io']);
    await refused.until((x) => (x.channels.get(1) ?? '').includes('connection refused'));
    expect(refused.channels.get(1)!.slice(2)).toMatch(/^error forwarding port 9999 to pod default\/web: /);
    refused.ws.close();
  });

  it('portForward: dials a few ports at a time, and none once the client has gone; what was made is closed', async () => {
    const { url, view } = await start();
    view.forwardDelayMs = 200;
    const made: Duplex[] = [];
    const dial = view.portForward.bind(view);
    view.portForward = async (target, port) => {
      const connection = await dial(target, port);
      made.push(connection);
      return connection;
    };
    const ports = Array.from({ length: 40 }, () => 8080).join(',');
    const s = await connect(url, `/portForward/default/web?ports=${ports}`, ['v4.channel.k8s.io']);
    s.ws.close();
    await s.closed;
    // Forty ports at 200 ms each, four at a time, would take 2 s: the client left at once.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(made.length).toBeGreaterThan(0);
    expect(made.length).toBeLessThanOrEqual(4);
    expect(made.every((c) => c.destroyed)).toBe(true);
  });

  it('portForward: at most maxForwardedConnections open at once, all sessions together; the next port is refused on its error channel', async () => {
    const { url } = await start({ maxForwardedConnections: 2 });
    const two = await connect(url, '/portForward/default/web?ports=8080,8080', ['v4.channel.k8s.io']);
    await two.until((x) => (x.channels.get(0)?.length ?? 0) >= 2 && (x.channels.get(2)?.length ?? 0) >= 2);
    const third = await connect(url, '/portForward/default/web?ports=8080', ['v4.channel.k8s.io']);
    await third.until((x) => (x.channels.get(1) ?? '').includes('at most'));
    expect(third.channels.get(1)!.slice(2)).toBe(
      'error forwarding port 8080 to pod default/web: the agent forwards at most 2 connections at once; try again when one ends',
    );
    third.ws.close();
    two.ws.close();
    await two.closed;
    // Their connections closed: room again.
    const deadline = Date.now() + 5_000;
    for (;;) {
      const again = await connect(url, '/portForward/default/web?ports=8080', ['v4.channel.k8s.io']);
      await again.until((x) => (x.channels.get(0)?.length ?? 0) >= 2 && (x.channels.get(1)?.length ?? 0) >= 2);
      const refused = (again.channels.get(1) ?? '').includes('at most');
      again.ws.close();
      await again.closed;
      if (!refused) break;
      if (Date.now() > deadline) throw new Error('the closed sessions still count after 5 s');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  });

  it('POST /run and 2014 /run/{pod}/{container}: the output as text; a failed command is a 500 with its exit code', async () => {
    const { url } = await start();
    const ok = await fetch(`${url}/run/default/web/nginx?cmd=echo+hello+there`, { method: 'POST', headers: auth });
    expect([ok.status, await ok.text()]).toEqual([200, 'hello there\n']);
    const old = await fetch(`${url}/run/web/nginx?cmd=${encodeURIComponent('sh -c exit')}`, { method: 'POST', headers: auth });
    expect(old.status).toBe(200);
    const failed = await fetch(`${url}/run/web/nginx?cmd=false`, { method: 'POST', headers: auth });
    expect([failed.status, await failed.json()]).toEqual([500, { error: 'command "false" exited with 1', exitCode: 1, output: '' }]);
    expect((await fetch(`${url}/run/web/nginx?cmd=true`, { headers: auth })).status).toBe(405);
    expect((await fetch(`${url}/run/web/nginx?cmd=true`, { method: 'POST' })).status).toBe(401);
  });

  it("on an embedder's own server too: agentApiListener's upgrade, behind its token", async () => {
    const view = new FakeView();
    const listener = agentApiListener(view, { authToken: TOKEN });
    const server = createServer(listener).on('upgrade', listener.upgrade);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const s = await connect(url, exec(['echo', 'embedded']), ['v4.channel.k8s.io']);
      await s.closed;
      expect(s.channels.get(1)).toBe('embedded\n');
      expect(await refusal(connect(url, exec(['true']), ['v4.channel.k8s.io'], {}))).toMatchObject({ status: 401 });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('lets go of a session whose client disappears', async () => {
    const { url, view } = await start();
    const s = await connect(url, exec(['cat'], 'stdin=1&stdout=1'), ['v5.channel.k8s.io']);
    expect(view.memory.streams.open).toBe(1);
    s.ws.terminate();
    const deadline = Date.now() + 5_000;
    while (view.memory.streams.open > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(view.memory.streams.open).toBe(0);
  });
});
