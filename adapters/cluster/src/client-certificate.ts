import 'reflect-metadata';
import { mkdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Logger } from '@kubelet-ts/core';
import { CertificatesV1Api, KubeConfig } from '@kubernetes/client-node';
import * as x509 from '@peculiar/x509';
import { Retry, apiStatus } from './api-errors.js';
import { requestNodeCertificate, writeWhole } from './certificate-request.js';

/** The signer of a node's client certificates, and what they may be used for. */
const CLIENT_SIGNER = 'kubernetes.io/kube-apiserver-client-kubelet';
const CLIENT_USAGES = ['digital signature', 'client auth'];

/** What `ClientCertificate` needs: the bootstrap kubeconfig, where the node's kubeconfig and certificate go, and the node's name. */
export interface ClientCertificateOptions {
  /** `--bootstrap-kubeconfig`: a kubeconfig whose credentials may ask for a node's client certificate (a bootstrap token). */
  readonly bootstrapKubeconfigPath: string;
  /** `--kubeconfig`: where the node's own kubeconfig is written (and read, when it is there). */
  readonly kubeconfigPath: string;
  /** `--cert-dir`: where the certificate and its key are written, `kubelet-client-current.pem`. */
  readonly certDir: string;
  readonly nodeName: string;
  readonly logger: Logger;
  /** How often a request is read back while it waits to be approved and signed. Default 1 s. */
  readonly pollMs?: number;
}

/**
 * The kubelet's TLS bootstrap (`--bootstrap-kubeconfig`, `--rotate-certificates`): a node that has no
 * client certificate of its own asks for one with a bootstrap token's credentials (a
 * `kubernetes.io/kube-apiserver-client-kubelet` CSR as `system:node:<name>` in `system:nodes`, which
 * the controller-manager approves where `kubeadm init` bound the token's group to it), writes it with
 * its key to `--cert-dir/kubelet-client-current.pem`, and writes `--kubeconfig` naming it (the
 * cluster as the bootstrap kubeconfig names it). From then on the node is a node: the Node authorizer
 * and NodeRestriction limit it. With rotation, it asks again with its own certificate when 80 % of
 * its life is gone (`selfnodeclient`) and writes the new one in place; the client reads the file at
 * each connection.
 */
export class ClientCertificate {
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  readonly pemFile: string;

  constructor(private readonly options: ClientCertificateOptions) {
    this.pemFile = join(options.certDir, 'kubelet-client-current.pem');
  }

  /**
   * Resolves once `--kubeconfig` holds a node's credentials: at once when it is there and its client
   * certificate is valid for a tenth of its life more (or it has none of ours: it is the operator's),
   * else after a certificate was asked for, approved and signed (asked again with back-off until then).
   */
  async ensure(): Promise<void> {
    if (await this.usable()) return;
    const bootstrap = new KubeConfig();
    try {
      bootstrap.loadFromFile(this.options.bootstrapKubeconfigPath);
    } catch (error) {
      throw new Error(`--bootstrap-kubeconfig ${this.options.bootstrapKubeconfigPath}: ${(error as Error).message}`, { cause: error });
    }
    await this.obtain(bootstrap, 'bootstrap');
    await this.writeKubeconfig(bootstrap);
  }

  /** Renews the certificate at 80 % of its life, with the node's own credentials (`--rotate-certificates`). */
  async startRotation(): Promise<void> {
    const until = await this.renewalTime();
    if (until !== undefined) this.renewAt(until);
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
  }

  /** Whether the kubeconfig there can be used as it is. */
  private async usable(): Promise<boolean> {
    const config = new KubeConfig();
    try {
      config.loadFromFile(this.options.kubeconfigPath);
    } catch {
      return false;
    }
    const user = config.getCurrentUser();
    if (user === null) return false;
    if (user.certFile !== this.pemFile) return user.certFile !== undefined || user.certData !== undefined || user.token !== undefined;
    const until = await this.renewalTime(0.9);
    return until !== undefined && until > Date.now();
  }

