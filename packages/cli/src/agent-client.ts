import { readFile } from 'node:fs/promises';
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import type { WebSocket } from 'ws';

export const DEFAULT_AGENT_SERVER = 'http://127.0.0.1:10250';

/**
 * Where the launcher (`bin/kubelet-ts`) puts `NODE_EXTRA_CA_CERTS` for a client command: Node 20
 * reads that file, and every CA it bundles, as it starts (45 ms of a 70 ms start on this project's
 * machines) whether or not the process makes a TLS connection; the client reads it only when it
 * connects over TLS.
 */
export const DEFERRED_EXTRA_CA_CERTS = 'KUBELET_TS_EXTRA_CA_CERTS';

/**
 * The exit codes of every command that talks to a running agent, for scripts to branch on:
 * 0 it worked; 1 a usage error or anything else; 2 the agent cannot be reached (refused, timed
 * out, a name that does not resolve); 3 the agent refused the credentials (HTTP 401 or 403);
 * 4 TLS failed (a certificate the CA did not sign, an unknown CA, a name the certificate does not
 * carry, an unreadable certificate).
 */
export const ExitCodes = { ok: 0, failed: 1, unreachable: 2, unauthorized: 3, tls: 4 } as const;

/** What went wrong talking to the agent, by behaviour: each has its exit code. */
export type AgentClientErrorCode = 'Failed' | 'Unreachable' | 'Unauthorized' | 'Tls';

const EXIT_CODE_OF: Readonly<Record<AgentClientErrorCode, number>> = {
  Failed: ExitCodes.failed,
  Unreachable: ExitCodes.unreachable,
  Unauthorized: ExitCodes.unauthorized,
  Tls: ExitCodes.tls,
};

/** A problem talking to the agent, said for a person in one line; `exitCode` says which kind to a script. */
export class AgentClientError extends Error {
  constructor(
    message: string,
    readonly code: AgentClientErrorCode = 'Failed',
    options?: { readonly cause?: unknown },
  ) {
    super(message, options);
    this.name = 'AgentClientError';
  }

  get exitCode(): number {
    return EXIT_CODE_OF[this.code];
  }
}

/** How to reach a running agent's server: the settings its server takes, from the client's side. */
export interface AgentClientOptions {
  /** `http://` or `https://`, host and port. */
  readonly server: string;
  /** Sent as `Authorization: Bearer <token>`. */
  readonly token?: string | undefined;
  /** PEM files, or their contents (a kubeconfig's `…-data`): the CA the server's certificate must chain to, and a client certificate and its key. */
  readonly certificateAuthority?: string | undefined;
  readonly certificateAuthorityData?: Buffer | undefined;
  readonly clientCertificate?: string | undefined;
  readonly clientCertificateData?: Buffer | undefined;
  readonly clientKey?: string | undefined;
  readonly clientKeyData?: Buffer | undefined;
  /** The server's certificate is not checked (kubectl's `--insecure-skip-tls-verify`). */
  readonly insecureSkipTlsVerify?: boolean | undefined;
  /**
   * A PEM file of CAs trusted beside Node's own when no CA is given (`NODE_EXTRA_CA_CERTS`'s
   * meaning; see `DEFERRED_EXTRA_CA_CERTS`). Unreadable, it is left out with a warning, as Node does.
   */
  readonly extraCaCertificates?: string | undefined;
  /** How long making the connection may take before the agent counts as unreachable. Default 10 s. */
  readonly connectTimeoutMs?: number | undefined;
}

interface TlsSettings {
  readonly ca?: Buffer | readonly (string | Buffer)[];
  readonly cert?: Buffer;
  readonly key?: Buffer;
  readonly rejectUnauthorized: boolean;
}

/** Node's CAs and those of `file` (undefined without a file: Node's alone), as `NODE_EXTRA_CA_CERTS` adds them. */
async function withExtraCas(file: string | undefined): Promise<readonly (string | Buffer)[] | undefined> {
  if (file === undefined) return undefined;
  try {
    const extra = await readFile(file);
    return [...(await import('node:tls')).rootCertificates, extra];
  } catch (error) {
    process.emitWarning(`Ignoring extra certs from \`${file}\`, load failed: ${(error as Error).message}`);
    return undefined;
  }
}

