import { afterEach, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname, networkInterfaces } from 'node:os';
import { RecordingSink } from '@kubelet-ts/conformance';
import {
  ServerManifestSource,
  agentApiHandler,
  agentApiListener,
  type AgentApiListenerOptions,
  type ServerManifestSourceOptions,
} from '../src/index.js';
import { FakeView } from './fake-view.js';
import { send } from './http-request.js';

/**
 * DNS rebinding: a page on evil.example makes its name resolve to 127.0.0.1, and its script then
 * reads the agent as if it were same-origin. The connection is to the agent's address, but the
 * browser's Host header still says evil.example: the one thing the agent can refuse it by.
 */
const READ_PATHS = ['/healthz', '/pods', '/plan', '/metrics', '/containerInfo?container=web-1'];

let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

async function startSource(options: ServerManifestSourceOptions = {}): Promise<{ url: string; port: number }> {
  const source = new ServerManifestSource({ port: 0, ...options });
  source.mount(agentApiHandler(new FakeView()));
  await source.start(new RecordingSink());
  close = () => source.close();
  return { url: source.url, port: Number(new URL(source.url).port) };
}

async function startListener(options: AgentApiListenerOptions = {}): Promise<{ url: string; port: number }> {
  const server: Server = createServer(agentApiListener(new FakeView(), options));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return { url: `http://127.0.0.1:${port}`, port };
}

const statusWithHost = async (url: string, path: string, host: string, headers: Record<string, string> = {}) =>
  (await send(url, path, { headers: { host, ...headers } })).status;

describe.each([
  ['the agent server', startSource],
  ["agentApiListener on an embedder's server", startListener],
])('%s bound to 127.0.0.1 against DNS rebinding', (_, start) => {
  it('refuses every read route, /healthz and 404s included, when Host is not a name it listens on', async () => {
    const { url, port } = await start();
    for (const path of [...READ_PATHS, '/nope']) {
      const res = await send(url, path, { headers: { host: `evil.example:${port}` } });
      expect([path, res.status]).toEqual([path, 403]);
      expect((res.json as { error: string }).error).toMatch(
        /Host "evil\.example:\d+" is not an address or name this agent listens on.*allowedHosts/,
      );
    }
  });

  it.each([
    ['another name', (port: number) => `evil.example:${port}`],
    ['the right address on another port', () => '127.0.0.1:1'],
    ['no port (port 80)', () => '127.0.0.1'],
    ['an interface the server is not bound to', (port: number) => `${hostname()}:${port}`],
    ['a malformed Host', (port: number) => `127.0.0.1:${port}:${port}`],
  ])('refuses %s', async (_, host) => {
    const { url, port } = await start();
    expect(await statusWithHost(url, '/pods', host(port))).toBe(403);
  });

  it('accepts the bound address and the loopback names, any case', async () => {
    const { url, port } = await start();
    for (const name of ['127.0.0.1', 'localhost', 'LocalHost', '[::1]'])
      expect([name, await statusWithHost(url, '/pods', `${name}:${port}`)]).toEqual([name, 200]);
  });

  it('accepts a name given in allowedHosts, as Host and as Origin', async () => {
    const { url, port } = await start({ allowedHosts: ['Node-1.Example', 'fd00::99'] });
    expect(await statusWithHost(url, '/pods', `node-1.example:${port}`, { origin: `http://node-1.example:${port}` })).toBe(200);
    expect(await statusWithHost(url, '/pods', `[fd00::99]:${port}`)).toBe(200);
    expect(await statusWithHost(url, '/pods', `node-2.example:${port}`)).toBe(403);
  });
});

describe('the agent server bound to every interface', () => {
  const addresses = Object.values(networkInterfaces())
    .flatMap((list) => list ?? [])
    .map((a) => (a.family === 'IPv6' ? `[${a.address}]` : a.address));

  it.each(['0.0.0.0', '::'])('on %s accepts each interface address, localhost and the hostname; refuses others', async (address) => {
    // Unauthenticated on every interface only when asked in so many words (secure by default).
    const { port } = await startSource({ address, insecureAllowUnauthenticated: true });
    const local = `http://127.0.0.1:${port}`;
    for (const name of [...addresses, 'localhost', hostname()])
      expect([name, await statusWithHost(local, '/pods', `${name}:${port}`)]).toEqual([name, 200]);
    expect(await statusWithHost(local, '/healthz', `evil.example:${port}`)).toBe(403);
  });
});

describe('allowedHosts itself', () => {
  it.each([['node-1.example:10250'], ['http://node-1.example'], [''], ['two words']])(
    'refuses %j: names only, the port is the listening one',
    (name) => {
      expect(() => new ServerManifestSource({ allowedHosts: [name] })).toThrow(/allowedHosts/);
      expect(() => agentApiListener(new FakeView(), { allowedHosts: [name] })).toThrow(/allowedHosts/);
    },
  );

  it('an embedder behind a proxy that rewrites Host may turn the Host and Origin checks off', async () => {
    const { url, port } = await startListener({ checkHostAndOrigin: false });
    expect(await statusWithHost(url, '/pods', `public.example:${port}`, { origin: 'http://public.example' })).toBe(200);
  });
});
