import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { createKubelet, type Kubelet } from '@kubelet-ts/runner';
import { MemoryRuntime } from '@kubelet-ts/runtime-memory';
import { ServerManifestSource, agentApiHandler, type ServerManifestSourceOptions } from '@kubelet-ts/source-server';
import { TestCertificates } from '@kubelet-ts/testkit';
import { execMain } from '../src/exec.js';
import { getMain } from '../src/get.js';
import { logsMain } from '../src/logs.js';
import { portForwardMain } from '../src/port-forward.js';
import { runClient } from './run-client.js';

const TOKEN = 'cli-conn-token-0123456789abcdef012345';
const POD = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web' }, spec: { containers: [{ name: 'main', image: 'busybox:1.36' }] } };
const SHOP = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'db', namespace: 'shop' },
  spec: { containers: [{ name: 'pg', image: 'postgres:16' }] },
};

/** An agent with one pod in default and one in shop, behind `TOKEN` (and over TLS with `tls`). */
async function agent(tls?: ServerManifestSourceOptions['tls']) {
  const runtime = new MemoryRuntime();
  const server = new ServerManifestSource({ port: 0, authToken: TOKEN, ...(tls === undefined ? {} : { tls }) });
  const kubelet = createKubelet({ runtime, sources: [server], hostname: 'conn-node' });
  server.mount(agentApiHandler(kubelet));
  await kubelet.start();
  return { kubelet, server };
}