/**
 * GET requests to an agent's server over HTTP or HTTPS, the answer given unread (a stream) so
 * that a caller can stream it, and WebSockets. Every failure is an `AgentClientError` whose code
 * says what kind it is: a non-2xx answer carries what the server said (its JSON `error`; 401 and
 * 403 are `Unauthorized`), a server that cannot be reached is `Unreachable`, a handshake that
 * failed on a certificate is `Tls`.
 */
export class AgentClient {
  private constructor(
    /** `node:http`'s request, or `node:https`'s for an https:// server (loaded only then: TLS takes a tenth of a client's start). */
    private readonly request: typeof httpRequest,
    private readonly base: URL,
    private readonly headers: Readonly<Record<string, string>>,
    private readonly tls: TlsSettings,
    private readonly connectTimeoutMs: number,
  ) {}

  static async connect(options: AgentClientOptions): Promise<AgentClient> {
    let base: URL;
    try {
      base = new URL(options.server);
    } catch {
      throw new AgentClientError(`the server ${JSON.stringify(options.server)} is not a URL: give e.g. ${DEFAULT_AGENT_SERVER}`);
    }
    if (base.protocol !== 'http:' && base.protocol !== 'https:')
      throw new AgentClientError(`the server ${options.server}: use http:// or https://`);
    const hasCert = options.clientCertificate !== undefined || options.clientCertificateData !== undefined;
    const hasKey = options.clientKey !== undefined || options.clientKeyData !== undefined;
    if (hasCert !== hasKey) throw new AgentClientError('--client-certificate and --client-key go together: give both or neither');
    const read = async (path: string | undefined, data: Buffer | undefined): Promise<Buffer | undefined> => {
      if (data !== undefined || path === undefined) return data;
      try {
        return await readFile(path);
      } catch (error) {
        throw new AgentClientError(`cannot read ${path}: ${(error as Error).message}`, 'Failed', { cause: error });
      }
    };
    const [ca, cert, key] = await Promise.all([
      read(options.certificateAuthority, options.certificateAuthorityData),
      read(options.clientCertificate, options.clientCertificateData),
      read(options.clientKey, options.clientKeyData),
    ]);
    const trusted = ca ?? (base.protocol === 'https:' ? await withExtraCas(options.extraCaCertificates) : undefined);
    const tls: TlsSettings = {
      ...(trusted === undefined ? {} : { ca: trusted }),
      ...(cert === undefined ? {} : { cert }),
      ...(key === undefined ? {} : { key }),
      rejectUnauthorized: options.insecureSkipTlsVerify !== true,
    };
    const headers = options.token === undefined ? {} : { authorization: `Bearer ${options.token}` };
    const request = base.protocol === 'https:' ? (await import('node:https')).request : httpRequest;
    return new AgentClient(request, base, headers, tls, options.connectTimeoutMs ?? 10_000);
  }

  /** The answer to `GET path` (with its query, and `headers` beside the credentials), its body not yet read; rejects unless 2xx. */
  get(path: string, signal?: AbortSignal, headers: Readonly<Record<string, string>> = {}): Promise<IncomingMessage> {
    const url = new URL(path, this.base);
    return new Promise((resolve, reject) => {
      let req: ClientRequest;
      try {
        req = this.request(
          url,
          { method: 'GET', headers: { ...headers, ...this.headers }, ...this.tls, ...(signal === undefined ? {} : { signal }) },
          (res) => {
            const status = res.statusCode ?? 0;
            if (status >= 200 && status < 300) {
              resolve(res);
              return;
            }
            void said(res).then((message) => reject(refusal(message, status, url.pathname)), reject);
          },
        );
      } catch (error) {
        // An unreadable certificate or key throws as the TLS context is made.
        reject(this.unreachable(error as NodeJS.ErrnoException));
        return;
      }
      this.limitConnectTime(req);
      req.on('error', (error: NodeJS.ErrnoException) => reject(error.name === 'AbortError' ? error : this.unreachable(error)));
      req.end();
    });
  }

