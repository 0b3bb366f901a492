import type { IncomingMessage, RequestListener } from 'node:http';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { PROMETHEUS_TEXT, renderResourceMetrics, renderSummary } from './resource-figures.js';
import {
  eventMatches,
  isKubeletError,
  silentLogger,
  type AgentView,
  type ContainerStats,
  type Logger,
  type WatchEvent,
} from '@kubelet-ts/core';
import { containerLogsAnswer, isContainerLogsPath } from './container-logs-route.js';
import { hostLogsHandler } from './host-logs.js';
import { HttpProblem, allow, decodePathSegment, routeListener, upgradeListener } from './http-kit.js';
import { renderEventList, toV1Event } from './event-list.js';
import { renderPodListJson, rfc3339 } from './pod-list.js';
import { PodWatchHub } from './pod-watch.js';
import { TABLE_MEDIA_TYPE, asksForTable, includeObjectOf, renderPodTableJson } from './pod-table.js';
import { watchStream } from './watch-stream.js';
import { type ForwardLimits, streamingRouteHandler, streamingUpgradeHandler } from './stream-routes.js';
import { allowedHostNames, reachableNames } from './request-guard.js';
import type { DelegatedAuth } from './request-auth.js';
import type { RouteAnswer, RouteHandler } from './route-handler.js';

/**
 * The agent's read API, as the 2014 kubelet served it, for any node `http` server (JSON unless said):
 *
 * - `GET /healthz`: 200 `{ status: 'ok', ...health }`, or 503 `{ status: 'unhealthy', ... }` when
 *   the agent reports itself unhealthy;
 * - `GET /metrics`: the Prometheus text exposition, with its own content type;
 * - `GET /pods`: the desired pods as the kubelet's `/pods` answers, a Kubernetes v1 `PodList`
 *   (`renderPodList` of `AgentView.podListing`: metadata, spec, and status with phase, conditions,
 *   container statuses); with `watch=1`, their changes as JSON lines (`PodWatchHub`); asked for
 *   a `Table` (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`, as kubectl asks), kubectl's
 *   columns with a row a pod (`renderPodTableJson`);
 * - `GET /events` (a v1 `EventList` of the recent events; `namespace`, `pod`, `watch=1`) and
 *   `GET /sources` (each manifest source, and the manifests it rejected);
 * - `GET /plan`: what a sync pass would do now;
 * - `GET /containerInfo?container=NAME`: the runtime's inspect data of a container this agent
 *   manages; 400 without `container`, 404 for any other container, foreign ones included.
 * - `GET /containerStats?container=NAME` (the 2014 route) and `GET /stats/<manifest>/<container>`:
 *   what the container uses now (CPU, memory); 404 as above; 501 when the runtime gives no figures.
 * - `GET /metrics/resource` (what metrics-server scrapes), `GET /stats/summary` (the Summary API,
 *   stats/v1alpha1) and `GET /metrics/probes`: what the node and the running pods use, from the
 *   agent's last housekeeping sample (never a call to the engine; see `renderResourceMetrics`,
 *   `renderSummary`), and the probes' results;
 * - `GET /containerLogs/{namespace}/{pod}/{container}`: what the container printed, streamed as
 *   plain text, with the kubelet's query options (see `containerLogsAnswer`).
 * - `/exec/…`, `/attach/…`, `/portForward/…` over WebSocket (its `upgrade`, see
 *   `streamingUpgradeHandler`), and `POST /run/…?cmd=` (see `streamingRouteHandler`).
 *
 * Another method on these paths is a 405; any other path is not its route (`undefined`).
 * It reads no request body, so it needs no body limit.
 */