describe('connection settings shared by every client command: flags, kubeconfig, exit codes (issue 25)', () => {
  let certs: TestCertificates;
  let plain: { kubelet: Kubelet; server: ServerManifestSource };
  let secure: { kubelet: Kubelet; server: ServerManifestSource };
  let dir: string;
  let kubeconfig: string;
  /** `get pods -o name`, the names it printed or the error line. */
  const names = async (args: readonly string[], env: Record<string, string> = {}) => {
    const ran = await runClient(getMain, ['pods', '-o', 'name', ...args], { env });
    return { code: ran.code, out: ran.code === 0 ? ran.stdout : ran.stderr };
  };

  beforeAll(async () => {
    certs = await TestCertificates.create();
    plain = await agent();
    secure = await agent({ certFile: certs.server.certFile, keyFile: certs.server.keyFile, clientCaFile: certs.ca.certFile });
    for (const pod of [POD, SHOP]) {
      const answer = await fetch(`${plain.server.url}/container`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify(pod),
      });
      expect(answer.status).toBe(201);
    }
    await postOverTls(secure.server.url, certs.ca.cert);
    dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-kubeconfig-'));
    await writeFile(join(dir, 'ca.pem'), certs.ca.cert);
    kubeconfig = join(dir, 'config');
    const base64 = (text: string) => Buffer.from(text).toString('base64');
    await writeFile(
      kubeconfig,
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        'current-context': 'plain',
        clusters: [
          { name: 'plain', cluster: { server: plain.server.url } },
          // A path relative to the kubeconfig, as kubectl reads it.
          { name: 'secure', cluster: { server: secure.server.url, 'certificate-authority': 'ca.pem' } },
          { name: 'secure-data', cluster: { server: secure.server.url, 'certificate-authority-data': base64(certs.ca.cert) } },
          { name: 'insecure', cluster: { server: secure.server.url, 'insecure-skip-tls-verify': true } },
        ],
        users: [
          { name: 'token', user: { token: TOKEN } },
          { name: 'wrong', user: { token: 'not-the-token' } },
          { name: 'cert', user: { 'client-certificate-data': base64(certs.client.cert), 'client-key-data': base64(certs.client.key) } },
        ],
        contexts: [
          { name: 'plain', context: { cluster: 'plain', user: 'token' } },
          { name: 'shop', context: { cluster: 'plain', user: 'token', namespace: 'shop' } },
          { name: 'secure', context: { cluster: 'secure', user: 'token' } },
          { name: 'cert', context: { cluster: 'secure-data', user: 'cert' } },
          { name: 'insecure', context: { cluster: 'insecure', user: 'token' } },
          { name: 'wrong', context: { cluster: 'plain', user: 'wrong' } },
          { name: 'lost', context: { cluster: 'gone', user: 'token' } },
        ],
      }),
    );
  });

  afterAll(async () => {
    await plain.kubelet.close();
    await secure.kubelet.close();
    await certs.destroy();
    await rm(dir, { recursive: true, force: true });
  });

  it("reads the kubeconfig's current context, from --kubeconfig or the first file of $KUBECONFIG", async () => {
    await plain.kubelet.sync();
    expect(await names(['--kubeconfig', kubeconfig])).toEqual({ code: 0, out: 'pod/web\n' });
    expect(await names([], { KUBECONFIG: `${kubeconfig}:/nonexistent/second` })).toEqual({ code: 0, out: 'pod/web\n' });
    // A $KUBECONFIG file that is not there is skipped, as kubectl skips it: the default server.
    expect((await names(['--server', plain.server.url, '--token', TOKEN], { KUBECONFIG: '/nonexistent/config' })).code).toBe(0);
  });

  it("chooses a context with --context: its cluster's CA (a file or data), its user's token or client certificate, its namespace", async () => {
    await secure.kubelet.sync();
    expect(await names(['--kubeconfig', kubeconfig, '--context', 'shop'])).toEqual({ code: 0, out: 'pod/db\n' });
    expect(await names(['--kubeconfig', kubeconfig, '--context', 'secure'])).toEqual({ code: 0, out: 'pod/web\n' });
    expect(await names(['--kubeconfig', kubeconfig, '--context', 'cert'])).toEqual({ code: 0, out: 'pod/web\n' });
    expect(await names(['--kubeconfig', kubeconfig, '--context', 'insecure'])).toEqual({ code: 0, out: 'pod/web\n' });
  });

  it('lets flags win over the kubeconfig, field by field', async () => {
    expect(await names(['--kubeconfig', kubeconfig, '--context', 'wrong', '--token', TOKEN])).toEqual({ code: 0, out: 'pod/web\n' });
    expect(await names(['--kubeconfig', kubeconfig, '-n', 'shop'])).toEqual({ code: 0, out: 'pod/db\n' });
    expect((await names(['--kubeconfig', kubeconfig, '--server', 'http://127.0.0.1:1'])).code).toBe(2);
    // A CA by flag takes the place of skipping the check; skipping by flag drops the kubeconfig's CA.
    expect(
      (await names(['--kubeconfig', kubeconfig, '--context', 'insecure', '--certificate-authority', certs.otherCa.certFile])).code,
    ).toBe(4);
    expect(await names(['--kubeconfig', kubeconfig, '--context', 'secure', '--insecure-skip-tls-verify'])).toEqual({
      code: 0,
      out: 'pod/web\n',
    });
  });

  it('says in one line what is wrong with the kubeconfig: missing, not YAML, an unknown context or cluster (exit 1)', async () => {
    expect(await names(['--kubeconfig', join(dir, 'missing')])).toEqual({
      code: 1,
      out: `kubelet-ts get: cannot read the kubeconfig --kubeconfig ${join(dir, 'missing')}: ENOENT: no such file or directory, open '${join(dir, 'missing')}'\n`,
    });
    expect(await names(['--kubeconfig', kubeconfig, '--context', 'nope'])).toEqual({
      code: 1,
      out: `kubelet-ts get: context "nope" is not in the kubeconfig ${kubeconfig} (its contexts: plain, shop, secure, cert, insecure, wrong, lost)\n`,
    });
    expect(await names(['--kubeconfig', kubeconfig, '--context', 'lost'])).toEqual({
      code: 1,
      out: `kubelet-ts get: context "lost" in ${kubeconfig} names cluster "gone", which the file does not define\n`,
    });
    const notYaml = join(dir, 'not-yaml');
    await writeFile(notYaml, '- a list\n- not a config\n');
    expect(await names(['--kubeconfig', notYaml])).toEqual({
      code: 1,
      out: `kubelet-ts get: ${notYaml} is not a kubeconfig: not a YAML mapping\n`,
    });
    expect(await names(['--context', 'plain'])).toEqual({
      code: 1,
      out: 'kubelet-ts get: --context plain: there is no kubeconfig to find it in (give --kubeconfig or set $KUBECONFIG)\n',
    });
  });

  it('--insecure-skip-tls-verify reaches a TLS agent without its CA; without it, or with a CA that did not sign, TLS fails (exit 4)', async () => {
    const url = secure.server.url;
    expect(await names(['--server', url, '--token', TOKEN, '--insecure-skip-tls-verify'])).toEqual({ code: 0, out: 'pod/web\n' });
    const unknownCa = await names(['--server', url, '--token', TOKEN]);
    expect(unknownCa.code).toBe(4);
    expect(unknownCa.out).toMatch(/^kubelet-ts get: cannot reach the agent at https:\/\/127\.0\.0\.1:\d+: TLS failed: .*certificate.*\n$/);
    expect((await names(['--server', url, '--token', TOKEN, '--certificate-authority', certs.otherCa.certFile])).code).toBe(4);
    expect(await names(['--server', url, '--insecure-skip-tls-verify', '--certificate-authority', certs.ca.certFile])).toEqual({
      code: 1,
      out: 'kubelet-ts get: --insecure-skip-tls-verify and --certificate-authority contradict each other: give one\n',
    });
  });

  it('exits 2 when the agent cannot be reached, 3 when it refuses the credentials, each in one line', async () => {
    const down = await names(['--server', 'http://127.0.0.1:1']);
    expect(down.code).toBe(2);
    expect(down.out).toMatch(/^kubelet-ts get: cannot reach the agent at http:\/\/127\.0\.0\.1:1: connect ECONNREFUSED .*\n$/);
    const refused = await names(['--server', plain.server.url, '--token', 'wrong']);
    expect(refused.code).toBe(3);
    expect(refused.out).toMatch(
      /^kubelet-ts get: .*\(HTTP 401 from \/pods\): check --token, the client certificate, or the kubeconfig's user\n$/,
    );
  });

  it('gives logs, exec, attach and port-forward the same codes', async () => {
    const io = () => ({ stdin: new PassThrough(), stdout: new PassThrough(), stderr: new PassThrough(), env: {} });
    const url = plain.server.url;
    expect(await logsMain(['web', '--server', url, '--token', 'wrong'], io())).toBe(3);
    expect(await logsMain(['web', '--server', 'http://127.0.0.1:1'], io())).toBe(2);
    expect(await logsMain(['web', '--kubeconfig', kubeconfig], io())).toBe(0);
    expect(await execMain('exec', ['web', '--server', url, '--token', 'wrong', '--', 'true'], io())).toBe(3);
    expect(await execMain('attach', ['web', '--server', secure.server.url, '--token', TOKEN], io())).toBe(4);
    const stopped = Promise.resolve();
    expect(await portForwardMain(['web', ':80', '--server', url, '--token', 'wrong'], { ...io(), stopped })).toBe(3);
    expect(await portForwardMain(['nope', ':80', '--kubeconfig', kubeconfig], { ...io(), stopped })).toBe(1);
  });

  it('runs as `kubelet-ts get`, the exit code the process exit code; the help says the codes', async () => {
    const bin = fileURLToPath(new URL('../bin/kubelet-ts.js', import.meta.url));
    const run = (args: readonly string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
        execFile(
          process.execPath,
          [bin, ...args],
          { timeout: 30_000, env: { ...process.env, KUBECONFIG: kubeconfig } },
          (error, stdout, stderr) =>
            resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr }),
        );
      });
    expect(await run(['get', 'pods', '-o', 'name'])).toEqual({ code: 0, stdout: 'pod/web\n', stderr: '' });
    expect((await run(['get', 'pods', '--context', 'wrong'])).code).toBe(3);
    const help = await run(['get', '--help']);
    expect(help.stdout).toContain(
      'Exit codes:\n  0  done\n  1  a usage error, or anything else that went wrong\n  2  the agent cannot be reached',
    );
    expect(help.stdout).toContain('--kubeconfig <path>');
    expect((await run(['describe', '--help'])).stdout).toContain('4  TLS failed');
  });
});

