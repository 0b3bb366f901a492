import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { EtcdServer, TestCertificates } from '@kubelet-ts/testkit';
import { AgentProcess } from './agent-process.js';

/** Issue 27: Node's DEP0123 (TLS to an IP) was a line of plain text in a log of JSON lines. */
describe('kubelet-ts CLI with etcd over TLS, reached by IP address', () => {
  let certs: TestCertificates;
  let etcd: EtcdServer;
  let agent: AgentProcess | undefined;

  beforeAll(async () => {
    certs = await TestCertificates.create();
    etcd = await EtcdServer.launch({ tls: { ca: certs.ca, server: certs.server, clientCa: certs.ca, client: certs.client } });
  });
  afterAll(async () => {
    agent?.kill();
    await agent?.exit;
    // destroy, not stop: its data directory goes too.
    await etcd?.destroy();
    await certs?.destroy();
  });

  it('says Node’s warnings as JSON log lines, with what they mean, and nothing on stderr', async () => {
    expect(new URL(etcd.endpoint).hostname).toBe('127.0.0.1');
    agent = new AgentProcess([
      '--runtime',
      'memory',
      '--hostname-override',
      'etcd-tls-node',
      '--etcd-servers',
      etcd.endpoint,
      '--etcd-cafile',
      certs.ca.certFile,
      '--etcd-certfile',
      certs.client.certFile,
      '--etcd-keyfile',
      certs.client.keyFile,
    ]);
    await agent.until(() => agent!.lines.some((l) => l['code'] === 'DEP0123'), 'the DEP0123 warning as a log line', 20_000);
    const warning = agent.lines.find((l) => l['code'] === 'DEP0123')!;
    expect(warning).toMatchObject({ level: 40, warning: 'DeprecationWarning' });
    expect(warning.msg).toContain('harmless: the certificate is still checked against the address');
    // And it runs: healthy once a pass has completed.
    const url = await agent.serverUrl();
    let healthy = false;
    for (let i = 0; i < 100 && !healthy; i++) {
      const res = await fetch(`${url}/healthz`);
      healthy = res.status === 200;
      if (!healthy) await new Promise((r) => setTimeout(r, 100));
    }
    expect(healthy).toBe(true);
    expect((await agent.stop('SIGTERM')).code).toBe(0);
    expect(agent.stderr.join('')).toBe('');
  });
});
