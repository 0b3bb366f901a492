import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { join } from 'node:path';
import type { Logger } from '@kubelet-ts/core';
import { CertificatesV1Api, type KubeConfig } from '@kubernetes/client-node';
import * as x509 from '@peculiar/x509';
import { Retry, apiStatus } from './api-errors.js';
import { ECDSA, newKeys, pemKey, requestNodeCertificate, writeWhole } from './certificate-request.js';

const YEAR_MS = 365 * 24 * 3600 * 1000;

/** The files the agent's server serves from (`--tls-cert-file`, `--tls-private-key-file` when not given). */
export interface ServingFiles {
  readonly certFile: string;
  readonly keyFile: string;
}

/** What the node is reached by: its name and addresses, the serving certificate's SANs. */
export interface ServingNames {
  readonly nodeName: string;
  /** IP addresses (the node's InternalIP) and DNS names beside the node name. */
  readonly addresses: readonly string[];
}

/** The SANs of `names`, as the certificate carries them: the node's name (DNS), then each address. */
function sans(names: ServingNames): x509.JsonGeneralName[] {
  const all = [names.nodeName, ...names.addresses];
  return [...new Set(all)].map((n) => (isIP(n) === 0 ? { type: 'dns', value: n } : { type: 'ip', value: n }));
}

/**
 * Whether the certificate in `certFile` (with a key beside it) can go on being served: it parses,
 * is valid for at least a tenth of its life more, and names every SAN of `names`.
 */
async function stillServes(files: ServingFiles, names: ServingNames, now: number): Promise<boolean> {
  try {
    const [pem] = await Promise.all([readFile(files.certFile, 'utf8'), readFile(files.keyFile)]);
    const cert = new x509.X509Certificate(pem);
    const life = cert.notAfter.getTime() - cert.notBefore.getTime();
    if (cert.notAfter.getTime() - now < life / 10) return false;
    const san = cert.getExtension(x509.SubjectAlternativeNameExtension);
    const has = new Set((san?.names.toJSON() ?? []).map((n) => `${n.type}:${n.value}`));
    return sans(names).every((n) => has.has(`${n.type}:${n.value}`));
  } catch {
    return false;
  }
}

/**
 * The kubelet's serving certificate without `--rotate-server-certificates`: self-signed, in
 * `certDir` as `kubelet.crt` and `kubelet.key`, for the node's name and addresses, valid a year.
 * Kept across restarts while it is valid and names them all; made again otherwise.
 */
export async function selfSignedServingCertificate(certDir: string, names: ServingNames, now = Date.now()): Promise<ServingFiles> {
  const files = { certFile: join(certDir, 'kubelet.crt'), keyFile: join(certDir, 'kubelet.key') };
  if (await stillServes(files, names, now)) return files;
  await mkdir(certDir, { recursive: true, mode: 0o700 });
  const keys = await newKeys();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: Buffer.from(webcrypto.getRandomValues(new Uint8Array(16)))
      .toString('hex')
      .replace(/^[89a-f]/, '1'),
    // The kubelet's: `<host>@<unix seconds>`.
    name: `CN=${names.nodeName}@${Math.floor(now / 1000)}`,
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + YEAR_MS),
    keys,
    signingAlgorithm: ECDSA,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension(sans(names)),
    ],
  });
  await writeWhole(files.keyFile, await pemKey(keys.privateKey), 0o600);
  await writeWhole(files.certFile, cert.toString('pem'), 0o644);
  return files;
}

/** What `ServingCertificateRequester` needs: the cluster, the names to certify, where the pair goes, and how often to look. */
export interface ServingCertificateRequestOptions extends ServingNames {
  readonly kubeConfig: KubeConfig;
  /** Where the issued pair is written (`kubelet-server-current.crt`/`.key`). */
  readonly certDir: string;
  readonly logger: Logger;
  /** How often the request is read back while it waits to be approved and issued. Default 2 s. */
  readonly pollMs?: number;
}

