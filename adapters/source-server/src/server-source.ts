import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  Tokens,
  parseManifests,
  silentLogger,
  type AgentView,
  type ContainerManifest,
  type FieldError,
  type Logger,
  type ManifestSource,
  type Registry,
  type SourceSink,
} from '@kubelet-ts/core';

export interface ServerManifestSourceOptions {
  /** Default `127.0.0.1`: the server is reachable from this host only unless told otherwise. */
  readonly address?: string;
  /** Default 10250, the kubelet's port. 0 picks a free one (see `url`). */
  readonly port?: number;
  /** When set, every route but `/healthz` needs `Authorization: Bearer <token>`. */
  readonly authToken?: string;
  /** Bodies larger than this get 413. Default 1 MiB. */
  readonly maxBodyBytes?: number;
  /** A request (headers and body) must arrive within this. Default 10 s. */
  readonly requestTimeoutMs?: number;
  /** Default `server`. */
  readonly name?: string;
  /** The agent, for `/containerInfo`, `/pods` and `/healthz`; may also be given later with `attach`. */
  readonly view?: AgentView;
  readonly logger?: Logger;
}

const ADAPTER = 'server';
const DEFAULT_MAX_BODY = 1024 * 1024;

class HttpProblem extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly fieldErrors: readonly FieldError[] = [],
  ) {
    super(message);
  }
}

/**
 * The agent's own HTTP server, as in 2014, and a manifest source: `POST /container` adds or
 * replaces one manifest, `POST /containers` replaces the set, `DELETE /container/<id>` removes one;
 * it also shows the agent: `/containerInfo`, `/pods`, `/plan`, `/metrics`, `/healthz`.
 * A request changes the set only when it is valid as a whole, so no bad request can disturb what runs.
 */
export class ServerManifestSource implements ManifestSource {
  readonly name: string;
  private readonly address: string;
  private readonly port: number;
  private readonly tokenDigest: Buffer | undefined;
  private readonly maxBodyBytes: number;
  private readonly requestTimeoutMs: number;
  private readonly logger: Logger;
  private readonly manifests = new Map<string, ContainerManifest>();
  private view: AgentView | undefined;
  private server: Server | undefined;
  private sink: SourceSink | undefined;

  constructor(options: ServerManifestSourceOptions = {}) {
    this.name = options.name ?? ADAPTER;
    this.address = options.address ?? '127.0.0.1';
    this.port = options.port ?? 10250;
    this.tokenDigest = options.authToken === undefined ? undefined : digest(options.authToken);
    this.maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 10_000;
    this.logger = options.logger ?? silentLogger;
    this.view = options.view;
  }

  /** Gives the server the agent to show (the agent is usually made after its sources). */
  attach(view: AgentView): void {
    this.view = view;
  }

  /** The base URL once listening, e.g. `http://127.0.0.1:10250`. */
  get url(): string {
    const address = this.server?.address() as AddressInfo | null | undefined;
    if (address == null) throw new Error('the server is not listening');
    const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    return `http://${host}:${address.port}`;
  }

