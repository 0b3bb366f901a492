import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSecureContext } from 'node:tls';
import { selfSignedServingCertificate } from '../src/index.js';

describe('selfSignedServingCertificate: the kubelet’s serving certificate without --rotate-server-certificates', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-cert-dir-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('names the node and its addresses, serves server auth for a year, and keeps its key to the owner', async () => {
    const now = Date.parse('2026-12-06T12:00:00Z');
    const files = await selfSignedServingCertificate(join(dir, 'pki'), { nodeName: 'node-a', addresses: ['10.1.2.3'] }, now);
    expect(files).toEqual({ certFile: join(dir, 'pki', 'kubelet.crt'), keyFile: join(dir, 'pki', 'kubelet.key') });
    const cert = new X509Certificate(await readFile(files.certFile));
    expect(cert.subjectAltName).toBe('DNS:node-a, IP Address:10.1.2.3');
    expect(cert.subject).toBe(`CN=node-a@${now / 1000}`);
    expect(cert.issuer).toBe(cert.subject);
    expect(cert.ca).toBe(false);
    expect(cert.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
    expect(Date.parse(cert.validTo) - now).toBeGreaterThan(364 * 24 * 3600 * 1000);
    expect((await stat(files.keyFile)).mode & 0o777).toBe(0o600);
    // A pair TLS can serve: the key is the certificate's.
    const key = await readFile(files.keyFile);
    expect(() => createSecureContext({ cert: cert.toString(), key })).not.toThrow();
    expect(cert.checkPrivateKey((await import('node:crypto')).createPrivateKey(key))).toBe(true);
  });

  it('is kept across restarts while it serves, and made again when the addresses change or it is spoilt', async () => {
    const names = { nodeName: 'node-a', addresses: ['10.1.2.3'] };
    const first = await selfSignedServingCertificate(dir, names);
    const pem = await readFile(first.certFile, 'utf8');
    await selfSignedServingCertificate(dir, names);
    expect(await readFile(first.certFile, 'utf8')).toBe(pem);

    await selfSignedServingCertificate(dir, { ...names, addresses: ['10.9.9.9'] });
    const moved = await readFile(first.certFile, 'utf8');
    expect(moved).not.toBe(pem);
    expect(new X509Certificate(moved).subjectAltName).toBe('DNS:node-a, IP Address:10.9.9.9');

    await writeFile(first.certFile, 'not a certificate');
    await selfSignedServingCertificate(dir, names);
    expect(new X509Certificate(await readFile(first.certFile)).subjectAltName).toBe('DNS:node-a, IP Address:10.1.2.3');
  });

  it('is made again when less than a tenth of its life is left', async () => {
    const names = { nodeName: 'node-a', addresses: ['10.1.2.3'] };
    const made = Date.parse('2026-01-01T00:00:00Z');
    const files = await selfSignedServingCertificate(dir, names, made);
    const pem = await readFile(files.certFile, 'utf8');
    await selfSignedServingCertificate(dir, names, made + 200 * 24 * 3600 * 1000);
    expect(await readFile(files.certFile, 'utf8')).toBe(pem);
    await selfSignedServingCertificate(dir, names, made + 340 * 24 * 3600 * 1000);
    expect(await readFile(files.certFile, 'utf8')).not.toBe(pem);
  });
});