export function agentApiHandler(view: AgentView, options: AgentApiOptions = {}): RouteHandler {
  const now = options.now ?? Date.now;
  const streaming = streamingRouteHandler(view);
  const podWatch = new PodWatchHub(view);
  const handler = async (req: IncomingMessage, url: URL): Promise<RouteAnswer | undefined> => {
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
      case '/pods': {
        allow(req, 'GET');
        if (watchAsked(url)) return podsWatch(podWatch);
        const listing = await view.podListing();
        if (asksForTable(req.headers.accept)) {
          const table = renderPodTableJson(listing, now(), includeObjectOf(url));
          return { status: 200, text: table, contentType: `${TABLE_MEDIA_TYPE}; charset=utf-8` };
        }
        // Rendered as JSON text, each pod's kept while its view is the same (1,000 pods: ~10 ms, not ~45).
        return { status: 200, text: renderPodListJson(listing.pods, listing), contentType: 'application/json; charset=utf-8' };
      }
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
      case '/metrics/resource':
        allow(req, 'GET');
        return { status: 200, text: renderResourceMetrics(view.resourceUsage()), contentType: PROMETHEUS_TEXT };
      case '/metrics/probes': {
        allow(req, 'GET');
        const { contentType, body } = await view.probeMetrics();
        return { status: 200, text: body, contentType };
      }
      case '/sources':
        allow(req, 'GET');
        return { status: 200, json: renderSources(view) };
      case '/events': {
        allow(req, 'GET');
        return eventsAnswer(view, url);
      }
      case '/stats/summary':
        allow(req, 'GET');
        return { status: 200, json: renderSummary(view.resourceUsage()) };
      case '/containerStats': {
        allow(req, 'GET');
        const name = url.searchParams.get('container');
        if (name === null || name === '') throw new HttpProblem(400, 'the query parameter "container" is required');
        return { status: 200, json: await statsOf(view, name) };
      }
      default: {
        if (isContainerLogsPath(url.pathname)) {
          allow(req, 'GET');
          return containerLogsAnswer(view, url, now);
        }
        const stats = /^\/stats\/([^/]+)\/([^/]+)$/.exec(url.pathname);
        if (stats === null) return streaming(req, url);
        allow(req, 'GET');
        return { status: 200, json: await statsOf(view, `${decodePathSegment(stats[1]!)}/${decodePathSegment(stats[2]!)}`) };
      }
    }
  };
  return Object.assign(handler, { upgrade: streamingUpgradeHandler(view, options) });
}

/** What `agentApiHandler` takes beside the agent. */
export interface AgentApiOptions extends ForwardLimits {
  /** The agent's clock, in ms since the epoch: what a `Table`'s ages and `sinceSeconds` count to. Default `Date.now`. */
  readonly now?: () => number;
}

/**
 * `GET /events[?namespace=&pod=]`: the recent events as a v1 `EventList`; with `watch=1`, the
 * kept ones as `ADDED` then every new one (`ADDED`) or fold (`MODIFIED`, its count grown), a JSON
 * line each, as the API server's watch streams them.
 */
function eventsAnswer(view: AgentView, url: URL): RouteAnswer {
  const filter = {
    ...optionalParam(url, 'namespace', (namespace) => ({ namespace })),
    ...optionalParam(url, 'pod', (pod) => ({ pod })),
  };
  if (!watchAsked(url)) return { status: 200, json: renderEventList(view.recentEvents(filter), view.nodeName) };
  return {
    status: 200,
    contentType: 'application/json',
    open: async (signal) =>
      watchStream(
        view.recentEvents(filter).map((e) => ({ type: 'ADDED' as const, object: toV1Event(e, view.nodeName) })),
        (push) =>
          view.watchEvents((e) => {
            if (eventMatches(e, filter)) push([{ type: e.count === 1 ? 'ADDED' : 'MODIFIED', object: toV1Event(e, view.nodeName) }]);
          }),
        signal,
      ),
  };
}

/**
 * `GET /pods?watch=1`: the pods now as `ADDED`, then each change (`ADDED`, `MODIFIED`, `DELETED`
 * with the v1 pod), a JSON line each, as the API server's watch streams them (see `PodWatchHub`).
 */
function podsWatch(hub: PodWatchHub): RouteAnswer {
  return {
    status: 200,
    contentType: 'application/json',
    open: async (signal) => {
      // Changes heard before the stream is read wait here, in order.
      const early: (readonly WatchEvent<unknown>[])[] = [];
      let push: ((changes: readonly WatchEvent<unknown>[]) => void) | undefined;
      const { initial, stop } = await hub.subscribe((changes) => (push === undefined ? early.push(changes) : push(changes)));
      // Let go however the answer ends: even one never read (its client left at once).
      signal.addEventListener('abort', stop, { once: true });
      return watchStream<unknown>(
        initial,
        (p) => {
          push = p;
          for (const changes of early.splice(0)) p(changes);
          return stop;
        },
        signal,
      );
    },
  };
}

/**
 * `GET /sources`: each manifest source in priority order (its name, whether it has delivered, how
 * many manifests, its last problem, why it is down), with the manifests it had rejected among the
 * recent events (each with its field errors, how often, and when last).
 */
function renderSources(view: AgentView) {
  const rejected = view.recentEvents().filter((e) => e.type === 'ManifestRejected');
  return {
    kind: 'SourceList',
    items: view.sources().map((source) => ({
      ...source,
      rejected: rejected
        .filter((e) => e.source === source.name)
        .map((e) => ({ message: e.message, count: e.count, lastSeen: rfc3339(e.time) })),
    })),
  };
}

