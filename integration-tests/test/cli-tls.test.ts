import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { request } from 'node:https';
import { TestCertificates, type CertificatePair } from '@kubelet-ts/testkit';
import { AgentProcess } from './agent-process.js';

const TOKEN = 'tls-test-token-that-must-never-be-logged';

/** GET over HTTPS, trusting the test CA, with a client certificate (or none) and headers. */
function get(url: string, certs: TestCertificates, client?: CertificatePair, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { ca: certs.ca.cert, ...(client === undefined ? {} : { cert: client.cert, key: client.key }), headers },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/**
 * The CLI as a process serving HTTPS with client certificates and a token, logging at trace level:
 * a certificate of the CA or the token lets a request in, nothing else does (but /healthz), and no
 * secret reaches the log.
 */
describe('kubelet-ts CLI over TLS, with client certificates and a token', () => {
  let certs: TestCertificates;
  let agent: AgentProcess;
  let url: string;

  beforeAll(async () => {
    certs = await TestCertificates.create();
    agent = new AgentProcess([
      '--runtime',
      'memory',
      '--hostname-override',
      'tls-node',
      '--tls-cert-file',
      certs.server.certFile,
      '--tls-private-key-file',
      certs.server.keyFile,
      '--client-ca-file',
      certs.ca.certFile,
      '--auth-token',
      TOKEN,
      '--log-level',
      'trace',
    ]);
    url = (await agent.serverUrl()).replace(/^http:/, 'https:');
  });

  afterAll(async () => {
    agent.kill();
    await agent.exit;
    await certs.destroy();
  });

  it('serves HTTPS: the CA’s client certificate or the token lets a request in; none, an expired one or another CA’s does not', async () => {
    expect(url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(await get(`${url}/pods`, certs, certs.client)).toBe(200);
    expect(await get(`${url}/pods`, certs, undefined, { authorization: `Bearer ${TOKEN}` })).toBe(200);
    expect(await get(`${url}/pods`, certs)).toBe(401);
    expect(await get(`${url}/pods`, certs, certs.expiredClient)).toBe(401);
    expect(await get(`${url}/pods`, certs, certs.otherClient)).toBe(401);
    expect(await get(`${url}/healthz`, certs)).toBe(200);
  });

  it('logs no secret, not even at trace level', async () => {
    const { code } = await agent.stop('SIGTERM');
    expect(code).toBe(0);
    const output = [...agent.lines.map((l) => JSON.stringify(l)), ...agent.stderr].join('\n');
    expect(output).toContain('agent server listening');
    expect(output).not.toContain(TOKEN);
    const keyBody = certs.server.key.split('\n').filter((l) => l !== '' && !l.startsWith('-----'))[1]!;
    expect(output).not.toContain(keyBody);
  });
});
