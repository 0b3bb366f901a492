import type { RequestListener } from 'node:http';
import { silentLogger, type AgentView, type Logger } from '@kubelet-ts/core';
import { HttpProblem, allow, routeListener } from './http-kit.js';
import type { RouteAnswer, RouteHandler } from './route-handler.js';

/**
 * The agent's read API, as the 2014 kubelet served it, for any node `http` server (JSON unless said):
 *
 * - `GET /healthz`: 200 `{ status: 'ok', ...health }`, or 503 `{ status: 'unhealthy', ... }` when
 *   the agent reports itself unhealthy;
 * - `GET /metrics`: the Prometheus text exposition, with its own content type;
 * - `GET /pods`: each desired pod with its source and its containers' actual state;
 * - `GET /plan`: what a sync pass would do now;
 * - `GET /containerInfo?container=NAME`: the runtime's inspect data of a container this agent
 *   manages; 400 without `container`, 404 for any other container, foreign ones included.
 *
 * Another method on these paths is a 405; any other path is not its route (`undefined`).
 * It reads no request body, so it needs no body limit.
 */
export function agentApiHandler(view: AgentView): RouteHandler {
  return async (req, url): Promise<RouteAnswer | undefined> => {
    switch (url.pathname) {
      case '/healthz': {
        allow(req, 'GET');
        const health = view.health();
        return { status: health.healthy ? 200 : 503, json: { status: health.healthy ? 'ok' : 'unhealthy', ...health } };
      }
      case '/metrics': {
        allow(req, 'GET');
        const { contentType, body } = await view.metrics();
        return { status: 200, text: body, contentType };
      }
      case '/pods':
        allow(req, 'GET');
        return { status: 200, json: await view.pods() };
      case '/plan':
        allow(req, 'GET');
        return { status: 200, json: await view.plan() };
      case '/containerInfo': {
        allow(req, 'GET');
        const name = url.searchParams.get('container');
        if (name === null || name === '') throw new HttpProblem(400, 'the query parameter "container" is required');
        const info = await view.containerInfo(name);
        if (info === undefined) throw new HttpProblem(404, `no container ${JSON.stringify(name)} managed by this agent`);
        return { status: 200, json: info.raw };
      }
      default:
        return undefined;
    }
  };
}

export interface AgentApiListenerOptions {
  /**
   * When set, every route but `/healthz` needs `Authorization: Bearer <token>` (401 otherwise).
   * An empty or whitespace-only token throws: it would let every request in.
   */
  readonly authToken?: string;
  /** Where a request that failed inside the agent (a 500) is logged. */
  readonly logger?: Logger;
}

/**
 * The agent's read API (see `agentApiHandler`) and nothing else, as a listener for an embedder's
 * own server: `http.createServer(agentApiListener(kubelet)).listen(8080)`. Any other path is a 404
 * `{ error }`, so no manifest can be posted through it. Timeouts and the address are the
 * embedder's server's to set. Throws on an empty `authToken`.
 */
export function agentApiListener(view: AgentView, options: AgentApiListenerOptions = {}): RequestListener {
  return routeListener([agentApiHandler(view)], { authToken: options.authToken, logger: options.logger ?? silentLogger });
}
