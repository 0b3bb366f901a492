import { once } from 'node:events';
import { STATUS_CODES, type IncomingMessage, type RequestListener, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FieldError, Logger } from '@kubelet-ts/core';
import { requestAuthentication, type AuthenticationOptions } from './request-auth.js';
import { checkHostAndOrigin, type ReachableNames } from './request-guard.js';
import type { RouteHandler, StreamedAnswer, UpgradeHandler } from './route-handler.js';

/**
 * A request the client got wrong (or gave up on), answered with `status` and
 * `{ error, fieldErrors? }`, and logged at debug only: anyone who can connect can cause one.
 */
export class HttpProblem extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly fieldErrors: readonly FieldError[] = [],
    options?: ErrorOptions,
    /** Extra response headers (`Retry-After`). */
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message, options);
  }
}

/** Liveness probes carry no token, as the kubelet's `/healthz`: this path is never checked. */
const UNAUTHENTICATED_PATH = '/healthz';

/**
 * Who may call (see `requestAuthentication`): the bearer token (never empty), client certificates
 * (every path but `/healthz` then needs one the CA signed and that is valid now, or the token when
 * there is one too: either authenticates, as the kubelet accepts either), delegated token and access
 * reviews, and the throttle of failed attempts.
 */
export interface RouteListenerOptions extends AuthenticationOptions {
  /**
   * The names the request must give as `Host` (and `Origin`, when it has one) on every path,
   * `/healthz` included (403 otherwise); absent, neither is checked.
   */
  readonly reachableAs?: ((req: IncomingMessage) => ReachableNames) | undefined;
  /** False: `Host` is not checked, only `Origin` (see `ServerManifestSourceOptions.checkHost`). Default true. */
  readonly checkHost?: boolean | undefined;
  /** Where errors a handler threw are logged (once, here), and refused requests at debug. */
  readonly logger: Logger;
}

/**
 * A node `RequestListener` asking `handlers` in order; the first answer is sent, and a path none
 * answers is a 404. The array is read at each request, so handlers added to it later are served.
 * Throws when `authToken` is empty (see `checkAuthToken`).
 */
export function routeListener(handlers: readonly RouteHandler[], options: RouteListenerOptions): RequestListener {
  checkAuthToken(options.authToken);
  const authorize = requestAuthentication(options);
  return (req, res) => {
    void serve(req, res, handlers, { ...options, authorize });
  };
}

/**
 * A node server's `upgrade` listener for `handlers` (WebSocket routes), behind the same guards as
 * `routeListener`'s routes: `Host` and `Origin` (no cross-site upgrade), then authentication, all
 * before the handshake. A refusal is a plain HTTP answer `{ error }` and the socket is closed; an
 * upgrade no handler takes is a 404.
 */
export function upgradeListener(
  handlers: readonly UpgradeHandler[],
  options: RouteListenerOptions,
): (req: IncomingMessage, socket: Duplex, head: Buffer) => void {
  checkAuthToken(options.authToken);
  const authorize = requestAuthentication(options);
  return (req, socket, head) => {
    socket.on('error', () => socket.destroy());
    void (async () => {
      try {
        const url = requestTarget(req);
        if (options.reachableAs !== undefined) checkHostAndOrigin(req, options.reachableAs(req), options.checkHost !== false);
        await authorize?.(req, url);
        for (const handler of handlers) if (await handler(req, url, socket, head)) return;
        throw new HttpProblem(404, `no WebSocket route ${url.pathname}`);
      } catch (error) {
        const problem = error instanceof HttpProblem ? error : new HttpProblem(500, 'internal error');
        if (!(error instanceof HttpProblem)) options.logger.error({ err: error, url: req.url }, 'upgrade failed');
        const body = JSON.stringify({ error: problem.message });
        const headers = {
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
          connection: 'close',
          ...problem.headers,
        };
        if (!socket.destroyed)
          socket.end(
            `HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status] ?? ''}\r\n${Object.entries(headers)
              .map(([k, v]) => `${k}: ${v}\r\n`)
              .join('')}\r\n${body}`,
          );
      }
    })();
  };
}

/**
 * Throws unless `token` is absent or holds more than whitespace. An empty token would be compared
 * with the empty one a request without `Authorization` presents, and let everyone in.
 */
export function checkAuthToken(token: string | undefined): void {
  if (token !== undefined && token.trim() === '') {
    throw new Error(
      'authToken is empty (or only whitespace), which would let every request in: give a token, or leave it out to serve without one',
    );
  }
}

