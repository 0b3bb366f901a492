import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { PassThrough } from 'node:stream';
import { Labels, validateManifest } from '@kubelet-ts/core';
import { StaticManifestSource } from '@kubelet-ts/manifest';
import { createKubelet, type Kubelet } from '@kubelet-ts/runner';
import { MemoryRuntime } from '@kubelet-ts/runtime-memory';
import { ServerManifestSource, agentApiHandler, agentApiListener } from '@kubelet-ts/source-server';
import { TestCertificates } from '@kubelet-ts/testkit';
import { logsMain } from '../src/logs.js';

const TOKEN = 'cli-logs-token-0123456789abcdef0123';

/** `kubelet-ts logs` in this process, its output kept. */
async function logs(args: readonly string[], env: Record<string, string> = { KUBELET_TS_AUTH_TOKEN: TOKEN }) {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (d: Buffer) => (out += d.toString()));
  stderr.on('data', (d: Buffer) => (err += d.toString()));
  const code = await logsMain(args, { stdout, stderr, env });
  return { code, stdout: out, stderr: err };
}

describe('kubelet-ts logs, against a running agent on the in-memory runtime', () => {
  let runtime: MemoryRuntime;
  let server: ServerManifestSource;
  let kubelet: Kubelet;
  let url: string;
  const running = (pod: string, container: string) =>
    runtime
      .snapshot()
      .find((c) => c.state === 'running' && c.labels[Labels.manifestId] === pod && c.labels[Labels.containerName] === container)!.id;

  beforeAll(async () => {
    runtime = new MemoryRuntime();
    server = new ServerManifestSource({ port: 0, authToken: TOKEN });
    kubelet = createKubelet({ runtime, sources: [server], hostname: 'logs-node' });
    server.mount(agentApiHandler(kubelet));
    await kubelet.start();
    url = server.url;
    const post = (manifest: object) =>
      fetch(`${url}/container`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify(manifest),
      });
    expect((await post({ version: 'v1beta1', id: 'web', containers: [{ name: 'main', image: 'busybox:1.36' }] })).status).toBe(201);
    expect(
      (
        await post({
          version: 'v1beta1',
          id: 'duo',
          containers: [
            { name: 'a', image: 'busybox:1.36' },
            { name: 'b', image: 'busybox:1.36' },
          ],
        })
      ).status,
    ).toBe(201);
    await kubelet.sync();
    runtime.print(running('web', 'main'), 'stdout', 'one\ntwo\n');
    runtime.print(running('web', 'main'), 'stderr', 'three\n');
    runtime.print(running('duo', 'b'), 'stdout', 'from b\n');
  });

  afterAll(async () => {
    await kubelet.close();
  });

  it("prints a pod's only container without naming it, and a named one of several", async () => {
    expect(await logs(['web', '--server', url])).toEqual({ code: 0, stdout: 'one\ntwo\nthree\n', stderr: '' });
    expect(await logs(['duo', 'b', '--server', url])).toEqual({ code: 0, stdout: 'from b\n', stderr: '' });
    expect(await logs(['-n', 'default', 'web', 'main', '--server', url, '--token', TOKEN], {})).toMatchObject({ code: 0 });
  });

  it('passes --tail, --since, --timestamps and --limit-bytes on', async () => {
    expect((await logs(['web', '--tail', '1', '--server', url])).stdout).toBe('three\n');
    expect((await logs(['web', '--tail', '-1', '--server', url])).stdout).toBe('one\ntwo\nthree\n');
    expect((await logs(['web', '--since', '1h', '--server', url])).stdout).toBe('one\ntwo\nthree\n');
    expect((await logs(['web', '--limit-bytes', '6', '--server', url])).stdout).toBe('one\ntw');
    expect((await logs(['web', '--timestamps', '--tail', '1', '--server', url])).stdout).toMatch(
      /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z three\n$/,
    );
  });

  it('follows until the container ends, printing what it prints meanwhile', async () => {
    const id = running('duo', 'a');
    const following = logs(['duo', 'a', '-f', '--server', url]);
    await new Promise((resolve) => setTimeout(resolve, 200));
    runtime.print(id, 'stdout', 'live\n');
    await new Promise((resolve) => setTimeout(resolve, 100));
    runtime.exit(id, 0);
    expect(await following).toEqual({ code: 0, stdout: 'live\n', stderr: '' });
    expect(runtime.openLogStreams).toBe(0);
  });

  it('prints the previous run of a restarted container with --previous', async () => {
    const first = running('web', 'main');
    runtime.exit(first, 1);
    await kubelet.sync();
    runtime.print(running('web', 'main'), 'stdout', 'second run\n');
    expect((await logs(['web', '--server', url])).stdout).toBe('second run\n');
    expect((await logs(['web', '-p', '--server', url])).stdout).toBe('one\ntwo\nthree\n');
  });

  it('exits 1 with a clear message: unknown pod or container, several containers, no token, no agent, a bad flag', async () => {
    expect(await logs(['nope', '--server', url])).toEqual({
      code: 1,
      stdout: '',
      stderr: 'kubelet-ts logs: pod "default/nope" is not on this agent (see its /pods)\n',
    });
    expect(await logs(['web', 'sidecar', '--server', url])).toMatchObject({
      code: 1,
      stderr:
        'kubelet-ts logs: container "sidecar" is not in pod "default/web" (its containers: main) (HTTP 404 from /containerLogs/default/web/sidecar)\n',
    });
    expect((await logs(['duo', '--server', url])).stderr).toBe(
      'kubelet-ts logs: pod "default/duo" has 2 containers (a, b): name one, e.g. kubelet-ts logs duo a\n',
    );
    expect((await logs(['web', 'main', '--server', url], {})).stderr).toMatch(
      /^kubelet-ts logs: a valid bearer token is required \(HTTP 401/,
    );
    expect((await logs(['web', 'main', '--server', 'http://127.0.0.1:1'])).stderr).toMatch(
      /^kubelet-ts logs: cannot reach the agent at http:\/\/127\.0\.0\.1:1: .*ECONNREFUSED/,
    );
    expect((await logs(['web', '--tail', 'many', '--server', url])).code).toBe(1);
    expect((await logs(['web', '--since', 'soon', '--server', url])).stderr).toContain('invalid duration "soon"');
    expect((await logs([])).code).toBe(1);
    expect((await logs(['web', '--client-certificate', '/dev/null', '--server', url])).stderr).toBe(
      'kubelet-ts logs: --client-certificate and --client-key go together: give both or neither\n',
    );
  });

  it('runs as the `kubelet-ts logs` command, the token from the environment', async () => {
    const bin = fileURLToPath(new URL('../bin/kubelet-ts.js', import.meta.url));
    const run = (args: readonly string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
        execFile(
          process.execPath,
          [bin, 'logs', ...args],
          { timeout: 30_000, env: { ...process.env, KUBELET_TS_AUTH_TOKEN: TOKEN } },
          (error, stdout, stderr) =>
            resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr }),
        );
      });
    expect(await run(['duo', 'b', '--server', url])).toEqual({ code: 0, stdout: 'from b\n', stderr: '' });
    expect(await run(['duo', 'nope', '--server', url])).toMatchObject({ code: 1, stdout: '' });
  });

  it('exits 1 when the agent cuts the answer short, after writing what came', async () => {
    const cutting = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('half\n', () => res.socket?.end());
    });
    await new Promise<void>((resolve) => cutting.listen(0, '127.0.0.1', resolve));
    try {
      const server = `http://127.0.0.1:${(cutting.address() as AddressInfo).port}`;
      const answer = await logs(['web', 'main', '--server', server]);
      expect(answer).toMatchObject({ code: 1, stdout: 'half\n' });
      expect(answer.stderr).toMatch(/^kubelet-ts logs: the agent cut the answer short: /);
    } finally {
      await new Promise<void>((resolve) => cutting.close(() => resolve()));
    }
  });

  it('ends quietly, with 0, when the reader of its output goes away (| head)', async () => {
    const bin = fileURLToPath(new URL('../bin/kubelet-ts.js', import.meta.url));
    const id = running('duo', 'a');
    for (let i = 0; i < 4_000; i++) runtime.print(id, 'stdout', `${String(i).padStart(1023, '.')}\n`);
    const child = spawn(process.execPath, [bin, 'logs', 'duo', 'a', '--server', url], {
      env: { ...process.env, KUBELET_TS_AUTH_TOKEN: TOKEN },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdout.once('data', () => child.stdout.destroy());
    const [code] = (await once(child, 'exit')) as [number | null];
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
  });

  it('serves kubectl, a client that is not ours', async () => {
    // kubectl sends no bearer token over plain HTTP: it reads the route as an embedder serves it, without one.
    const plain = createServer(agentApiListener(kubelet));
    await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
    const open = `http://127.0.0.1:${(plain.address() as AddressInfo).port}`;
    const run = (args: readonly string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolve, reject) => {
        execFile('kubectl', [...args], { timeout: 30_000, env: { ...process.env, KUBECONFIG: '/dev/null' } }, (error, stdout, stderr) => {
          if ((error as NodeJS.ErrnoException | null)?.code === 'ENOENT')
            reject(
              new Error(
                'kubectl is not on PATH: install it (apt-get install kubernetes-client) to check the route with a client that is not ours',
              ),
            );
          resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
        });
      });
    try {
      const answer = await run(['get', '--raw', '/containerLogs/default/duo/b?tailLines=1', '--server', open]);
      expect(answer).toMatchObject({ code: 0, stdout: 'from b\n' });
      const missing = await run(['get', '--raw', '/containerLogs/default/duo/c', '--server', open]);
      expect(missing.code).toBe(1);
      expect(missing.stderr).toContain('NotFound');
    } finally {
      await new Promise<void>((resolve) => plain.close(() => resolve()));
    }
  });
});

