import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { connect } from 'node:net';
import { PassThrough } from 'node:stream';
import { Labels } from '@kubelet-ts/core';
import { createKubelet, type Kubelet } from '@kubelet-ts/runner';
import { MemoryRuntime } from '@kubelet-ts/runtime-memory';
import { ServerManifestSource, agentApiHandler } from '@kubelet-ts/source-server';
import { execMain } from '../src/exec.js';
import { portForwardMain } from '../src/port-forward.js';

const TOKEN = 'cli-exec-token-0123456789abcdef012345';
const env = { KUBELET_TS_AUTH_TOKEN: TOKEN };

/** `kubelet-ts exec`/`attach` in this process, stdin given, output kept. */
async function run(verb: 'exec' | 'attach', args: readonly string[], input?: string, during?: (stdin: PassThrough) => void) {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (d: Buffer) => (out += d.toString()));
  stderr.on('data', (d: Buffer) => (err += d.toString()));
  if (input !== undefined) stdin.end(input);
  const code = execMain(verb, args, { stdin, stdout, stderr, env });
  during?.(stdin);
  return { code: await code, stdout: out, stderr: err };
}

describe('kubelet-ts exec, attach and port-forward, against a running agent on the in-memory runtime (issue 23)', () => {
  let runtime: MemoryRuntime;
  let server: ServerManifestSource;
  let kubelet: Kubelet;
  let url: string;

  beforeAll(async () => {
    runtime = new MemoryRuntime();
    server = new ServerManifestSource({ port: 0, authToken: TOKEN });
    kubelet = createKubelet({ runtime, sources: [server], hostname: 'exec-node' });
    server.mount(agentApiHandler(kubelet));
    await kubelet.start();
    url = server.url;
    const post = (manifest: object) =>
      fetch(`${url}/container`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify(manifest),
      });
    expect(
      (await post({ version: 'v1beta1', id: 'web', containers: [{ name: 'main', image: 'busybox:1.36', ports: [{ containerPort: 80 }] }] }))
        .status,
    ).toBe(201);
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
  });

  afterAll(async () => {
    await kubelet.close();
  });

  it('exec: the output, and the exit code passed through; stdin with -i, its end seen by the process', async () => {
    expect(await run('exec', ['web', '--server', url, '--', 'sh', '-c', 'echo out; echo err >&2; exit 3'])).toEqual({
      code: 3,
      stdout: 'out\n',
      stderr: 'err\n',
    });
    expect(await run('exec', ['-i', 'web', '--server', url, '--', 'cat'], 'typed\n')).toEqual({ code: 0, stdout: 'typed\n', stderr: '' });
  });

  it('exec -t: the terminal size is sent first (stty size sees it)', async () => {
    const stdin = new PassThrough();
    const stdout = Object.assign(new PassThrough(), { columns: 120, rows: 30 });
    let out = '';
    stdout.on('data', (d: Buffer) => (out += d.toString()));
    const code = execMain('exec', ['-i', '-t', 'web', '--server', url, '--', 'sh', '-c', 'read x; stty size'], {
      stdin,
      stdout,
      stderr: new PassThrough(),
      env,
    });
    setTimeout(() => stdin.write('\n'), 50);
    expect(await code).toBe(0);
    expect(out).toBe('30 120\n');
  });

  it('names the containers when the pod has several, and says what the agent refused', async () => {
    expect(await run('exec', ['duo', '--server', url, '--', 'true'])).toEqual({
      code: 1,
      stdout: '',
      stderr: 'kubelet-ts exec: pod "default/duo" has 2 containers (a, b): name one, e.g. kubelet-ts exec duo -c a\n',
    });
    expect(await run('exec', ['duo', '-c', 'b', '--server', url, '--', 'true'])).toMatchObject({ code: 0 });
    expect((await run('exec', ['web', '-c', 'nope', '--server', url, '--', 'true'])).stderr).toBe(
      'kubelet-ts exec: container "nope" is not in pod "default/web" (its containers: main) (HTTP 404 from /exec/default/web/nope)\n',
    );
    expect((await run('exec', ['web', '--server', url, '--token', 'wrong', '--', 'true'])).stderr).toMatch(/HTTP 401/);
  });

  it('attach: what the main process prints until it ends', async () => {
    const id = runtime
      .snapshot()
      .find((c) => c.labels[Labels.manifestId] === 'duo' && c.labels[Labels.containerName] === 'a' && c.state === 'running')!.id;
    const attached = run('attach', ['duo', '-c', 'a', '--server', url]);
    await new Promise((resolve) => setTimeout(resolve, 100));
    runtime.print(id, 'stdout', 'hello from a\n');
    runtime.exit(id, 0);
    expect(await attached).toEqual({ code: 0, stdout: 'hello from a\n', stderr: '' });
  });

  it('port-forward: a local port carried to the pod port until stopped; a refused port said on stderr', async () => {
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    let out = '';
    let err = '';
    stdout.on('data', (d: Buffer) => (out += d.toString()));
    stderr.on('data', (d: Buffer) => (err += d.toString()));
    let stop: () => void = () => undefined;
    const stopped = new Promise((resolve) => (stop = () => resolve(undefined)));
    const forwarding = portForwardMain(['web', ':80', ':81', '--server', url], { stdout, stderr, env, stopped });
    while (!/-> 81\n/.test(out)) await new Promise((resolve) => setTimeout(resolve, 10));
    const [echo, refused] = [...out.matchAll(/127\.0\.0\.1:(\d+) -> /g)].map((m) => Number(m[1]));
    const socket = connect(echo!, '127.0.0.1');
    socket.write('ping');
    const [reply] = (await socket.take(1).toArray()) as Buffer[];
    expect(String(reply)).toBe('ping');
    socket.destroy();
    const closed = connect(refused!, '127.0.0.1');
    await new Promise((resolve) => closed.once('close', resolve));
    expect(err).toMatch(/error forwarding port 81 to pod default\/web: .*connection refused/);
    stop();
    expect(await forwarding).toBe(0);
  });
});
