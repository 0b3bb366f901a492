import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { RecordingSink } from '@kubelet-ts/conformance';
import { TestCertificates, type CertificatePair } from '@kubelet-ts/testkit';
import { HttpManifestSource, type HttpSourceTlsOptions } from '../src/index.js';

const body = JSON.stringify({ version: 'v1beta1', id: 'web', containers: [{ name: 'main', image: 'app:1' }] });
let certs: TestCertificates;
const servers: Server[] = [];
let source: HttpManifestSource | undefined;

beforeAll(async () => {
  certs = await TestCertificates.create();
});
afterAll(async () => {
  await certs.destroy();
});
afterEach(async () => {
  await source?.close();
  source = undefined;
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

async function listen(server: Server): Promise<string> {
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A manifest server over HTTPS that requires a client certificate signed by the test CA. */
const httpsManifestServer = (serverPair: CertificatePair = certs.server, handler?: (req: IncomingMessage, res: ServerResponse) => void) =>
  listen(
    createHttpsServer(
      { cert: serverPair.cert, key: serverPair.key, ca: certs.ca.cert, requestCert: true, rejectUnauthorized: true },
      handler ?? ((_req, res) => res.end(body)),
    ),
  ).then((host) => `https://${host}/manifest`);

async function poll(url: string, tls?: HttpSourceTlsOptions, headers?: Record<string, string>): Promise<RecordingSink> {
  const sink = new RecordingSink();
  source = new HttpManifestSource({
    url,
    checkFrequencyMs: 60_000,
    timeoutMs: 3000,
    ...(tls === undefined ? {} : { tls }),
    ...(headers === undefined ? {} : { headers }),
  });
  await source.start(sink);
  return sink;
}

describe('--manifest-url over https://', () => {
  const good = (): HttpSourceTlsOptions => ({ caFile: certs.ca.certFile, certFile: certs.client.certFile, keyFile: certs.client.keyFile });

  it('reads with --manifest-url-ca-file and a client certificate the server trusts', async () => {
    const sink = await poll(await httpsManifestServer(), good());
    expect(sink.errors).toEqual([]);
    expect(sink.updates.map((u) => u.map((m) => m.id))).toEqual([['web']]);
  });

  it.each([
    ['a server certificate of another CA', () => certs.otherServer, () => good()],
    ['an expired server certificate', () => certs.expiredServer, () => good()],
    ['no client certificate', () => certs.server, () => ({ caFile: certs.ca.certFile })],
    [
      'an expired client certificate',
      () => certs.server,
      () => ({ ...good(), certFile: certs.expiredClient.certFile, keyFile: certs.expiredClient.keyFile }),
    ],
    [
      'a client certificate of another CA',
      () => certs.server,
      () => ({ ...good(), certFile: certs.otherClient.certFile, keyFile: certs.otherClient.keyFile }),
    ],
  ])('refuses %s: Unavailable, nothing delivered', async (_, serverPair, tls) => {
    const sink = await poll(await httpsManifestServer(serverPair()), tls());
    expect(sink.updates).toEqual([]);
    expect(sink.errors.map((e) => e.code)).toEqual(['Unavailable']);
  });

  it('names the flag of a file it cannot read, and of a half-given pair', () => {
    expect(() => new HttpManifestSource({ url: 'https://127.0.0.1/', tls: { caFile: '/nonexistent.pem' } })).toThrow(
      /--manifest-url-ca-file \/nonexistent\.pem/,
    );
    expect(() => new HttpManifestSource({ url: 'https://127.0.0.1/', tls: { certFile: certs.client.certFile } })).toThrow(
      /--manifest-url-cert-file with --manifest-url-key-file/,
    );
  });
});

describe('redirects with --manifest-url-header', () => {
  it('are not followed to another origin: the header never reaches it', async () => {
    const seen: Array<string | undefined> = [];
    const other = await listen(createHttpServer((req, res) => (seen.push(req.headers.authorization), res.end(body))));
    const first = await listen(createHttpServer((_req, res) => res.writeHead(302, { location: `http://${other}/manifest` }).end()));
    const sink = await poll(`http://${first}/manifest`, undefined, { Authorization: 'Bearer url-secret' });
    expect(seen).toEqual([]);
    expect(sink.updates).toEqual([]);
    expect(sink.errors.map((e) => [e.code, e.message])).toEqual([
      ['Unavailable', expect.stringMatching(/redirected to another origin .*not followed/)],
    ]);
  });

  it('are followed within the origin, with the header', async () => {
    const seen: Array<string | undefined> = [];
    const host = await listen(
      createHttpServer((req, res) => {
        if (req.url === '/old') return void res.writeHead(301, { location: '/manifest' }).end();
        seen.push(req.headers.authorization);
        res.end(body);
      }),
    );
    const sink = await poll(`http://${host}/old`, undefined, { Authorization: 'Bearer url-secret' });
    expect(seen).toEqual(['Bearer url-secret']);
    expect(sink.updates.map((u) => u.map((m) => m.id))).toEqual([['web']]);
  });

  it('without headers, are followed to another origin as before', async () => {
    const other = await listen(createHttpServer((_req, res) => res.end(body)));
    const first = await listen(createHttpServer((_req, res) => res.writeHead(302, { location: `http://${other}/manifest` }).end()));
    const sink = await poll(`http://${first}/manifest`);
    expect(sink.updates.map((u) => u.map((m) => m.id))).toEqual([['web']]);
  });
});
