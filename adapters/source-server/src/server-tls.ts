import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createSecureContext, type SecureContextOptions, type TlsOptions } from 'node:tls';
import { repeatEvery, type Clock, type Logger } from '@kubelet-ts/core';

/** The agent server's certificate (kubelet: `--tls-cert-file`, `--tls-private-key-file`) and client CA. */
export interface ServerTlsOptions {
  /** PEM certificate (chain) the server presents. */
  readonly certFile: string;
  /** PEM private key of `certFile`. */
  readonly keyFile: string;
  /**
   * PEM CA bundle (kubelet: `--client-ca-file`). When set, the server asks every client for a
   * certificate, and one signed by this CA and valid now authenticates a request (see
   * `ServerManifestSourceOptions.authToken` for how it combines with a token). A client without
   * one still completes the handshake, so that `/healthz` stays open and the refusal is a 401 a
   * person can read, not a TLS alert.
   */
  readonly clientCaFile?: string;
  /**
   * The three files are read again this often, and a change is served from the next handshake on
   * (`setSecureContext`), without a restart: a rotated certificate is picked up. Default 10 s.
   */
  readonly reloadIntervalMs?: number;
}

interface Files {
  readonly cert: Buffer;
  readonly key: Buffer;
  readonly ca: Buffer | undefined;
}

/**
 * The files of `ServerTlsOptions`, read at start (a missing or mismatched file fails the start) and
 * then on the clock: a new set that makes a valid context replaces the served one; one that does
 * not (a key written before its certificate) is said once at warn and the old one stays in force.
 * Never logs the contents, only the paths.
 */
export class ServerTls {
  private files: Files;
  private stopReload: (() => void) | undefined;
  private reloading = false;
  private lastProblem: string | undefined;

  constructor(
    private readonly options: ServerTlsOptions,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {
    this.files = readAll(options);
    // Fail now, naming the files, rather than at the first handshake.
    try {
      createSecureContext(contextOptions(this.files));
    } catch (error) {
      throw new Error(`TLS files ${this.paths()} do not make a usable certificate: ${(error as Error).message}`, { cause: error });
    }
  }

  /** Options for `https.createServer`. */
  serverOptions(): TlsOptions {
    return {
      ...contextOptions(this.files),
      // Asked, not required: the route layer refuses what is not authenticated, /healthz excepted.
      ...(this.options.clientCaFile === undefined ? {} : { requestCert: true, rejectUnauthorized: false }),
    };
  }

  get clientCertificates(): boolean {
    return this.options.clientCaFile !== undefined;
  }

  /** Starts re-reading the files for `server` (until `stop`). */
  watch(server: { setSecureContext(options: SecureContextOptions): void }): void {
    this.stopReload?.();
    this.stopReload = repeatEvery(this.clock, this.options.reloadIntervalMs ?? 10_000, () => void this.reload(server));
  }

  stop(): void {
    this.stopReload?.();
    this.stopReload = undefined;
  }

  /** Reads the files once and swaps the context in when they changed; resolves when done. */
  async reload(server: { setSecureContext(options: SecureContextOptions): void }): Promise<void> {
    if (this.reloading) return;
    this.reloading = true;
    try {
      const [cert, key, ca] = await Promise.all([
        readFile(this.options.certFile),
        readFile(this.options.keyFile),
        this.options.clientCaFile === undefined ? undefined : readFile(this.options.clientCaFile),
      ]);
      const next: Files = { cert, key, ca };
      if (sameFiles(next, this.files)) return;
      server.setSecureContext(contextOptions(next));
      this.files = next;
      this.lastProblem = undefined;
      this.logger.info({ files: this.paths() }, 'agent server TLS certificate reloaded');
    } catch (error) {
      const problem = (error as Error).message;
      if (problem !== this.lastProblem)
        this.logger.warn(
          { files: this.paths(), error: problem },
          'agent server TLS files changed but cannot be used (yet); serving the previous certificate',
        );
      this.lastProblem = problem;
    } finally {
      this.reloading = false;
    }
  }

  private paths(): string {
    return [
      this.options.certFile,
      this.options.keyFile,
      ...(this.options.clientCaFile === undefined ? [] : [this.options.clientCaFile]),
    ].join(', ');
  }
}

function readAll(options: ServerTlsOptions): Files {
  const read = (path: string, what: string) => {
    try {
      return readFileSync(path);
    } catch (error) {
      throw new Error(`cannot read the ${what} ${path}: ${(error as Error).message}`, { cause: error });
    }
  };
  return {
    cert: read(options.certFile, 'TLS certificate (--tls-cert-file)'),
    key: read(options.keyFile, 'TLS private key (--tls-private-key-file)'),
    ca: options.clientCaFile === undefined ? undefined : read(options.clientCaFile, 'client CA (--client-ca-file)'),
  };
}

/**
 * TLS 1.2 offers forward-secret AEAD suites only: ECDHE with AES-GCM or ChaCha20-Poly1305, as Go's
 * defaults and Mozilla's "intermediate" profile do; Node's default list also offers CBC with SHA-1
 * and CCM8 (issue 27 item 2). The TLS 1.3 suites are OpenSSL's defaults, named because a list
 * without any would turn TLS 1.3 off.
 */
const CIPHERS = [
  'TLS_AES_256_GCM_SHA384',
  'TLS_CHACHA20_POLY1305_SHA256',
  'TLS_AES_128_GCM_SHA256',
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
].join(':');

/** Also what a reload serves (`setSecureContext` replaces the cipher list with the rest). */
function contextOptions(files: Files): SecureContextOptions {
  return { cert: files.cert, key: files.key, ciphers: CIPHERS, ...(files.ca === undefined ? {} : { ca: files.ca }) };
}

function sameFiles(a: Files, b: Files): boolean {
  return (
    a.cert.equals(b.cert) && a.key.equals(b.key) && (a.ca === undefined ? b.ca === undefined : b.ca !== undefined && a.ca.equals(b.ca))
  );
}