  async start(sink: SourceSink): Promise<void> {
    this.sink = sink;
    const server = createServer(
      {
        requestTimeout: this.requestTimeoutMs,
        headersTimeout: this.requestTimeoutMs,
        // Node checks the timeouts above only this often (30 s by default).
        connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(this.requestTimeoutMs / 4))),
      },
      (req, res) => {
        void this.handle(req, res);
      },
    );
    server.keepAliveTimeout = 5_000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, this.address, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
    this.logger.info({ url: this.url, auth: this.tokenDigest !== undefined }, 'agent server listening');
    // What was posted before a restart of this source is kept: deliver it (or the empty set) now.
    sink.update([...this.manifests.values()]);
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    this.sink = undefined;
    if (server === undefined) return;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      const url = new URL(req.url ?? '/', 'http://agent');
      if (url.pathname !== '/healthz') this.authorize(req);
      const body = await this.route(req, url);
      if (body.contentType === undefined) send(res, body.status, body.json);
      else {
        res.writeHead(body.status, { 'content-type': body.contentType });
        res.end(String(body.json));
      }
    } catch (error) {
      if (error instanceof HttpProblem) {
        const headers: Record<string, string> = error.status === 401 ? { 'www-authenticate': 'Bearer' } : error.status === 413 ? { connection: 'close' } : {};
        // An oversized body is not read to its end: answer, then drop the connection.
        if (error.status === 413) res.once('finish', () => req.destroy());
        send(res, error.status, { error: error.message, ...(error.fieldErrors.length === 0 ? {} : { fieldErrors: error.fieldErrors }) }, headers);
      } else {
        this.logger.error({ err: error, url: req.url }, 'request failed');
        send(res, 500, { error: 'internal error' });
      }
    }
  }

  /** `json` is sent as JSON unless a `contentType` says it is already text. */
  private async route(req: IncomingMessage, url: URL): Promise<{ status: number; json: unknown; contentType?: string }> {
    const method = req.method ?? 'GET';
    const path = url.pathname;
    if (path === '/container') {
      allow(method, 'POST');
      return this.postOne(await this.readBody(req));
    }
    if (path === '/containers') {
      allow(method, 'POST');
      return this.postAll(await this.readBody(req));
    }
    if (path.startsWith('/container/')) {
      allow(method, 'DELETE');
      return this.deleteOne(decodePathSegment(path.slice('/container/'.length)));
    }
    if (path === '/containerInfo') {
      allow(method, 'GET');
      const name = url.searchParams.get('container');
      if (name === null || name === '') throw new HttpProblem(400, 'the query parameter "container" is required');
      const info = await this.requireView().containerInfo(name);
      if (info === undefined) throw new HttpProblem(404, `no container ${JSON.stringify(name)} managed by this agent`);
      return { status: 200, json: info.raw };
    }
    if (path === '/pods') {
      allow(method, 'GET');
      return { status: 200, json: await this.requireView().pods() };
    }
    if (path === '/plan') {
      allow(method, 'GET');
      return { status: 200, json: await this.requireView().plan() };
    }
    if (path === '/metrics') {
      allow(method, 'GET');
      const { contentType, body } = await this.requireView().metrics();
      return { status: 200, json: body, contentType };
    }
    if (path === '/healthz') {
      allow(method, 'GET');
      const health = this.requireView().health();
      return { status: health.healthy ? 200 : 503, json: { status: health.healthy ? 'ok' : 'unhealthy', ...health } };
    }
    throw new HttpProblem(404, `no route ${method} ${path}`);
  }

  private postOne(body: Buffer): { status: number; json: unknown } {
    const manifests = this.parse(body);
    if (manifests.length !== 1) throw new HttpProblem(400, `POST /container takes exactly one manifest, got ${manifests.length}; use POST /containers for a list`);
    const [manifest] = manifests as [ContainerManifest];
    const replaced = this.manifests.has(manifest.id);
    this.manifests.set(manifest.id, manifest);
    this.deliver();
    return { status: replaced ? 200 : 201, json: { id: manifest.id, action: replaced ? 'replaced' : 'created' } };
  }

  private postAll(body: Buffer): { status: number; json: unknown } {
    const manifests = this.parse(body);
    const seen = new Set<string>();
    const duplicates = manifests.filter((m) => seen.size === seen.add(m.id).size).map((m) => m.id);
    if (duplicates.length > 0) throw new HttpProblem(400, `duplicate manifest ids: ${duplicates.join(', ')}`);
    this.manifests.clear();
    for (const m of manifests) this.manifests.set(m.id, m);
    this.deliver();
    return { status: 200, json: { ids: manifests.map((m) => m.id) } };
  }

  private deleteOne(id: string): { status: number; json: unknown } {
    if (!this.manifests.delete(id)) throw new HttpProblem(404, `no manifest ${JSON.stringify(id)} was posted to this agent`);
    this.deliver();
    return { status: 200, json: { id, action: 'deleted' } };
  }

  /** Every manifest valid, or a 400 naming every wrong field (prefixed by list position). */
  private parse(body: Buffer): ContainerManifest[] {
    const parsed = parseManifests(body, 'request body', { maxBytes: this.maxBodyBytes });
    if (parsed.unreadable !== undefined) throw new HttpProblem(400, parsed.unreadable.message);
    if (parsed.rejected.length > 0) {
      const fieldErrors = parsed.rejected.flatMap((r) =>
        r.errors.map((e) => ({ path: r.index === undefined ? e.path : `[${r.index}]${e.path === '' ? '' : `.${e.path}`}`, message: e.message })),
      );
      throw new HttpProblem(400, `invalid manifest: ${fieldErrors.map((e) => `${e.path}: ${e.message}`).join('; ')}`, fieldErrors);
    }
    return [...parsed.manifests];
  }

  private deliver(): void {
    this.sink?.update([...this.manifests.values()]);
  }

  private requireView(): AgentView {
    if (this.view === undefined) throw new HttpProblem(503, 'the agent is not attached to this server yet');
    return this.view;
  }

  private authorize(req: IncomingMessage): void {
    if (this.tokenDigest === undefined) return;
    const header = req.headers.authorization ?? '';
    const presented = header.startsWith('Bearer ') ? header.slice('Bearer '.length) : '';
    // Digests have one length, so the comparison takes the same time whatever was presented.
    if (!timingSafeEqual(digest(presented), this.tokenDigest)) throw new HttpProblem(401, 'a valid bearer token is required');
  }

  private async readBody(req: IncomingMessage): Promise<Buffer> {
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > this.maxBodyBytes) throw new HttpProblem(413, `body larger than ${this.maxBodyBytes} bytes`);
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > this.maxBodyBytes) throw new HttpProblem(413, `body larger than ${this.maxBodyBytes} bytes`);
      chunks.push(chunk);
    }
    // Bytes: parsing decodes them strictly, so a body that is not UTF-8 is a 400.
    return Buffer.concat(chunks);
  }
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

/** A malformed escape (`%E0%A4%A`) is the client's mistake: 400, not a 500 from decodeURIComponent. */
function decodePathSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new HttpProblem(400, `malformed percent-encoding in ${JSON.stringify(segment.slice(0, 70))}`);
  }
}

function allow(method: string, expected: string): void {
  if (method !== expected) throw new HttpProblem(405, `use ${expected}`);
}

function send(res: ServerResponse, status: number, json: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent) return;
  const body = JSON.stringify(json);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), ...headers });
  res.end(body);
}

/** Registers the agent's server as a source and returns it; `attach` the agent once it exists. */
export function registerServerSource(registry: Registry, options: ServerManifestSourceOptions = {}): ServerManifestSource {
  const source = new ServerManifestSource(options);
  registry.register(Tokens.Source, { useValue: source });
  return source;
}