  /**
   * A WebSocket to `path` offering `protocols` in order, open and paused: what the server sent
   * with its handshake waits until the caller has its listeners on and calls `resume()`. Rejects
   * with what the server said when it refuses the upgrade (its JSON `error`), or when it cannot be reached.
   */
  async websocket(path: string, protocols: readonly string[]): Promise<WebSocket> {
    // Loaded here: only exec, attach and port-forward speak WebSocket (the others start faster).
    const { WebSocket } = await import('ws');
    const url = new URL(path, this.base);
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    return new Promise((resolve, reject) => {
      let ws: WebSocket;
      try {
        ws = new WebSocket(url, [...protocols], { headers: this.headers, ...this.tls, handshakeTimeout: this.connectTimeoutMs });
      } catch (error) {
        reject(this.unreachable(error as NodeJS.ErrnoException));
        return;
      }
      ws.once('open', () => {
        ws.pause();
        resolve(ws);
      });
      ws.once('unexpected-response', (_req, res) => {
        void said(res).then((message) => reject(refusal(message, res.statusCode ?? 0, url.pathname)), reject);
      });
      ws.once('error', (error: NodeJS.ErrnoException) => reject(this.unreachable(error)));
    });
  }

  /** `GET path` as JSON; `accept`, the media types asked for (JSON's, a `Table`). */
  async json(path: string, accept = 'application/json'): Promise<unknown> {
    const res = await this.get(path, undefined, { accept });
    const chunks: Buffer[] = [];
    for await (const chunk of res) chunks.push(chunk as Buffer);
    try {
      return JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      throw new AgentClientError(`${path} did not answer JSON: is ${this.base.origin} a kubelet-ts agent?`);
    }
  }

  /** Ends a request whose connection is not made in time, as a timeout (ETIMEDOUT); a slow answer is not limited. */
  private limitConnectTime(req: ClientRequest): void {
    req.once('socket', (socket) => {
      if (!socket.connecting) return;
      const timer = setTimeout(() => {
        const error: NodeJS.ErrnoException = new Error(`no connection after ${this.connectTimeoutMs / 1000}s`);
        error.code = 'ETIMEDOUT';
        req.destroy(error);
      }, this.connectTimeoutMs);
      const clear = () => clearTimeout(timer);
      socket.once('connect', clear).once('close', clear);
    });
  }

  /** A failure to talk to the server at all, said with what to check: TLS, else unreachable. */
  private unreachable(error: NodeJS.ErrnoException): AgentClientError {
    const where = `cannot reach the agent at ${this.base.origin}`;
    if (isTlsFailure(error))
      return new AgentClientError(
        `${where}: TLS failed: ${error.message} (give the CA that signed its certificate with --certificate-authority, or --insecure-skip-tls-verify)`,
        'Tls',
        { cause: error },
      );
    return new AgentClientError(`${where}: ${error.message} (is it running? see --server)`, 'Unreachable', { cause: error });
  }
}

/** Node's and OpenSSL's codes for a handshake or certificate that failed. */
function isTlsFailure(error: NodeJS.ErrnoException): boolean {
  const code = error.code ?? '';
  return /CERT|^UNABLE_TO_|SELF_SIGNED|^ERR_TLS_|^ERR_SSL_|^ERR_OSSL_|^EPROTO$/.test(code) || error.name === 'SSLError';
}

/** A non-2xx answer as the error it is: 401 and 403 are the credentials refused. */
function refusal(message: string, status: number, path: string): AgentClientError {
  if (status === 401 || status === 403)
    return new AgentClientError(
      `${message} (HTTP ${status} from ${path}): check --token, the client certificate, or the kubeconfig's user`,
      'Unauthorized',
    );
  return new AgentClientError(`${message} (HTTP ${status} from ${path})`);
}

/** What an error answer says: its JSON `error`, else its first 200 characters. */
async function said(res: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of res) {
    if (text.length < 64 * 1024) text += (chunk as Buffer).toString('utf8');
  }
  try {
    const body = JSON.parse(text) as { error?: unknown };
    if (typeof body.error === 'string') return body.error;
  } catch {
    // Not JSON: the text itself.
  }
  return text.trim().slice(0, 200) || 'no message';
}
