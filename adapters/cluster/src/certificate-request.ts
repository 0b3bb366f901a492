import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import { rename, writeFile } from 'node:fs/promises';
import type { CertificatesV1Api, V1CertificateSigningRequest } from '@kubernetes/client-node';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as never);

/** The node's keys: ECDSA P-256 (what kubeadm's and the kubelet's own are since 1.x). */
export const ECDSA = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

export function newKeys(): Promise<webcrypto.CryptoKeyPair> {
  return webcrypto.subtle.generateKey(ECDSA, true, ['sign', 'verify']) as Promise<webcrypto.CryptoKeyPair>;
}

/** A private key as PEM (PKCS#8). */
export async function pemKey(key: webcrypto.CryptoKey): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key));
  return `-----BEGIN PRIVATE KEY-----\n${der
    .toString('base64')
    .replace(/(.{64})/g, '$1\n')
    .replace(/\n$/, '')}\n-----END PRIVATE KEY-----\n`;
}

/** Writes a file whole or not at all (a reader never sees half of it); key files readable by the owner only. */
export async function writeWhole(path: string, text: string, mode: number): Promise<void> {
  const temp = `${path}.${process.pid}.tmp`;
  await writeFile(temp, text, { mode });
  await rename(temp, path);
}

/** What a node asks a signer for: its identity (`system:node:<name>` in `system:nodes`), and the signer's terms. */
export interface NodeCertificateRequest {
  readonly nodeName: string;
  /** `kubernetes.io/kubelet-serving` or `kubernetes.io/kube-apiserver-client-kubelet`. */
  readonly signerName: string;
  readonly usages: readonly string[];
  /** A serving certificate's names; none for a client certificate. */
  readonly sans?: readonly x509.JsonGeneralName[];
}

/** An issued certificate and its key (PEM), and the request's name. */
export interface IssuedCertificate {
  readonly name: string;
  readonly certificate: string;
  readonly key: string;
}

/**
 * One CertificateSigningRequest: a new key, the request posted with `api`'s credentials, then read
 * back every `pollMs` until the signer issued it (resolves), an approver denied it or the signer
 * failed it (rejects, saying which and why), or `closed()` (undefined). `requested` is told the
 * request's name as soon as it is posted.
 */
export async function requestNodeCertificate(
  api: CertificatesV1Api,
  request: NodeCertificateRequest,
  wait: { readonly pollMs: number; readonly closed: () => boolean; readonly requested?: (name: string) => void },
): Promise<IssuedCertificate | undefined> {
  const keys = await newKeys();
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: `O=system:nodes, CN=system:node:${request.nodeName}`,
    keys,
    signingAlgorithm: ECDSA,
    extensions: request.sans === undefined ? [] : [new x509.SubjectAlternativeNameExtension([...request.sans])],
  });
  const created = await api.createCertificateSigningRequest({
    body: {
      apiVersion: 'certificates.k8s.io/v1',
      kind: 'CertificateSigningRequest',
      metadata: { generateName: 'csr-' },
      spec: {
        request: Buffer.from(csr.toString('pem')).toString('base64'),
        signerName: request.signerName,
        usages: [...request.usages],
      },
    },
  });
  const name = created.metadata!.name!;
  wait.requested?.(name);
  while (!wait.closed()) {
    const read: V1CertificateSigningRequest = await api.readCertificateSigningRequest({ name });
    const refused = read.status?.conditions?.find((c) => (c.type === 'Denied' || c.type === 'Failed') && c.status === 'True');
    if (refused !== undefined)
      throw new Error(
        `certificate signing request ${name} was ${refused.type.toLowerCase()}: ${refused.reason ?? ''} ${refused.message ?? ''}`.trim(),
      );
    const certificate = read.status?.certificate;
    if (certificate !== undefined && certificate !== '')
      return { name, certificate: Buffer.from(certificate, 'base64').toString('utf8'), key: await pemKey(keys.privateKey) };
    await new Promise((r) => setTimeout(r, wait.pollMs));
  }
  return undefined;
}
