import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RecordingSink } from '@kubelet-ts/conformance';
import { ServerManifestSource, agentApiListener, hostLogsHandler } from '../src/index.js';
import { FakeView } from './fake-view.js';
import { raw } from './http-request.js';

const TOKEN = 'host-logs-token';
const auth = { authorization: `Bearer ${TOKEN}` };

describe('GET /logs/: the host log directory', () => {
  let base: string;
  let logs: string;
  let source: ServerManifestSource | undefined;

  beforeAll(async () => {
    base = await mkdtemp(join(tmpdir(), 'kubelet-ts-host-logs-'));
    logs = join(base, 'log');
    await mkdir(join(logs, 'apt'), { recursive: true });
    await writeFile(join(logs, 'syslog'), 'line 1\nline 2\n');
    await writeFile(join(logs, 'apt', 'history.log'), 'installed\n');
    await writeFile(join(logs, '50%\nfake'), 'odd name\n');
    await writeFile(join(base, 'secret'), 'not a log\n');
    await symlink(join(logs, 'syslog'), join(logs, 'messages'));
    await symlink(join(base, 'secret'), join(logs, 'escape'));
    await symlink(base, join(logs, 'up'));
    await symlink('/proc/self/root', join(logs, 'host'));
    await symlink('apt', join(logs, 'apt-link'));
    await symlink('up', join(logs, 'up-again'));
    execFileSync('mkfifo', [join(logs, 'pipe')]);
  });

  afterAll(async () => {
    await rm(base, { recursive: true, force: true });
  });

  afterEach(async () => {
    await source?.close();
    source = undefined;
  });

  const start = async (directory = logs) => {
    source = new ServerManifestSource({ port: 0, authToken: TOKEN });
    source.mount(hostLogsHandler({ directory }));
    await source.start(new RecordingSink());
    return source.url;
  };

  const get = async (url: string, path: string, headers: Record<string, string> = auth) => {
    const res = await fetch(`${url}${path}`, { headers });
    const text = await res.text();
    return { status: res.status, type: res.headers.get('content-type'), text };
  };

  it('lists a directory, one name a line, directories marked, odd names percent-encoded', async () => {
    const url = await start();
    const listing = await get(url, '/logs/');
    expect(listing).toMatchObject({ status: 200, type: 'text/plain; charset=utf-8' });
    expect(listing.text).toBe('50%25%0Afake\napt-link\napt/\nescape\nhost\nmessages\npipe\nsyslog\nup\nup-again\n');
    expect((await get(url, '/logs')).text).toBe(listing.text);
    expect((await get(url, '/logs/apt')).text).toBe('history.log\n');
    // A listed name is one to ask for.
    expect((await get(url, '/logs/50%25%0Afake')).text).toBe('odd name\n');
  });

  it('serves a file, streamed, and one reached through a link that stays inside', async () => {
    const url = await start();
    expect(await get(url, '/logs/syslog')).toMatchObject({ status: 200, type: 'text/plain', text: 'line 1\nline 2\n' });
    expect((await get(url, '/logs/apt/history.log')).text).toBe('installed\n');
    expect((await get(url, '/logs/messages')).text).toBe('line 1\nline 2\n');
    expect((await get(url, '/logs/apt-link/history.log')).text).toBe('installed\n'); // a relative link to a directory
  });

  it('answers the same past the boundary whether or not the path exists there: no oracle for the host', async () => {
    const url = await start();
    const outside = ['/logs/host/etc/passwd', '/logs/host/no/such/path', '/logs/up/secret', '/logs/up/nothing', '/logs/up-again/secret'];
    for (const path of outside) {
      expect(await get(url, path)).toEqual({
        status: 403,
        type: expect.any(String),
        text: expect.stringContaining(`${path} leads outside the host log directory`),
      });
    }
    // Inside, a missing name is still a 404.
    expect((await get(url, '/logs/apt-link/nothing')).status).toBe(404);
  });

  it('never serves what lies outside: .. in a segment, links that lead out, FIFOs', async () => {
    const url = await start();
    expect(await get(url, '/logs/escape')).toMatchObject({
      status: 403,
      text: expect.stringContaining('leads outside the host log directory'),
    });
    expect((await get(url, '/logs/up/secret')).status).toBe(403);
    expect((await get(url, '/logs/up')).status).toBe(403);
    expect(await get(url, '/logs/apt%2F..%2F..%2Fsecret')).toMatchObject({ status: 400, text: expect.stringContaining('is not allowed') });
    expect((await get(url, '/logs/%2E%2E')).status).not.toBe(200);
    expect(await get(url, '/logs/pipe')).toMatchObject({ status: 403, text: expect.stringContaining('not a regular file') });
    expect(await get(url, '/logs/nothing')).toMatchObject({
      status: 404,
      text: expect.stringContaining('no such file or directory: /logs/nothing'),
    });
    // A raw `..` never reaches the route: the path is normalised first, and /secret is no route.
    const answer = await raw(
      Number(new URL(url).port),
      `GET /logs/../secret HTTP/1.1\r\nHost: ${new URL(url).host}\r\nAuthorization: Bearer ${TOKEN}\r\nConnection: close\r\n\r\n`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 404/);
    expect(answer).not.toContain('not a log');
  });

  it('needs the token, and says so when the directory is missing', async () => {
    const url = await start(join(base, 'missing'));
    expect((await get(url, '/logs/', {})).status).toBe(401);
    expect(await get(url, '/logs/')).toMatchObject({ status: 404, text: expect.stringContaining('cannot be read: ENOENT') });
    const deleted = await fetch(`${url}/logs/`, { method: 'DELETE', headers: auth });
    await deleted.text();
    expect(deleted.status).toBe(405);
  });

  it('is served by agentApiListener when given a directory, and not otherwise', async () => {
    const serve = async (hostLogDirectory?: string) => {
      const server: Server = createServer(agentApiListener(new FakeView(), hostLogDirectory === undefined ? {} : { hostLogDirectory }));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const res = await fetch(`${url}/logs/syslog`);
      await res.text();
      const status = res.status;
      await new Promise<void>((resolve) => server.close(() => resolve()));
      return status;
    };
    expect(await serve(logs)).toBe(200);
    expect(await serve()).toBe(404);
  });
});
