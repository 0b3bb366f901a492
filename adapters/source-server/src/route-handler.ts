import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';

/**
 * What takes a WebSocket upgrade the guards let through: true when it is one of its routes (it then
 * answers the handshake), false when it is not; it throws an `HttpProblem` to refuse before the handshake.
 */
export type UpgradeHandler = (req: IncomingMessage, url: URL, socket: Duplex, head: Buffer) => Promise<boolean>;

/**
 * What a route answers. `json` is sent as `application/json`; `text` is sent as it is, with its
 * `contentType` (the Prometheus exposition of `/metrics`, for one); `open` streams the body (see
 * `StreamedAnswer`).
 */
export type RouteAnswer =
  | { readonly status: number; readonly json: unknown }
  | { readonly status: number; readonly text: string; readonly contentType: string }
  | StreamedAnswer;

/**
 * A body sent as it comes, in chunks, never held whole (a container's log, a file): each chunk is
 * written once the client has taken the ones before (the socket drained), so a slow client slows
 * the stream rather than growing the server's memory.
 */
export interface StreamedAnswer {
  readonly status: number;
  readonly contentType: string;
  /**
   * Opens the body. It is called before the status is sent, so what it throws is answered like
   * any route's error (an `HttpProblem` with its status). `signal` aborts when the client goes
   * away, or the answer ended: the stream must then end (a pending `next()` included); it is also
   * told to `return()` when the client leaves between chunks. An error in the middle of the body
   * cuts the connection, so the client sees an incomplete answer rather than a complete one.
   */
  readonly open: (signal: AbortSignal) => Promise<AsyncIterable<Uint8Array>>;
}

/**
 * A set of routes on a plain node `http` server, so the same routes can be served by the agent's
 * server (`ServerManifestSource.mount`) or by an embedder's own (`agentApiListener`).
 *
 * - It answers when `url.pathname` is one of its routes and `undefined` when it is not; the next
 *   handler is then asked, and a path no handler answers is a 404 `{ error }`.
 * - A route it owns asked with the wrong method is its to answer (405), never `undefined`, so a
 *   wrong method is not reported as a missing route.
 * - It is called after the bearer token was checked (every path but `/healthz`), and must not
 *   read the body of a request that is not for one of its routes.
 * - `url` is the request's URL against a placeholder origin: use its path and query only.
 * - A client's mistake is an answer (4xx, `{ error: message }` by convention); an error it throws
 *   is logged and answered 500 `{ error: 'internal error' }`, its message kept from the client.
 */
export type RouteHandler = ((req: IncomingMessage, url: URL) => Promise<RouteAnswer | undefined>) & {
  /** Its WebSocket routes (`/exec`, `/attach`, `/portForward`), served on the `upgrade` of the same server, behind the same guards. */
  readonly upgrade?: UpgradeHandler;
};
