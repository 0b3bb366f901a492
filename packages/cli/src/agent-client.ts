import { readFile } from 'node:fs/promises';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { CommanderError, Option, type Command } from 'commander';
import { WebSocket } from 'ws';

export const DEFAULT_AGENT_SERVER = 'http://127.0.0.1:10250';

/** What `addConnectionOptions` gives a command, parsed. */
export interface ConnectionOptions {
  readonly namespace: string;
  readonly server: string;
  readonly token?: string;
  readonly certificateAuthority?: string;
  readonly clientCertificate?: string;
  readonly clientKey?: string;
}

/** The options every command that talks to a running agent takes (`--server`, the token, the TLS files, `-n`). */
/**
 * Parses a client command's arguments, its help and errors written to `io`: the exit code when
 * the parse ended the command (0 after `--help`, 1 on a bad argument), else undefined.
 */
export function parseClientCommand(
  program: Command,
  argv: readonly string[],
  io: { readonly stdout: NodeJS.WritableStream; readonly stderr: NodeJS.WritableStream },
): number | undefined {
  program.exitOverride().configureOutput({ writeOut: (s) => io.stdout.write(s), writeErr: (s) => io.stderr.write(s) });
  try {
    program.parse([...argv], { from: 'user' });
    return undefined;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 1;
    throw error;
  }
}

export function addConnectionOptions(command: Command): Command {
  return command
    .addOption(new Option('-n, --namespace <namespace>', "the pod's namespace").default('default'))
    .addOption(new Option('--server <url>', "the agent's server").default(DEFAULT_AGENT_SERVER))
    .addOption(new Option('--token <token>', 'bearer token (default: $KUBELET_TS_AUTH_TOKEN)'))
    .addOption(new Option('--certificate-authority <path>', "PEM CA the server's certificate must chain to"))
    .addOption(new Option('--client-certificate <path>', 'PEM client certificate (with --client-key)'))
    .addOption(new Option('--client-key <path>', 'PEM key of --client-certificate'));
}

/** How to reach a running agent's server: the settings its server takes, from the client's side. */
export interface AgentClientOptions {
  /** `http://` or `https://`, host and port. */
  readonly server: string;
  /** Sent as `Authorization: Bearer <token>`. */
  readonly token?: string | undefined;
  /** PEM files: the CA the server's certificate must chain to, and a client certificate and its key. */
  readonly certificateAuthority?: string | undefined;
  readonly clientCertificate?: string | undefined;
  readonly clientKey?: string | undefined;
}

/** A problem talking to the agent, said for a person: exit 1 with this message. */
export class AgentClientError extends Error {}

/**
 * GET requests to an agent's server over HTTP or HTTPS, the answer given unread (a stream) so
 * that a caller can stream it. A non-2xx answer is an `AgentClientError` with what the server
 * said (its JSON `error`), and so is a server that cannot be reached.
 */
export class AgentClient {
  private constructor(
    private readonly base: URL,
    private readonly headers: Readonly<Record<string, string>>,
    private readonly tls: { ca?: Buffer; cert?: Buffer; key?: Buffer },
  ) {}

  static async connect(options: AgentClientOptions): Promise<AgentClient> {
    let base: URL;
    try {
      base = new URL(options.server);
    } catch {
      throw new AgentClientError(`--server ${JSON.stringify(options.server)} is not a URL: give e.g. http://127.0.0.1:10250`);
    }
    if (base.protocol !== 'http:' && base.protocol !== 'https:')
      throw new AgentClientError(`--server ${options.server}: use http:// or https://`);
    if ((options.clientCertificate === undefined) !== (options.clientKey === undefined))
      throw new AgentClientError('--client-certificate and --client-key go together: give both or neither');
    const read = async (path: string | undefined): Promise<Buffer | undefined> => {
      if (path === undefined) return undefined;
      try {
        return await readFile(path);
      } catch (error) {
        throw new AgentClientError(`cannot read ${path}: ${(error as Error).message}`);
      }
    };
    const [ca, cert, key] = await Promise.all([
      read(options.certificateAuthority),
      read(options.clientCertificate),
      read(options.clientKey),
    ]);
    const tls = { ...(ca === undefined ? {} : { ca }), ...(cert === undefined ? {} : { cert }), ...(key === undefined ? {} : { key }) };
    const headers = options.token === undefined ? {} : { authorization: `Bearer ${options.token}` };
    return new AgentClient(base, headers, tls);
  }

  /** The answer to `GET path` (with its query), its body not yet read; rejects unless 2xx. */
  get(path: string, signal?: AbortSignal): Promise<IncomingMessage> {
    const url = new URL(path, this.base);
    const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      const req = request(
        url,
        { method: 'GET', headers: this.headers, ...this.tls, ...(signal === undefined ? {} : { signal }) },
        (res) => {
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) {
            resolve(res);
            return;
          }
          void said(res).then((message) => reject(new AgentClientError(`${message} (HTTP ${status} from ${url.pathname})`)), reject);
        },
      );
      req.on('error', (error: NodeJS.ErrnoException) =>
        reject(
          error.name === 'AbortError'
            ? error
            : new AgentClientError(`cannot reach the agent at ${this.base.origin}: ${error.message} (is it running? see --server)`),
        ),
      );
      req.end();
    });
  }

  /**
   * A WebSocket to `path` offering `protocols` in order, open and paused: what the server sent
   * with its handshake waits until the caller has its listeners on and calls `resume()`. Rejects
   * with what the server said when it refuses the upgrade (its JSON `error`), or when it cannot be reached.
   */
  websocket(path: string, protocols: readonly string[]): Promise<WebSocket> {
    const url = new URL(path, this.base);
    url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, [...protocols], { headers: this.headers, ...this.tls });
      ws.once('open', () => {
        ws.pause();
        resolve(ws);
      });
      ws.once('unexpected-response', (_req, res) => {
        void said(res).then((message) => reject(new AgentClientError(`${message} (HTTP ${res.statusCode} from ${url.pathname})`)), reject);
      });
      ws.once('error', (error) =>
        reject(new AgentClientError(`cannot reach the agent at ${this.base.origin}: ${error.message} (is it running? see --server)`)),
      );
    });
  }

  /** `GET path` as JSON. */
  async json(path: string): Promise<unknown> {
    const res = await this.get(path);
    const chunks: Buffer[] = [];
    for await (const chunk of res) chunks.push(chunk as Buffer);
    try {
      return JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      throw new AgentClientError(`${path} did not answer JSON: is ${this.base.origin} a kubelet-ts agent?`);
    }
  }
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
