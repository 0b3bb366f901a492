import { createServer, type IncomingMessage, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { isIP, type AddressInfo, type Socket } from 'node:net';
import {
  Tokens,
  silentLogger,
  systemClock,
  type Clock,
  type ContainerManifest,
  type Logger,
  type ManifestSource,
  type Registry,
  type SourceSink,
  hostAccessOf,
  isLoopback,
  objectKey,
  type HostAccess,
} from '@kubelet-ts/core';
import { ManifestIntake, type HeldDocument, type SourceLimits } from '@kubelet-ts/manifest';
import { HttpProblem, allow, checkAuthToken, decodePathSegment, readBody, requireContentType, routeListener } from './http-kit.js';
import { upgradeListener } from './http-kit.js';
import type { DelegatedAuth } from './request-auth.js';
import { AuthThrottle, type AuthThrottleOptions } from './auth-throttle.js';
import { allowedHostNames, reachableNames, type ReachableNames } from './request-guard.js';
import { ServerTls, type ServerTlsOptions } from './server-tls.js';
import { answerPlainHttp } from './plain-http-answer.js';
import { checkAuthenticated, idClash, listenProblem } from './server-guards.js';
import type { RouteAnswer, RouteHandler, UpgradeHandler } from './route-handler.js';

/** With the host access the manifests may take (`HostAccess`: the CLI's `--allow-host-mounts`, `--allow-host-network`). */
export interface ServerManifestSourceOptions extends HostAccess {
  /** Default `127.0.0.1`: the server is reachable from this host only unless told otherwise. */
  readonly address?: string;
  /** Default 10250, the kubelet's port. 0 picks a free one (see `url`). */
  readonly port?: number;
  /**
   * When set, every route but `/healthz` (mounted ones too) needs `Authorization: Bearer <token>`,
   * or, with `tls.clientCaFile` too, a client certificate that CA signed: either one is enough, as
   * the kubelet accepts any one of its authenticators. An empty or whitespace-only token throws:
   * it would let every request in.
   */
  readonly authToken?: string;
  /**
   * Serve HTTPS with this certificate, reloaded when its files change (kubelet-ts:
   * `--tls-cert-file`, `--tls-private-key-file`, `--client-ca-file`).
   */
  readonly tls?: ServerTlsOptions;
  /**
   * Authentication and authorization delegated to a cluster (the kubelet's
   * `--authentication-token-webhook`, `--authorization-mode Webhook`, `--anonymous-auth`): bearer
   * tokens reviewed, every request's `nodes/<subresource>` access reviewed, on every route but
   * `/healthz` (see `DelegatedAuth`). Beside `authToken` and client certificates, which still
   * authenticate (then reviewed like any user).
   */
  readonly delegated?: DelegatedAuth;
  /**
   * Default true: a request's `Host` must name the server (see `allowedHosts`). False for a node of
   * a cluster: the API server's proxy (`kubectl get --raw /api/v1/nodes/N/proxy/…`, exec, logs)
   * passes on the `Host` its own client gave, as the kubelet takes it. The check is against DNS
   * rebinding, which gains a page nothing where every request must carry credentials a browser does
   * not add by itself; `Origin` is still checked.
   */
  readonly checkHost?: boolean;
  /**
   * Secure by default: a server bound to an address that is not loopback must authenticate its
   * callers (`authToken`, or `tls.clientCaFile`), or the constructor throws. A certificate of the
   * server's own is not enough: it encrypts, but lets anyone in. True serves unauthenticated all
   * the same (kubelet-ts: `--insecure-allow-unauthenticated`).
   */
  readonly insecureAllowUnauthenticated?: boolean;
  /** How an address that keeps failing authentication is slowed down (429); see `AuthThrottle`. */
  readonly authThrottle?: AuthThrottleOptions;
  /** Time for the certificate reload and the auth throttle. Default `systemClock`. */
  readonly clock?: Clock;
  /**
   * More names a request's `Host` (and `Origin`) may give for the server, e.g. the node's DNS name
   * behind which it is reached; the port is always the listening one. Without them, a request must
   * name an address the server listens on (for loopback also `localhost`, `127.0.0.1`, `[::1]`;
   * for `0.0.0.0`/`::` any local interface address, `localhost` and the hostname), or it is a 403:
   * that is what keeps a page that rebinds its own name to this host from reading the agent.
   */
  readonly allowedHosts?: readonly string[];
  /** Bodies larger than this get 413. Default 1 MiB. */
  readonly maxBodyBytes?: number;
  /**
   * What the posted manifests may add up to (default 1,000 manifests, 16 MiB as JSON): a POST that
   * would put the server over them gets 413 and changes nothing.
   */
  readonly limits?: SourceLimits;
  /** A request (headers and body) must arrive within this. Default 10 s. */
  readonly requestTimeoutMs?: number;
  /**
   * With `tls`: a client must send its first byte within this, and then finish the TLS handshake
   * within it again, or it is closed. Default 10 s, like a request (Node's own is 120 s, which let
   * silent connections use up the agent's file descriptors).
   */
  readonly handshakeTimeoutMs?: number;
  /**
   * Connections open at once, beyond which new ones are closed as they come until some end.
   * Default 1,024; keep it below the process's file descriptor limit, which the engine's sockets
   * and the agent's files share.
   */
  readonly maxConnections?: number;
  /** Default `server`. */
  readonly name?: string;
  readonly logger?: Logger;
}

const ADAPTER = 'server';
const DEFAULT_MAX_BODY = 1024 * 1024;
const DEFAULT_TIMEOUT_MS = 10_000;
const DEFAULT_MAX_CONNECTIONS = 1024;
/** What a manifest may be posted as; none of them is a type a browser form can send. */
const MANIFEST_TYPES = ['application/json', 'application/yaml', 'application/x-yaml', 'text/yaml', 'text/x-yaml'];

/**
 * The agent's own HTTP server, as in 2014, as a manifest source: `POST /container` adds or
 * replaces one manifest, `POST /containers` replaces the set, `DELETE /container/<id>` removes one.
 * A request changes the set only when it is valid as a whole, so no bad request can disturb what runs.
 *
 * Every request must name the server as it listens (`Host`, see `allowedHosts`) and come from no
 * other site (`Origin`), and a posted body must say it is JSON or YAML (`Content-Type`, 415
 * otherwise): a page in the user's browser can neither post a manifest nor read the agent.
 *
 * It serves nothing else until told to: `mount(agentApiHandler(agent))` adds the agent's read API
 * (`/healthz`, `/pods`, …) on the same port. Until then those paths are 404, like any path no
 * route answers (before `mount` existed they were 503 until an agent was attached). An embedder
 * who wants the read API without accepting manifests serves `agentApiListener` instead.
 */
export class ServerManifestSource implements ManifestSource {
  readonly name: string;
  private readonly address: string;
  private readonly port: number;
  private readonly authToken: string | undefined;
  private readonly delegated: DelegatedAuth | undefined;
  private readonly checkHost: boolean;
  private readonly tls: ServerTls | undefined;
  private readonly throttle: AuthThrottle;
  private readonly allowedHosts: readonly string[];
  private readonly maxBodyBytes: number;
  private readonly requestTimeoutMs: number;
  private readonly handshakeTimeoutMs: number;
  private readonly maxConnections: number;
  private readonly logger: Logger;
  /** Each manifest posted is a document of its own, named by its id, with its warnings. */
  private readonly intake: ManifestIntake;
  /** The manifest routes first, then mounted handlers in the order they were mounted. */
  private readonly routes: RouteHandler[] = [(req, url) => this.manifestRoute(req, url)];
  private readonly upgrades: UpgradeHandler[] = [];
  private server: Server | undefined;
  /**
   * Every connection open, TLS or not: a half-open handshake is no HTTP connection yet, so
   * `closeAllConnections` would leave it, and `close` would wait for its timeout.
   */
  private readonly sockets = new Set<Socket>();
  /** What requests may call this server, known once it listens (the port may have been 0). */
  private reachable: ReachableNames | undefined;
  /** Whether the agent's checkpoint has been taken up (at the first start). */
  private resumed = false;

  constructor(options: ServerManifestSourceOptions = {}) {
    this.name = options.name ?? ADAPTER;
    this.address = options.address ?? '127.0.0.1';
    this.port = options.port ?? 10250;
    checkAuthToken(options.authToken);
    this.authToken = options.authToken;
    this.delegated = options.delegated;
    this.checkHost = options.checkHost ?? true;
    this.logger = options.logger ?? silentLogger;
    const clock = options.clock ?? systemClock;
    checkAuthenticated(this.address, options);
    this.tls = options.tls === undefined ? undefined : new ServerTls(options.tls, clock, this.logger);
    this.throttle = new AuthThrottle(clock, options.authThrottle);
    // A name (not an address) it was told to bind is one it listens on too.
    this.allowedHosts = [...allowedHostNames(options.allowedHosts), ...(isIP(this.address) === 0 ? [this.address.toLowerCase()] : [])];
    this.maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY;
    this.intake = new ManifestIntake({
      adapter: ADAPTER,
      limits: options.limits,
      maxBytes: this.maxBodyBytes,
      ...hostAccessOf(options),
    });
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.handshakeTimeoutMs = options.handshakeTimeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.maxConnections = options.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
  }

  /**
   * Serves `handler`'s routes on this server too, behind the same bearer token (all but `/healthz`)
   * and timeouts; before or after `start`, from the next request on. A path the manifest routes or
   * an earlier mounted handler answer is theirs: `handler` is asked only about the others.
   */
  mount(handler: RouteHandler): void {
    this.routes.push(handler);
    if (handler.upgrade !== undefined) this.upgrades.push(handler.upgrade);
  }

  /** The base URL once listening, e.g. `http://127.0.0.1:10250` (`https://` with `tls`). */
  get url(): string {
    const address = this.server?.address() as AddressInfo | null | undefined;
    if (address == null) throw new Error('the server is not listening');
    const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    return `${this.tls === undefined ? 'http' : 'https'}://${host}:${address.port}`;
  }

  async start(sink: SourceSink): Promise<void> {
    const serverOptions = {
      requestTimeout: this.requestTimeoutMs,
      headersTimeout: this.requestTimeoutMs,
      // Node checks the timeouts above only this often (30 s by default).
      connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(this.requestTimeoutMs / 4))),
    };
    const guards = {
      authToken: this.authToken,
      clientCertificates: this.tls?.clientCertificates ?? false,
      delegated: this.delegated,
      throttle: this.throttle,
      reachableAs: () => this.reachableNames(server),
      checkHost: this.checkHost,
      logger: this.logger,
    };
    const listener = routeListener(this.routes, guards);
    const tls = this.tls;
    const https =
      tls === undefined
        ? undefined
        : createHttpsServer({ ...serverOptions, ...tls.serverOptions(), handshakeTimeout: this.handshakeTimeoutMs }, listener);
    if (https !== undefined) answerPlainHttp(https, this.handshakeTimeoutMs);
    const server: Server = https ?? createServer(serverOptions, listener);
    server.keepAliveTimeout = 5_000;
    server.on('upgrade', upgradeListener(this.upgrades, guards));
    this.holdConnections(server);
    await new Promise<void>((resolve, reject) => {
      const failed = (error: NodeJS.ErrnoException) => reject(this.cannotListen(error));
      server.once('error', failed);
      server.listen(this.port, this.address, () => {
        server.off('error', failed);
        resolve();
      });
    });
    this.server = server;
    if (https !== undefined) tls?.watch(https);
    this.logger.info(
      {
        url: this.url,
        auth: this.authToken !== undefined,
        clientCertificates: this.tls?.clientCertificates ?? false,
        tokenReview: this.delegated?.authenticateToken !== undefined,
        accessReview: this.delegated?.authorize !== undefined,
        allowedHosts: this.allowedHosts,
      },
      'agent server listening',
    );
    if (this.tls === undefined && this.authToken !== undefined && !isLoopback(this.address)) {
      this.logger.warn(
        { address: this.address },
        'the bearer token crosses the network in clear text: serve TLS (--tls-cert-file, --tls-private-key-file)',
      );
    }
    // What was posted before a restart of this source is kept, and what was posted before the
    // agent's restart (its checkpoint) is taken up once: deliver it (or the empty set) now.
    const resumed = this.resume(sink.restored);
    this.intake.start(sink);
    if (resumed) this.intake.commit();
  }

  /**
   * Takes up the set the agent kept from before its restart, at the first start only: each
   * manifest a document of its own, as if posted again. Over the limits (they were lowered), what
   * fits is not chosen: nothing is taken up and nothing delivered, so the agent keeps running the
   * kept set until the next request replaces it; false then.
   */
  private resume(restored: readonly ContainerManifest[] | undefined): boolean {
    if (this.resumed) return true;
    this.resumed = true;
    if (restored === undefined || restored.length === 0) return true;
    const problem = this.intake.hold(restored.map((manifest) => ({ origin: manifest.id, manifests: [manifest] })));
    if (problem === undefined) {
      this.logger.info({ manifests: restored.length }, 'took up the manifests posted before the restart');
      return true;
    }
    this.logger.error(
      { manifests: restored.length },
      `the manifests posted before the restart would hold ${problem}: they run as kept, and the next request replaces them`,
    );
    return false;
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    this.reachable = undefined;
    this.intake.close();
    this.tls?.stop();
    if (server === undefined) return;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
      for (const socket of this.sockets) socket.destroy();
    });
  }

  /** Says why the server cannot listen, at error level (see `listenProblem`), and gives the error to reject with. */
  private cannotListen(error: NodeJS.ErrnoException): Error {
    const problem = listenProblem(error, this.address, this.port);
    this.logger.error({ address: this.address, port: this.port, code: error.code }, problem.message);
    return problem;
  }

  /** Bounds the connections open at once (issue 27 item 1), and keeps them so that `close` ends every one. */
  private holdConnections(server: Server): void {
    server.maxConnections = this.maxConnections;
    server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
    let saidFull = false;
    server.on('drop', () => {
      if (!saidFull)
        this.logger.warn(
          { maxConnections: this.maxConnections },
          'agent server has its maximum of connections open; new ones are closed until some end',
        );
      saidFull = true;
    });
  }

  private reachableNames(server: Server): ReachableNames {
    if (this.reachable !== undefined) return this.reachable;
    const { address, port } = server.address() as AddressInfo;
    return (this.reachable = reachableNames(address, port, this.allowedHosts, this.tls === undefined ? 'http:' : 'https:'));
  }

  private async manifestRoute(req: IncomingMessage, url: URL): Promise<RouteAnswer | undefined> {
    const path = url.pathname;
    if (path === '/container') {
      allow(req, 'POST');
      requireContentType(req, MANIFEST_TYPES);
      return this.postOne(await readBody(req, this.maxBodyBytes));
    }
    if (path === '/containers') {
      allow(req, 'POST');
      requireContentType(req, MANIFEST_TYPES);
      return this.postAll(await readBody(req, this.maxBodyBytes));
    }
    if (path.startsWith('/container/')) {
      allow(req, 'DELETE');
      return this.deleteOne(decodePathSegment(path.slice('/container/'.length)));
    }
    return undefined;
  }

  private postOne(body: Buffer): RouteAnswer {
    const documents = this.parse(body);
    if (documents.length !== 1)
      throw new HttpProblem(400, `POST /container takes exactly one manifest, got ${documents.length}; use POST /containers for a list`);
    const [document] = documents as [HeldDocument];
    this.refuseClash(document);
    const replaced = this.intake.has(document.origin);
    this.hold([document]);
    return { status: replaced ? 200 : 201, json: { id: document.origin, action: replaced ? 'replaced' : 'created' } };
  }

  private postAll(body: Buffer): RouteAnswer {
    const documents = this.parse(body);
    const seen = new Set<string>();
    const duplicates = documents.filter((d) => seen.size === seen.add(d.origin).size).map((d) => d.origin);
    if (duplicates.length > 0) throw new HttpProblem(400, `duplicate manifest ids: ${duplicates.join(', ')}`);
    this.hold(documents, { replaceAll: true });
    return { status: 200, json: { ids: documents.map((d) => d.origin) } };
  }

  /** A 409 when the posted pod's id is another namespace's pod (see `idClash`). */
  private refuseClash(document: HeldDocument): void {
    const clash = idClash(document.origin, document.manifests[0], this.intake.held(document.origin)?.[0]);
    if (clash !== undefined) throw new HttpProblem(409, clash);
  }

  private deleteOne(id: string): RouteAnswer {
    if (!this.intake.drop(id)) throw new HttpProblem(404, `no manifest ${JSON.stringify(id)} was posted to this agent`);
    this.intake.commit();
    return { status: 200, json: { id, action: 'deleted' } };
  }

  /** A 413 when the server would hold more than its limits allow, and the set stays as it was. */
  private hold(documents: readonly HeldDocument[], options: { replaceAll?: boolean } = {}): void {
    const problem = this.intake.hold(documents, options);
    if (problem !== undefined) throw new HttpProblem(413, `the server would hold ${problem}; delete some first (DELETE /container/<id>)`);
    this.intake.commit();
  }

  /**
   * Every manifest valid, each a document named by its id, or a 400 naming every wrong field
   * (prefixed by list position).
   */
  private parse(body: Buffer): HeldDocument[] {
    // No idFor: a request has no origin to name a pod after, so a manifest without an id is a 400
    // naming `id`, as the 2014 server's was.
    const parsed = this.intake.parse(body, 'request body');
    if (parsed.unreadable !== undefined) throw new HttpProblem(400, parsed.unreadable.message);
    if (parsed.rejected.length > 0) {
      const fieldErrors = parsed.rejected.flatMap((r) =>
        r.errors.map((e) => ({
          path: r.index === undefined ? e.path : `[${r.index}]${e.path === '' ? '' : `.${e.path}`}`,
          message: e.message,
        })),
      );
      throw new HttpProblem(400, `invalid manifest: ${fieldErrors.map((e) => `${e.path}: ${e.message}`).join('; ')}`, fieldErrors);
    }
    const pods = parsed.manifests.map((m) => ({ origin: m.id, manifests: [m], warnings: parsed.warnings.filter((w) => w.manifest === m) }));
    // A ConfigMap or Secret is a document of its own, named by its key (no pod id has a '/').
    return [...pods, ...parsed.objects.map((o) => ({ origin: objectKey(o.kind, o.namespace, o.name), manifests: [], objects: [o] }))];
  }
}

/**
 * Registers the agent's server as a source and returns it; `mount(agentApiHandler(agent))` once the
 * agent exists to serve its read API there too.
 */
export function registerServerSource(registry: Registry, options: ServerManifestSourceOptions = {}): ServerManifestSource {
  const source = new ServerManifestSource(options);
  registry.register(Tokens.Source, { useValue: source });
  return source;
}
