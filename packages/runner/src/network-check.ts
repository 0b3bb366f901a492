import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';

/** How an httpGet probe asks, beyond where: v1's `scheme` and `httpHeaders`. */
export interface HttpCheckOptions {
  /** `HTTPS` does not verify the server's certificate (the kubelet's prober does not either). Default `HTTP`. */
  readonly scheme?: 'HTTP' | 'HTTPS';
  /** Sent as given; a `User-Agent` here replaces the prober's own. */
  readonly headers?: readonly { readonly name: string; readonly value: string }[];
}

/**
 * How httpGet and tcpSocket probes reach a container. Each call answers within `timeoutMs` and
 * never rejects: a failure to connect is `{ ok: false }` with the reason in `detail`.
 */
export interface NetworkCheck {
  /** `ok` when the answer's status is 200-399 (a redirect is not followed: it counts as alive). */
  http(host: string, port: number, path: string, timeoutMs: number, options?: HttpCheckOptions): Promise<{ ok: boolean; detail: string }>;
  /** `ok` when a TCP connection opens. */
  tcp(host: string, port: number, timeoutMs: number): Promise<{ ok: boolean; detail: string }>;
  /**
   * `ok` when the gRPC health check of `service` ('' for the server as a whole) answers `SERVING`.
   * Optional, and absent from `socketNetworkCheck`: gRPC is a library of its own (`@grpc/grpc-js`
   * with its dependencies, 33 packages and 9 MB), which an embedded agent should not install for a
   * probe its pods may never have. Hand one in (`{ ...socketNetworkCheck, grpc: grpcHealthCheck }`, from
   * `@kubelet-ts/grpc-probe`, as the CLI does). Without it, a gRPC probe is an error of the prober
   * (logged, not counted), never a verdict.
   */
  grpc?(host: string, port: number, service: string, timeoutMs: number): Promise<{ ok: boolean; detail: string }>;
}

/** Why a socket could not be used, in the words an operator expects. */
function socketError(error: NodeJS.ErrnoException): string {
  if (error.code === 'ECONNREFUSED') return 'connection refused';
  if (error.code === 'ECONNRESET') return 'connection reset';
  return error.code === undefined ? error.message : `${error.code}: ${error.message}`;
}

/** Headers as node sends them: repeated names are joined into one list, as Go's `http.Header.Add` sends them. */
function headersOf(options: HttpCheckOptions | undefined): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = { 'User-Agent': 'kubelet-ts-probe' };
  const given = new Map<string, string[]>();
  for (const { name, value } of options?.headers ?? []) given.set(name.toLowerCase(), [...(given.get(name.toLowerCase()) ?? []), value]);
  if (given.has('user-agent')) delete headers['User-Agent'];
  for (const [name, values] of given) headers[name] = values.length === 1 ? values[0]! : values;
  return headers;
}

/**
 * One probe's outcome, said once: the first of answer, error and timeout wins; `end` closes what
 * the probe opened, and the timer is cleared.
 */
function probeOutcome(
  resolve: (result: { ok: boolean; detail: string }) => void,
  timeoutMs: number,
  late: string,
): { finish: (ok: boolean, detail: string) => void; closeWith: (end: () => void) => void } {
  let settled = false;
  let end = () => {};
  const finish = (ok: boolean, detail: string) => {
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    end();
    resolve({ ok, detail });
  };
  const timer = setTimeout(() => finish(false, late), timeoutMs);
  return { finish, closeWith: (close) => (end = close) };
}

/**
 * The default NetworkCheck: real sockets, each call ended by a real timer after `timeoutMs`. It
 * makes no gRPC calls (see `NetworkCheck.grpc`).
 */
export const socketNetworkCheck: NetworkCheck = {
  http(host, port, path, timeoutMs, options) {
    return new Promise((resolve) => {
      const { finish, closeWith } = probeOutcome(resolve, timeoutMs, `no answer within ${timeoutMs} ms`);
      // No keep-alive agent: every probe is its own connection, and nothing stays open afterwards.
      const common = { host, port, path, method: 'GET', agent: false, headers: headersOf(options) } as const;
      const onResponse = (res: import('node:http').IncomingMessage) => {
        const status = res.statusCode ?? 0;
        res.resume();
        finish(status >= 200 && status < 400, `status ${status}`);
      };
      const req =
        options?.scheme === 'HTTPS' ? httpsRequest({ ...common, rejectUnauthorized: false }, onResponse) : httpRequest(common, onResponse);
      closeWith(() => req.destroy());
      req.on('error', (error) => finish(false, socketError(error)));
      req.end();
    });
  },

  tcp(host, port, timeoutMs) {
    return new Promise((resolve) => {
      const { finish, closeWith } = probeOutcome(resolve, timeoutMs, `no connection within ${timeoutMs} ms`);
      const socket = connect({ host, port });
      closeWith(() => socket.destroy());
      socket.on('connect', () => finish(true, 'connected'));
      socket.on('error', (error) => finish(false, socketError(error)));
    });
  },
};