async function serve(
  req: IncomingMessage,
  res: ServerResponse,
  handlers: readonly RouteHandler[],
  options: RouteListenerOptions & { authorize: ((req: IncomingMessage, url: URL) => Promise<void>) | undefined },
): Promise<void> {
  try {
    const url = requestTarget(req);
    // Before the token, and on /healthz too: a rebound page could read that as well.
    if (options.reachableAs !== undefined) checkHostAndOrigin(req, options.reachableAs(req), options.checkHost !== false);
    if (url.pathname !== UNAUTHENTICATED_PATH) await options.authorize?.(req, url);
    for (const handler of handlers) {
      const answer = await handler(req, url);
      if (answer === undefined) continue;
      if ('open' in answer) await sendStream(res, answer, options.logger);
      else if ('text' in answer) {
        res.writeHead(answer.status, { 'content-type': answer.contentType, 'content-length': Buffer.byteLength(answer.text) });
        res.end(answer.text);
      } else send(res, answer.status, answer.json);
      return;
    }
    throw new HttpProblem(404, `no route ${req.method ?? 'GET'} ${url.pathname}`);
  } catch (error) {
    if (error instanceof HttpProblem) {
      const headers: Record<string, string> = {
        ...(error.status === 401 ? { 'www-authenticate': 'Bearer' } : error.status === 413 ? { connection: 'close' } : {}),
        ...error.headers,
      };
      // An oversized body is not read to its end: answer, then drop the connection.
      if (error.status === 413) res.once('finish', () => req.destroy());
      send(
        res,
        error.status,
        { error: error.message, ...(error.fieldErrors.length === 0 ? {} : { fieldErrors: error.fieldErrors }) },
        headers,
      );
      options.logger.debug(
        { status: error.status, method: req.method, url: req.url?.slice(0, 200), error: error.message },
        'request refused',
      );
    } else {
      options.logger.error({ err: error, url: req.url }, 'request failed');
      send(res, 500, { error: 'internal error' });
    }
  }
}

/**
 * Sends a streamed answer: opened first (its errors are answered as any route's), then each chunk
 * written and, when the socket's buffer is full, the next one only after it drained. The client
 * leaving aborts the stream's signal and ends the loop, which lets go of the stream.
 */
async function sendStream(res: ServerResponse, answer: StreamedAnswer, logger: Logger): Promise<void> {
  const gone = new AbortController();
  const leave = () => gone.abort();
  res.once('close', leave);
  try {
    const body = await answer.open(gone.signal);
    res.writeHead(answer.status, { 'content-type': answer.contentType, 'x-content-type-options': 'nosniff' });
    // The status and headers now, not with the first chunk: a follow may wait long for it.
    res.flushHeaders();
    try {
      for await (const chunk of body) {
        if (gone.signal.aborted) break;
        if (!res.write(chunk)) await once(res, 'drain', { signal: gone.signal });
      }
    } catch (error) {
      // The client left while the stream waited to write: nothing went wrong.
      if (gone.signal.aborted) return;
      logger.error({ err: error }, 'a streamed answer failed after it began; the connection is cut');
      // What was written is still sent, then the connection ends without the last chunk, so the
      // client sees an incomplete answer rather than one that looks whole.
      if (res.socket === null) res.destroy();
      else res.socket.end();
      return;
    }
    if (!gone.signal.aborted) res.end();
  } finally {
    res.off('close', leave);
    gone.abort();
  }
}

/** The request's path and query; a target no URL can be made of (`http://[::1/pods`) is a 400. */
function requestTarget(req: IncomingMessage): URL {
  try {
    return new URL(req.url ?? '/', 'http://agent');
  } catch (error) {
    throw new HttpProblem(400, `malformed request target ${JSON.stringify((req.url ?? '').slice(0, 100))}`, [], { cause: error });
  }
}

/** The body as bytes, or a 413 as soon as it is known to exceed `maxBytes`, declared or streamed. */
export async function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > maxBytes) throw new HttpProblem(413, `body larger than ${maxBytes} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > maxBytes) throw new HttpProblem(413, `body larger than ${maxBytes} bytes`);
      chunks.push(chunk);
    }
  } catch (error) {
    if (error instanceof HttpProblem) throw error;
    // The client closed or reset the connection mid-body (or the server timed it out): nobody
    // is left to answer, and nothing went wrong in the agent.
    throw new HttpProblem(400, 'the request body was cut off: the connection closed before its end', [], { cause: error });
  }
  // Bytes: parsing decodes them strictly, so a body that is not UTF-8 is a 400.
  return Buffer.concat(chunks);
}

/** A malformed escape (`%E0%A4%A`) is the client's mistake: 400, not a 500 from decodeURIComponent. */
export function decodePathSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new HttpProblem(400, `malformed percent-encoding in ${JSON.stringify(segment.slice(0, 70))}`);
  }
}

/**
 * A 415 unless the request's `Content-Type` is one of `accepted` (lowercase media types), with at
 * most a `charset=utf-8` parameter. A missing type is refused too: a browser form can only send
 * `text/plain`, `multipart/form-data` or `application/x-www-form-urlencoded` without asking the
 * server first (a CORS preflight, which the agent never grants).
 */
export function requireContentType(req: IncomingMessage, accepted: readonly string[]): void {
  const header = req.headers['content-type'];
  const [type = '', ...parameters] = (header ?? '')
    .toLowerCase()
    .split(';')
    .map((part) => part.trim());
  const utf8 = parameters.every((p) => p === '' || /^charset=("?)utf-8\1$/.test(p));
  if (accepted.includes(type) && utf8) return;
  throw new HttpProblem(
    415,
    `Content-Type ${header === undefined ? 'missing' : JSON.stringify(header.slice(0, 100))}: send the body as one of ${accepted.join(', ')} ` +
      `(optionally with ; charset=utf-8), e.g. curl -H 'Content-Type: ${accepted[0] ?? ''}'`,
  );
}

/** A 405 unless the request's method is `expected`. */
export function allow(req: IncomingMessage, ...expected: readonly string[]): void {
  if (!expected.includes(req.method ?? 'GET')) throw new HttpProblem(405, `use ${expected.join(' or ')}`);
}

function send(res: ServerResponse, status: number, json: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent) return;
  const body = JSON.stringify(json);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), ...headers });
  res.end(body);
}
