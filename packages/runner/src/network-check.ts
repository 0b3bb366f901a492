import { request } from 'node:http';
import { connect } from 'node:net';

/**
 * How httpGet and tcpSocket probes reach a container. Each call answers within `timeoutMs` and
 * never rejects: a failure to connect is `{ ok: false }` with the reason in `detail`.
 */
export interface NetworkCheck {
  /** `ok` when the answer's status is 200-399 (a redirect is not followed: it counts as alive). */
  http(host: string, port: number, path: string, timeoutMs: number): Promise<{ ok: boolean; detail: string }>;
  /** `ok` when a TCP connection opens. */
  tcp(host: string, port: number, timeoutMs: number): Promise<{ ok: boolean; detail: string }>;
}

/** Why a socket could not be used, in the words an operator expects. */
function socketError(error: NodeJS.ErrnoException): string {
  if (error.code === 'ECONNREFUSED') return 'connection refused';
  if (error.code === 'ECONNRESET') return 'connection reset';
  return error.code === undefined ? error.message : `${error.code}: ${error.message}`;
}

/** The default NetworkCheck: real sockets, each call ended by a real timer after `timeoutMs`. */
export const socketNetworkCheck: NetworkCheck = {
  http(host, port, path, timeoutMs) {
    return new Promise((resolve) => {
      let settled = false;
      const finish = (ok: boolean, detail: string) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        req.destroy();
        resolve({ ok, detail });
      };
      // No keep-alive agent: every probe is its own connection, and nothing stays open afterwards.
      const req = request({ host, port, path, method: 'GET', agent: false, headers: { 'User-Agent': 'kubelet-ts-probe' } }, (res) => {
        const status = res.statusCode ?? 0;
        res.resume();
        finish(status >= 200 && status < 400, `status ${status}`);
      });
      req.on('error', (error) => finish(false, socketError(error)));
      const timer = setTimeout(() => finish(false, `no answer within ${timeoutMs} ms`), timeoutMs);
      req.end();
    });
  },

  tcp(host, port, timeoutMs) {
    return new Promise((resolve) => {
      let settled = false;
      const finish = (ok: boolean, detail: string) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        socket.destroy();
        resolve({ ok, detail });
      };
      const socket = connect({ host, port });
      socket.on('connect', () => finish(true, 'connected'));
      socket.on('error', (error) => finish(false, socketError(error)));
      const timer = setTimeout(() => finish(false, `no connection within ${timeoutMs} ms`), timeoutMs);
    });
  },
};
