import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { connect } from 'node:net';
import { AgentProcess, cliPath, repoRoot } from './agent-process.js';

const manifest = JSON.stringify({ version: 'v1beta1', id: 'guarded', containers: [{ name: 'main', image: 'busybox:1.36' }] });

/** One request with exactly these headers, `Host` included (fetch would pick the Host itself). */
function send(
  url: string,
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request({ hostname, port, path, method: options.method ?? 'GET', headers: options.headers ?? {} }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** Writes `payload` on a raw connection; `then` may act on the open socket. Resolves with the answer at close. */
function raw(url: string, payload: string, then?: (socket: ReturnType<typeof connect>) => void): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    let answer = '';
    const socket = connect(Number(port), hostname, () => {
      socket.write(payload);
      then?.(socket);
    });
    socket.on('data', (d) => (answer += d.toString()));
    socket.on('close', () => resolve(answer));
    socket.on('error', () => undefined);
  });
}

/**
 * The CLI started with `args` and `env`: how it exited, or that it started serving instead, in
 * which case it is killed (an agent that starts on an empty token serves everyone).
 */
function runUntilExitOrListening(
  args: readonly string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stderr: string; listened: boolean }> {
  const child = spawn(
    process.execPath,
    [cliPath, '--log-format', 'json', '--port', '0', '--runtime', 'memory', '--hostname-override', 'token-e2e', ...args],
    {
      cwd: repoRoot,
      env: { ...process.env, ...env },
      stdio: 'pipe',
    },
  );
  let stdout = '';
  let stderr = '';
  let listened = false;
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    if (!listened && stdout.includes('agent server listening')) {
      listened = true;
      child.kill('SIGKILL');
    }
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, stderr, listened })));
}

describe('kubelet-ts CLI: an empty auth token', () => {
  it.each([
    ["--auth-token ''", ['--auth-token', ''], {}],
    ["--auth-token '  '", ['--auth-token', '  '], {}],
    ['KUBELET_TS_AUTH_TOKEN=', [], { KUBELET_TS_AUTH_TOKEN: '' }],
  ])('%s: refuses to start (exit 1), naming the flag and the variable, instead of serving without auth', async (_, args, env) => {
    const { code, stderr, listened } = await runUntilExitOrListening(args, env);
    expect(listened).toBe(false);
    expect(code).toBe(1);
    expect(stderr).toContain('--auth-token');
    expect(stderr).toContain('KUBELET_TS_AUTH_TOKEN');
    expect(stderr).toContain('empty token');
  });
});

describe('kubelet-ts CLI: the agent server against a page in a browser on the same host', () => {
  let agent: AgentProcess;
  let url: string;
  let port: string;
  const auth = { authorization: 'Bearer e2e-token' };

  beforeAll(async () => {
    agent = new AgentProcess([
      '--runtime',
      'memory',
      '--hostname-override',
      'guards-e2e',
      '--auth-token',
      'e2e-token',
      '--allowed-host',
      'node-1.example',
      '--allowed-host',
      'node-1',
      '--log-level',
      'debug',
    ]);
    url = await agent.serverUrl();
    port = new URL(url).port;
  });

  afterAll(async () => {
    agent.kill();
    await agent.exit;
  });

  const errors = () => agent.lines.filter((l) => l.level >= 50);

  it('refuses a cross-site text/plain POST /container with 403, even one carrying the token', async () => {
    const res = await send(url, '/container', {
      method: 'POST',
      headers: { ...auth, origin: 'http://evil.example', 'content-type': 'text/plain' },
      body: manifest,
    });
    expect(res.status).toBe(403);
    expect(JSON.parse(res.body)).toEqual({ error: expect.stringContaining('cross-site requests are refused') });
    expect(JSON.parse((await send(url, '/pods', { headers: auth })).body)).toEqual({
      kind: 'PodList',
      apiVersion: 'v1',
      metadata: {},
      items: [],
    });
  });

  it('refuses every route, /healthz included, to a Host it does not listen on (DNS rebinding)', async () => {
    for (const path of ['/healthz', '/pods', '/containerInfo?container=guarded/main', '/metrics']) {
      const res = await send(url, path, { headers: { ...auth, host: `evil.example:${port}` } });
      expect([path, res.status]).toEqual([path, 403]);
      expect(res.body).toContain('--allowed-host');
    }
    expect((await send(url, '/healthz', { headers: { host: `localhost:${port}` } })).status).toBe(200);
  });

  it('takes the names given with --allowed-host, as Host and as Origin', async () => {
    expect(
      (await send(url, '/pods', { headers: { ...auth, host: `node-1.example:${port}`, origin: `http://node-1.example:${port}` } })).status,
    ).toBe(200);
    expect((await send(url, '/healthz', { headers: { host: `NODE-1:${port}` } })).status).toBe(200);
    expect((await send(url, '/healthz', { headers: { host: `node-2.example:${port}` } })).status).toBe(403);
  });

  it("answers 415 to curl's default form type, and takes the manifest as YAML or JSON", async () => {
    const form = await send(url, '/container', {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded' },
      body: manifest,
    });
    expect(form.status).toBe(415);
    expect(form.body).toContain('application/yaml');
    const yaml = await send(url, '/container', {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/yaml' },
      body: manifest,
    });
    expect(yaml.status).toBe(201);
    await agent.until(() => agent.events('ContainerStarted', 'guarded').length === 1, 'the posted pod to start');
    expect((await send(url, '/container/guarded', { method: 'DELETE', headers: auth })).status).toBe(200);
  });

  it('answers a malformed request target 400 and a body cut off, each with a debug line, no error', async () => {
    const before = agent.lines.length;
    const answer = await raw(url, `GET http://[::1/pods HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`);
    expect(answer).toMatch(/^HTTP\/1\.1 400[\s\S]*"error":"malformed request target/);
    const head = `POST /container HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer e2e-token\r\nContent-Type: application/yaml\r\nContent-Length: 1000\r\n\r\nid: x\n`;
    await raw(url, head, (socket) => setTimeout(() => socket.resetAndDestroy(), 50));
    await agent.until(
      () => agent.lines.slice(before).filter((l) => l.msg === 'request refused').length === 2,
      'two refused requests logged',
    );
    const refused = agent.lines.slice(before).filter((l) => l.msg === 'request refused');
    expect(refused.map((l) => [l.level, l['status']])).toEqual([
      [20, 400],
      [20, 400],
    ]);
    expect(errors()).toEqual([]);
  });
});