/** `watch`: `1`/`true` to watch, `0`/`false` (or absent) to list; anything else is a 400 naming it. */
export function watchAsked(url: URL): boolean {
  const watch = url.searchParams.get('watch');
  if (watch === null || watch === '0' || watch === 'false') return false;
  if (watch === '1' || watch === 'true') return true;
  throw new HttpProblem(400, `the query parameter "watch" must be true or false (1 or 0), got ${JSON.stringify(watch)}`);
}

function optionalParam<T>(url: URL, name: string, make: (value: string) => T): T | Record<string, never> {
  const value = url.searchParams.get(name);
  return value === null || value === '' ? {} : make(value);
}

async function statsOf(view: AgentView, name: string): Promise<ContainerStats> {
  let stats: ContainerStats | undefined;
  try {
    stats = await view.stats(name);
  } catch (error) {
    if (isKubeletError(error, 'Unsupported')) throw new HttpProblem(501, error.message);
    throw error;
  }
  if (stats === undefined) throw new HttpProblem(404, `no container ${JSON.stringify(name)} managed by this agent`);
  return stats;
}

/** How `agentApiListener` guards the agent's read API: a bearer token, client certificates or the cluster's review, the hosts it answers, and `/logs/`. */
export interface AgentApiListenerOptions {
  /**
   * When set, every route but `/healthz` needs `Authorization: Bearer <token>` (401 otherwise).
   * An empty or whitespace-only token throws: it would let every request in.
   */
  readonly authToken?: string;
  /**
   * True when the embedder's server is an `https` one made with `requestCert: true`, its client
   * CA as `ca` and `rejectUnauthorized: false`: a client certificate that CA signed then
   * authenticates a request as well as the token does (either is enough; `/healthz` needs neither).
   */
  readonly clientCertificates?: boolean;
  /** Token and access reviews delegated to a cluster, and anonymous requests (see `DelegatedAuth`). */
  readonly delegated?: DelegatedAuth;
  /**
   * More names a request's `Host` (and `Origin`) may give, e.g. this node's DNS name or its
   * hostname; the port is always the one the request came in on. See `checkHostAndOrigin` below.
   */
  readonly allowedHosts?: readonly string[];
  /**
   * Default true: every request, `/healthz` included, must name the address it came in on (for
   * loopback also `localhost`, `127.0.0.1`, `[::1]`) or a name in `allowedHosts`, with that port,
   * as `Host`, and carry no `Origin` but such a one (403 otherwise), so that a page in a browser on
   * this host can neither read the API through a name it rebinds to this host nor from its own
   * site. False only behind a proxy that rewrites `Host` and makes these checks itself.
   */
  readonly checkHostAndOrigin?: boolean;
  /** Where a request that failed inside the agent (a 500) is logged. */
  readonly logger?: Logger;
  /** Serves this host directory under `/logs/` too (`hostLogsHandler`; the CLI serves `/var/log`). Default: no `/logs/`. */
  readonly hostLogDirectory?: string;
}

/**
 * The agent's read API (see `agentApiHandler`) and nothing else, as a listener for an embedder's
 * own server: `http.createServer(agentApiListener(kubelet)).listen(8080)`. Any other path is a 404
 * `{ error }`, so no manifest can be posted through it. Its `upgrade` serves `/exec`, `/attach` and
 * `/portForward` behind the same guards: `server.on('upgrade', listener.upgrade)`. Timeouts and the
 * address are the embedder's server's to set. Throws on an empty `authToken` or a malformed `allowedHosts` name.
 */
export function agentApiListener(
  view: AgentView,
  options: AgentApiListenerOptions = {},
): RequestListener & { readonly upgrade: (req: IncomingMessage, socket: Duplex, head: Buffer) => void } {
  const extra = allowedHostNames(options.allowedHosts);
  const api = agentApiHandler(view);
  const handlers = [api, ...(options.hostLogDirectory === undefined ? [] : [hostLogsHandler({ directory: options.hostLogDirectory })])];
  const guards = {
    authToken: options.authToken,
    clientCertificates: options.clientCertificates,
    delegated: options.delegated,
    // The listener does not know what its server was bound to, but each connection knows the
    // address it reached: a server bound to every interface is named by the one a client used.
    reachableAs:
      options.checkHostAndOrigin === false
        ? undefined
        : (req: IncomingMessage) =>
            reachableNames(
              req.socket.localAddress ?? '',
              req.socket.localPort ?? 0,
              extra,
              (req.socket as Partial<TLSSocket>).encrypted === true ? 'https:' : 'http:',
            ),
    logger: options.logger ?? silentLogger,
  };
  return Object.assign(routeListener(handlers, guards), {
    upgrade: upgradeListener(api.upgrade === undefined ? [] : [api.upgrade], guards),
  });
}