  /** When (ms) `fraction` of the certificate's life in the pem file is gone; undefined when there is none. */
  private async renewalTime(fraction = 0.8): Promise<number | undefined> {
    try {
      const cert = new x509.X509Certificate(await readFile(this.pemFile, 'utf8'));
      return cert.notBefore.getTime() + (cert.notAfter.getTime() - cert.notBefore.getTime()) * fraction;
    } catch {
      return undefined;
    }
  }

  private renewAt(when: number): void {
    if (this.closed) return;
    // setTimeout holds at most ~24.8 days: wake up then and look again.
    this.timer = setTimeout(
      () => {
        if (Date.now() < when) return this.renewAt(when);
        const own = new KubeConfig();
        own.loadFromFile(this.options.kubeconfigPath);
        void this.obtain(own, 'renewal').then(async () => {
          const next = await this.renewalTime();
          if (next !== undefined) this.renewAt(next);
        });
      },
      Math.min(Math.max(0, when - Date.now()), 2 ** 31 - 1),
    );
    this.timer.unref();
  }

  /** Asks for a certificate with `credentials` until one is issued (or closed), and writes it with its key. */
  private async obtain(credentials: KubeConfig, why: 'bootstrap' | 'renewal'): Promise<void> {
    const { logger, nodeName } = this.options;
    const api = credentials.makeApiClient(CertificatesV1Api);
    const retry = new Retry(1_000, 30_000);
    while (!this.closed) {
      try {
        const issued = await requestNodeCertificate(
          api,
          { nodeName, signerName: CLIENT_SIGNER, usages: CLIENT_USAGES },
          {
            pollMs: this.options.pollMs ?? 1_000,
            closed: () => this.closed,
            requested: (csr) => logger.info({ csr, why }, `client certificate requested (${CLIENT_SIGNER}): waiting for its approval`),
          },
        );
        if (issued === undefined) return;
        await mkdir(this.options.certDir, { recursive: true, mode: 0o700 });
        await writeWhole(this.pemFile, `${issued.certificate.trimEnd()}\n${issued.key}`, 0o600);
        const cert = new x509.X509Certificate(issued.certificate);
        logger.info(
          { csr: issued.name, notAfter: cert.notAfter.toISOString(), file: this.pemFile },
          'client certificate issued by the cluster',
        );
        return;
      } catch (error) {
        const delay = retry.next();
        logger.warn(
          { err: error, retryInMs: delay, status: apiStatus(error) },
          `cannot get a client certificate: ${(error as Error).message}`,
        );
        await retry.wait(delay, () => this.closed);
      }
    }
  }

  /** `--kubeconfig`: the bootstrap kubeconfig's cluster, and the node's certificate as its user. */
  private async writeKubeconfig(bootstrap: KubeConfig): Promise<void> {
    const cluster = bootstrap.getCurrentCluster();
    if (cluster === null) throw new Error(`--bootstrap-kubeconfig ${this.options.bootstrapKubeconfigPath} names no cluster`);
    const ca =
      cluster.caData !== undefined
        ? `    certificate-authority-data: ${cluster.caData}`
        : cluster.caFile !== undefined
          ? `    certificate-authority: ${JSON.stringify(cluster.caFile)}`
          : '    insecure-skip-tls-verify: true';
    const text = [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- name: "default-cluster"',
      '  cluster:',
      `    server: ${JSON.stringify(cluster.server)}`,
      ca,
      'users:',
      '- name: "default-auth"',
      '  user:',
      `    client-certificate: ${JSON.stringify(this.pemFile)}`,
      `    client-key: ${JSON.stringify(this.pemFile)}`,
      'contexts:',
      '- name: "default-context"',
      '  context:',
      '    cluster: "default-cluster"',
      '    user: "default-auth"',
      'current-context: "default-context"',
      '',
    ].join('\n');
    await mkdir(dirname(this.options.kubeconfigPath), { recursive: true });
    await writeWhole(this.options.kubeconfigPath, text, 0o600);
    this.options.logger.info(
      { kubeconfig: this.options.kubeconfigPath },
      'node kubeconfig written: the node is known to the cluster by its own certificate',
    );
  }
}