/**
 * The kubelet's `--rotate-server-certificates`: a serving certificate the cluster issues. A key is
 * made, a CertificateSigningRequest for `kubernetes.io/kubelet-serving` posted as
 * `system:node:<name>` in `system:nodes` with the node's names (the signer's rules), and once an
 * approver approved it and the signer signed it, the pair is written to `certDir`; again when 80 % of
 * its life is gone. Until the first is issued the agent serves a self-signed one in the same files
 * (the kubelet serves none), so that the server starts; the server reloads the files when they change.
 * Nothing approves kubelet-serving requests by itself: an operator (`kubectl certificate approve`)
 * or an approver of theirs does.
 */
export class ServingCertificateRequester {
  readonly files: ServingFiles;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly api: CertificatesV1Api;

  constructor(private readonly options: ServingCertificateRequestOptions) {
    this.files = {
      certFile: join(options.certDir, 'kubelet-server-current.crt'),
      keyFile: join(options.certDir, 'kubelet-server-current.key'),
    };
    this.api = options.kubeConfig.makeApiClient(CertificatesV1Api);
  }

  /** Writes a self-signed pair unless one the cluster issued still serves; then requests in the background. */
  async start(): Promise<ServingFiles> {
    const issued = await this.issuedUntil();
    if (issued === undefined) {
      const temporary = await selfSignedServingCertificate(this.options.certDir, this.options);
      await writeWhole(this.files.keyFile, await readFile(temporary.keyFile, 'utf8'), 0o600);
      await writeWhole(this.files.certFile, await readFile(temporary.certFile, 'utf8'), 0o644);
      void this.request();
    } else this.renewAt(issued);
    return this.files;
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
  }

  /** When the pair in `files` (one the cluster issued, not self-signed) should be renewed; undefined when there is none. */
  private async issuedUntil(): Promise<number | undefined> {
    try {
      const cert = new x509.X509Certificate(await readFile(this.files.certFile, 'utf8'));
      if (cert.subject === cert.issuer || !(await stillServes(this.files, this.options, Date.now()))) return undefined;
      const life = cert.notAfter.getTime() - cert.notBefore.getTime();
      return cert.notBefore.getTime() + life * 0.8;
    } catch {
      return undefined;
    }
  }

  private renewAt(when: number): void {
    if (this.closed) return;
    // setTimeout holds at most ~24.8 days: wake up then and look again.
    const wait = Math.min(Math.max(0, when - Date.now()), 2 ** 31 - 1);
    this.timer = setTimeout(() => {
      if (Date.now() >= when) void this.request();
      else this.renewAt(when);
    }, wait);
    this.timer.unref();
  }

  /** Posts a request and waits for its certificate; retried with back-off until it has one or is closed. */
  async request(): Promise<void> {
    const { logger } = this.options;
    const retry = new Retry(1_000, 60_000);
    while (!this.closed) {
      try {
        const issued = await requestNodeCertificate(
          this.api,
          {
            nodeName: this.options.nodeName,
            signerName: 'kubernetes.io/kubelet-serving',
            usages: ['digital signature', 'server auth'],
            sans: sans(this.options),
          },
          {
            pollMs: this.options.pollMs ?? 2_000,
            closed: () => this.closed,
            requested: (csr) =>
              logger.info({ csr }, 'serving certificate requested (kubernetes.io/kubelet-serving): waiting for its approval'),
          },
        );
        if (issued === undefined) return;
        const { name, certificate: pem } = issued;
        await writeWhole(this.files.keyFile, issued.key, 0o600);
        await writeWhole(this.files.certFile, pem, 0o644);
        const cert = new x509.X509Certificate(pem);
        logger.info({ csr: name, notAfter: cert.notAfter.toISOString() }, 'serving certificate issued by the cluster');
        this.renewAt(cert.notBefore.getTime() + (cert.notAfter.getTime() - cert.notBefore.getTime()) * 0.8);
        return;
      } catch (error) {
        const delay = retry.next();
        logger.warn(
          { err: error, retryInMs: delay, status: apiStatus(error) },
          `cannot get a serving certificate: ${(error as Error).message}`,
        );
        await retry.wait(delay, () => this.closed);
      }
    }
  }
}