describe('the launcher, bin/kubelet-ts', () => {
  let certs: TestCertificates;
  let secure: { kubelet: Kubelet; server: ServerManifestSource };
  const launcher = fileURLToPath(new URL('../bin/kubelet-ts', import.meta.url));
  /** `kubelet-ts args` as a shell runs it, its environment `process.env` less NODE_EXTRA_CA_CERTS, plus `env`. */
  const run = (args: readonly string[], env: Record<string, string> = {}) => {
    const { NODE_EXTRA_CA_CERTS: _, ...base } = process.env;
    return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(launcher, [...args], { timeout: 30_000, env: { ...base, KUBECONFIG: '/dev/null', ...env } }, (error, stdout, stderr) =>
        resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr }),
      );
    });
  };

  beforeAll(async () => {
    certs = await TestCertificates.create();
    secure = await agent({ certFile: certs.server.certFile, keyFile: certs.server.keyFile, clientCaFile: certs.ca.certFile });
    await postOverTls(secure.server.url, certs.ca.cert);
    await secure.kubelet.sync();
  });

  afterAll(async () => {
    await secure.kubelet.close();
    await certs.destroy();
  });

  it("trusts NODE_EXTRA_CA_CERTS's CAs as Node does, read by a client command only when it connects over TLS", async () => {
    const get = ['get', 'pods', '-o', 'name', '--server', secure.server.url, '--token', TOKEN];
    expect(await run(get, { NODE_EXTRA_CA_CERTS: certs.ca.certFile })).toEqual({ code: 0, stdout: 'pod/web\n', stderr: '' });
    // Without it the agent's CA is unknown: exit 4.
    expect((await run(get)).code).toBe(4);
    // A CA given replaces Node's and the extra ones, as Node's `ca` option does.
    expect((await run([...get, '--certificate-authority', certs.otherCa.certFile], { NODE_EXTRA_CA_CERTS: certs.ca.certFile })).code).toBe(
      4,
    );
    // A file that cannot be read is left out with Node's warning.
    const missing = await run(get, { NODE_EXTRA_CA_CERTS: '/nonexistent/ca.pem' });
    expect(missing.code).toBe(4);
    expect(missing.stderr).toContain('Warning: Ignoring extra certs from `/nonexistent/ca.pem`, load failed: ENOENT');
  });

  it('runs the agent and its other commands on the same CLI', async () => {
    const help = await run(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--runtime');
    const convert = await run(['convert', '--help']);
    expect(convert.code).toBe(0);
  });
});

/** Posts the pods to a TLS agent, trusting the test CA. */
async function postOverTls(url: string, ca: string): Promise<void> {
  const { request } = await import('node:https');
  for (const pod of [POD, SHOP]) {
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        `${url}/container`,
        { method: 'POST', ca, headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify(pod));
    });
    expect(status).toBe(201);
  }
}