describe("kubelet-ts logs over TLS: the server's CA, and a token or a client certificate", () => {
  let certs: TestCertificates;
  let runtime: MemoryRuntime;
  let server: ServerManifestSource;
  let kubelet: Kubelet;
  let url: string;

  beforeAll(async () => {
    certs = await TestCertificates.create();
    runtime = new MemoryRuntime();
    const pods = new StaticManifestSource('file');
    server = new ServerManifestSource({
      port: 0,
      authToken: TOKEN,
      tls: { certFile: certs.server.certFile, keyFile: certs.server.keyFile, clientCaFile: certs.ca.certFile },
    });
    kubelet = createKubelet({ runtime, sources: [pods, server], hostname: 'tls-node' });
    server.mount(agentApiHandler(kubelet));
    await kubelet.start();
    url = server.url;
    const web = validateManifest({ id: 'web', containers: [{ name: 'main', image: 'busybox:1.36' }] });
    if (!web.ok) throw new Error('invalid test manifest');
    pods.set([web.manifest]);
    await kubelet.sync();
    runtime.print(runtime.snapshot().find((c) => c.state === 'running' && c.labels[Labels.manifestId] === 'web')!.id, 'stdout', 'secure\n');
  });

  afterAll(async () => {
    await kubelet.close();
    await certs.destroy();
  });

  it('reads with the CA and the token, or with a client certificate the CA signed', async () => {
    expect(url).toMatch(/^https:/);
    expect(await logs(['web', '--server', url, '--certificate-authority', certs.ca.certFile])).toEqual({
      code: 0,
      stdout: 'secure\n',
      stderr: '',
    });
    expect(
      await logs(
        [
          'web',
          '--server',
          url,
          '--certificate-authority',
          certs.ca.certFile,
          '--client-certificate',
          certs.client.certFile,
          '--client-key',
          certs.client.keyFile,
        ],
        {},
      ),
    ).toEqual({ code: 0, stdout: 'secure\n', stderr: '' });
  });

  it('refuses a server its CA did not sign, and a request with neither token nor certificate', async () => {
    expect((await logs(['web', '--server', url])).stderr).toMatch(/^kubelet-ts logs: cannot reach the agent at https:.*certificate/);
    // Exit 4: TLS failed (was 1 before the client commands had exit codes of their own).
    expect((await logs(['web', '--server', url, '--certificate-authority', certs.otherCa.certFile])).code).toBe(4);
    expect((await logs(['web', 'main', '--server', url, '--certificate-authority', certs.ca.certFile], {})).stderr).toMatch(
      /a client certificate signed by the client CA or a valid bearer token is required \(HTTP 401/,
    );
    expect((await logs(['web', '--server', url, '--certificate-authority', '/nonexistent/ca.pem'])).stderr).toMatch(
      /^kubelet-ts logs: cannot read \/nonexistent\/ca\.pem/,
    );
  });

  it('serves kubectl over TLS with its token', async () => {
    const answer = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(
        'kubectl',
        [
          'get',
          '--raw',
          '/containerLogs/default/web/main',
          '--server',
          url,
          '--certificate-authority',
          certs.ca.certFile,
          '--token',
          TOKEN,
        ],
        { timeout: 30_000, env: { ...process.env, KUBECONFIG: '/dev/null' } },
        (error, stdout, stderr) => resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr }),
      );
    });
    expect(answer).toEqual({ code: 0, stdout: 'secure\n', stderr: '' });
  });
});
