import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { silentLogger } from '@kubelet-ts/core';
import { RecordingSink } from '@kubelet-ts/conformance';
import { TestCertificates } from '@kubelet-ts/testkit';
import { buildProgram, normaliseFlagSpelling, optionsOf } from '../src/options.js';
import { wire } from '../src/wiring.js';

function parse(argv: readonly string[]) {
  const program = buildProgram();
  program.configureOutput({ writeErr: () => {}, writeOut: () => {} });
  program.parse(normaliseFlagSpelling(['--runtime', 'memory', ...argv]), { from: 'user' });
  return optionsOf(program);
}

let certs: TestCertificates;
beforeAll(async () => {
  certs = await TestCertificates.create();
});
afterAll(async () => {
  await certs.destroy();
});

describe('security flags', () => {
  it('refuse a non-loopback --address without --auth-token or --client-ca-file, naming the flags; --insecure-allow-unauthenticated is the way out', async () => {
    await expect(wire(parse(['--address', '0.0.0.0']), 'node-1', silentLogger)).rejects.toThrow(
      /--auth-token.*--client-ca-file.*--insecure-allow-unauthenticated/,
    );
    const wiring = await wire(parse(['--address', '0.0.0.0', '--insecure-allow-unauthenticated']), 'node-1', silentLogger);
    expect(wiring.server).toBeDefined();
    await wiring.close();
  });

  it('--allow-host-network: the loopback server then needs --auth-token too, and sources take host-network pods (issue 27 item 4)', async () => {
    expect(parse([]).allowHostNetwork).toBe(false);
    await expect(wire(parse(['--allow-host-network']), 'node-1', silentLogger)).rejects.toThrow(
      /--allow-host-network.*reaches this server on 127\.0\.0\.1.*--auth-token/,
    );
    const wiring = await wire(parse(['--allow-host-network', '--auth-token', 'secret', '--port', '0']), 'node-1', silentLogger);
    const sink = new RecordingSink();
    await wiring.server!.start(sink);
    const res = await fetch(`${wiring.server!.url}/container`, {
      method: 'POST',
      headers: { authorization: 'Bearer secret', 'content-type': 'application/json' },
      body: JSON.stringify({ id: 'exporter', hostNetwork: true, containers: [{ name: 'main', image: 'app:1' }] }),
    });
    expect(res.status).toBe(201);
    expect(sink.updates.at(-1)?.map((m) => [m.id, m.hostNetwork])).toEqual([['exporter', true]]);
    expect((await fetch(`${wiring.server!.url}/container/exporter`, { method: 'DELETE' })).status).toBe(401);
    await wiring.server!.close();
    await wiring.close();
  });

  it('--allowed-unsafe-sysctls: sources take a pod setting those, refuse another naming the flag; a node-wide sysctl is no value for it', async () => {
    expect(parse([]).allowedUnsafeSysctls).toBeUndefined();
    expect(
      parse(['--allowed-unsafe-sysctls', 'kernel.msg*,net.core.somaxconn', '--allowed-unsafe-sysctls', 'fs/mqueue/*']).allowedUnsafeSysctls,
    ).toEqual(['kernel.msg*', 'net.core.somaxconn', 'fs.mqueue.*']);
    for (const wrong of ['vm.swappiness', 'kernel.*', 'Net.Core'])
      expect(() => parse(['--allowed-unsafe-sysctls', wrong])).toThrow(/not a sysctl of a pod's network or IPC namespace/);
    const wiring = await wire(parse(['--allowed-unsafe-sysctls', 'kernel.msg*', '--port', '0']), 'node-1', silentLogger);
    const sink = new RecordingSink();
    await wiring.server!.start(sink);
    const post = (id: string, name: string) =>
      fetch(`${wiring.server!.url}/container`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          id,
          securityContext: { sysctls: [{ name, value: '65535' }] },
          containers: [{ name: 'main', image: 'app:1' }],
        }),
      });
    expect((await post('queue', 'kernel.msgmax')).status).toBe(201);
    expect(sink.updates.at(-1)?.map((m) => [m.id, m.securityContext?.sysctls])).toEqual([
      ['queue', [{ name: 'kernel.msgmax', value: '65535' }]],
    ]);
    const refused = await post('backlog', 'net.core.somaxconn');
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain('--allowed-unsafe-sysctls net.core.somaxconn');
    await wiring.server!.close();
    await wiring.close();
  });

  it('--tls-cert-file, --tls-private-key-file and --client-ca-file serve HTTPS', async () => {
    const options = parse([
      '--port',
      '0',
      '--tls-cert-file',
      certs.server.certFile,
      '--tls-private-key-file',
      certs.server.keyFile,
      '--client-ca-file',
      certs.ca.certFile,
    ]);
    const wiring = await wire(options, 'node-1', silentLogger);
    await wiring.server!.start(new RecordingSink());
    expect(wiring.server!.url).toMatch(/^https:/);
    await wiring.server!.close();
    await wiring.close();
  });

  it.each([
    [['--tls-cert-file', '/x.pem'], /--tls-cert-file and --tls-private-key-file go together/],
    [['--client-ca-file', '/ca.pem'], /--client-ca-file needs --tls-cert-file/],
    [['--etcd-servers', 'http://127.0.0.1:1', '--etcd-username', 'root'], /--etcd-username and --etcd-password/],
    [['--etcd-servers', 'http://127.0.0.1:1', '--etcd-certfile', '/c.pem'], /--etcd-certfile with --etcd-keyfile/],
    [['--manifest-url', 'https://127.0.0.1:1/', '--manifest-url-ca-file', '/nonexistent.pem'], /--manifest-url-ca-file \/nonexistent\.pem/],
  ])('%j is refused: %s', async (argv, message) => {
    await expect(wire(parse(argv), 'node-1', silentLogger)).rejects.toThrow(message);
  });

  it('takes the etcd password from KUBELET_TS_ETCD_PASSWORD', () => {
    process.env.KUBELET_TS_ETCD_PASSWORD = 'from-env';
    try {
      expect(parse(['--etcd-username', 'root']).etcdPassword).toBe('from-env');
    } finally {
      delete process.env.KUBELET_TS_ETCD_PASSWORD;
    }
  });
});
