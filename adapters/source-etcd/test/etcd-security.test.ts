import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import type { KubeletEvent } from '@kubelet-ts/core';
import { TestCertificates, EtcdServer } from '@kubelet-ts/testkit';
import type { Etcd3 } from 'etcd3';
import { createEtcdClient } from '../src/etcd-client.js';
import { EtcdEventSink, EtcdManifestSource, type EtcdAuthOptions, type EtcdTlsOptions } from '../src/index.js';
import { RecordingLogger, RecordingSink, until } from './recording.js';

const manifest = JSON.stringify([{ version: 'v1beta1', id: 'web', containers: [{ name: 'main', image: 'app:1' }] }]);
const event: KubeletEvent = { type: 'ContainerStarted', time: 1_700_000_000_000, message: 'started' };
const PASSWORD = 'etcd-root-password';

let certs: TestCertificates;
beforeAll(async () => {
  certs = await TestCertificates.create();
});
afterAll(async () => {
  await certs.destroy();
});

/** Reads the key through a source with these settings: the set it delivered, or the error it reported. */
async function readThrough(
  endpoint: string,
  security: { tls?: EtcdTlsOptions; auth?: EtcdAuthOptions },
): Promise<{ ids: string[] } | { error: string }> {
  const sink = new RecordingSink();
  const source = new EtcdManifestSource({
    endpoints: [endpoint],
    hostname: 'node-1',
    requestTimeoutMs: 2000,
    retryInitialMs: 60_000,
    ...security,
  });
  try {
    await source.start(sink);
    await until(() => sink.updates.length > 0 || sink.errors.length > 0, 'a delivery or an error');
    const first = sink.updates[0];
    return first !== undefined ? { ids: first.map((m) => m.id) } : { error: sink.errors[0]!.message };
  } finally {
    await source.close();
  }
}

describe('etcd with TLS and --client-cert-auth', () => {
  let etcd: EtcdServer;
  let admin: Etcd3;
  const good = () => ({ caFile: certs.ca.certFile, certFile: certs.client.certFile, keyFile: certs.client.keyFile });

  beforeAll(async () => {
    etcd = await EtcdServer.launch({ tls: { ca: certs.ca, server: certs.server, clientCa: certs.ca, client: certs.client } });
    admin = createEtcdClient({ endpoints: [etcd.endpoint], requestTimeoutMs: 5000, tls: good() });
    await admin.put('/registry/hosts/node-1/kubelet').value(manifest);
  });
  afterAll(async () => {
    admin?.close();
    await etcd?.destroy();
  });

  it('the source reads with --etcd-cafile, --etcd-certfile and --etcd-keyfile', async () => {
    expect(etcd.endpoint).toMatch(/^https:/);
    expect(await readThrough(etcd.endpoint, { tls: good() })).toEqual({ ids: ['web'] });
  });

  it.each([
    ['no client certificate', () => ({ caFile: certs.ca.certFile })],
    ['an expired client certificate', () => ({ ...good(), certFile: certs.expiredClient.certFile, keyFile: certs.expiredClient.keyFile })],
    ['a client certificate of another CA', () => ({ ...good(), certFile: certs.otherClient.certFile, keyFile: certs.otherClient.keyFile })],
    ['trusting another CA than the server’s', () => ({ ...good(), caFile: certs.otherCa.certFile })],
  ])('the source is refused with %s, and says etcd is unavailable', async (_, tls) => {
    const read = await readThrough(etcd.endpoint, { tls: tls() });
    expect(read).toEqual({ error: expect.stringMatching(/unreachable|Unavailable|refused|certificate|handshake/i) });
  });

  it('the event sink writes with the same options', async () => {
    const sink = new EtcdEventSink({ endpoints: [etcd.endpoint], prefix: '/events-tls', tls: good(), retryInitialMs: 60_000 });
    sink.emit(event);
    await sink.flush();
    expect(sink.pending).toBe(0);
    await sink.close();
    expect((await admin.getAll().prefix('/events-tls').keys()).length).toBe(1);
  });

  it('a certificate without its key is refused when the client is made, naming the flags', () => {
    expect(() =>
      createEtcdClient({ endpoints: [etcd.endpoint], requestTimeoutMs: 1000, tls: { certFile: certs.client.certFile } }),
    ).toThrow(/--etcd-certfile with --etcd-keyfile/);
    expect(() => createEtcdClient({ endpoints: [etcd.endpoint], requestTimeoutMs: 1000, tls: { caFile: '/nonexistent.pem' } })).toThrow(
      /--etcd-cafile \/nonexistent\.pem/,
    );
  });
});

describe('etcd with authentication enabled (user root)', () => {
  let etcd: EtcdServer;
  let admin: Etcd3;
  const logger = new RecordingLogger();

  beforeAll(async () => {
    etcd = await EtcdServer.launch({ rootPassword: PASSWORD });
    admin = createEtcdClient({ endpoints: [etcd.endpoint], requestTimeoutMs: 5000, auth: { username: 'root', password: PASSWORD } });
    await admin.put('/registry/hosts/node-1/kubelet').value(manifest);
  });
  afterAll(async () => {
    admin?.close();
    await etcd?.destroy();
  });
  afterEach(() => {
    // Whatever was logged, the password never was.
    expect(JSON.stringify(logger.entries)).not.toContain(PASSWORD);
  });

  it('the source reads with --etcd-username/--etcd-password', async () => {
    expect(await readThrough(etcd.endpoint, { auth: { username: 'root', password: PASSWORD } })).toEqual({ ids: ['web'] });
  });

  it.each([
    ['no user', {}],
    ['a wrong password', { auth: { username: 'root', password: 'wrong' } }],
  ])('the source is refused with %s', async (_, security) => {
    const read = await readThrough(etcd.endpoint, security);
    expect(read).toEqual({
      error: expect.stringMatching(/user name is empty|authentication failed|invalid auth token|permission denied/i),
    });
  });

  it('the event sink writes with the same user, and logs no password', async () => {
    const sink = new EtcdEventSink({
      endpoints: [etcd.endpoint],
      prefix: '/events-auth',
      auth: { username: 'root', password: PASSWORD },
      retryInitialMs: 60_000,
      logger,
    });
    sink.emit(event);
    await sink.flush();
    expect(sink.pending).toBe(0);
    await sink.close();
    expect((await admin.getAll().prefix('/events-auth').keys()).length).toBe(1);
    const refused = new EtcdEventSink({
      endpoints: [etcd.endpoint],
      prefix: '/events-auth',
      auth: { username: 'root', password: 'wrong' },
      retryInitialMs: 60_000,
      logger,
    });
    refused.emit(event);
    await refused.flush();
    expect(refused.pending).toBe(1);
    await refused.close();
  });
});
