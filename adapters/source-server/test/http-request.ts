import { request } from 'node:http';
import { connect } from 'node:net';

/** What the server answered: the status, its headers, and the body parsed as JSON. */
export interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly json: unknown;
}

/**
 * One real HTTP request to `url` with exactly the headers given, `Host` included: fetch picks the
 * Host itself, which is what a DNS-rebinding test must not let it do.
 */
export function send(
  url: string,
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: string | Uint8Array } = {},
): Promise<Answer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request(
      { hostname: hostname.replace(/^\[|\]$/g, ''), port, path, method: options.method ?? 'GET', headers: options.headers ?? {} },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, json: text === '' ? undefined : JSON.parse(text) }),
        );
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/**
 * Writes `payload` on a raw connection to 127.0.0.1:`port` and resolves with everything the server
 * wrote back once either side closes; `then` may act on the open socket (destroy it, reset it).
 */
export function raw(port: number, payload: string, then?: (socket: ReturnType<typeof connect>) => void): Promise<string> {
  return new Promise((resolve) => {
    let answer = '';
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(payload);
      then?.(socket);
    });
    socket.on('data', (d) => (answer += d.toString()));
    socket.on('close', () => resolve(answer));
    socket.on('error', () => undefined);
  });
}
