import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import got, { TimeoutError, type Response } from 'got';
import {
  ChangeReporter,
  KubeletError,
  Tokens,
  derivedManifestId,
  systemClock,
  type Clock,
  type ManifestSource,
  type Registry,
  type SourceSink,
  type TimerHandle,
  hostAccessOf,
  type HostAccess,
} from '@kubelet-ts/core';
import { ManifestIntake } from '@kubelet-ts/manifest';

/** With the host access the manifests may take (`HostAccess`: the CLI's `--allow-host-mounts`, `--allow-host-network`). */
export interface HttpManifestSourceOptions extends HostAccess {
  /** An `http://` or `https://` URL whose body is one manifest or a list, YAML or JSON. */
  readonly url: string;
  /** Wait this long after one poll ends before the next begins. Default 20 s. */
  readonly checkFrequencyMs?: number;
  /** Give up on a poll (headers and body together) after this long. Default 10 s. */
  readonly timeoutMs?: number;
  /**
   * Extra request headers sent with every poll, e.g. `Authorization`. They are never sent to
   * another origin: while any is set, a redirect to another scheme, host or port is refused (an
   * `Unavailable` error naming both URLs) rather than followed; same-origin redirects are followed.
   */
  readonly headers?: Readonly<Record<string, string>>;
  /** For an `https://` URL: the CA to trust and a client certificate (`--manifest-url-*-file`). */
  readonly tls?: HttpSourceTlsOptions;
  /** Default `http`. */
  readonly name?: string;
  /** Time for the wait between polls. Default `systemClock`. */
  readonly clock?: Clock;
}

/**
 * PEM files for `https://` (kubelet-ts: `--manifest-url-ca-file`, `--manifest-url-cert-file`,
 * `--manifest-url-key-file`), read again at each poll so that a rotated certificate is used from
 * the next poll on. A server that does not chain to `caFile` is refused (`Unavailable`).
 */
export interface HttpSourceTlsOptions {
  /** Default: node's bundled roots. */
  readonly caFile?: string;
  /** A client certificate, for a server that asks for one; needs `keyFile`. */
  readonly certFile?: string;
  readonly keyFile?: string;
}

const ADAPTER = 'http';
const MAX_BODY_BYTES = 1024 * 1024;
/** RFC 9110 `token`: what a header name may be made of. */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Control characters other than tab would let a flag smuggle a second header or end the request. */
const HEADER_VALUE_FORBIDDEN = /[\u0000-\u0008\u000a-\u001f\u007f]/;

/**
 * Reads one `--manifest-url-header 'Name: value'` flag. The value is everything after the first
 * colon, trimmed, so values that contain colons (URLs, `Basic` credentials) survive.
 */
export function parseHeaderFlag(text: string): [name: string, value: string] {
  const colon = text.indexOf(':');
  if (colon < 0) throw new Error(`malformed header ${JSON.stringify(text)}: expected "Name: value"`);
  const name = text.slice(0, colon).trim();
  const value = text.slice(colon + 1).trim();
  if (!HEADER_NAME.test(name)) {
    throw new Error(
      `malformed header ${JSON.stringify(text)}: ${name === '' ? 'the name is empty' : `${JSON.stringify(name)} is not a valid header name`}; expected "Name: value"`,
    );
  }
  if (HEADER_VALUE_FORBIDDEN.test(value)) throw new Error(`malformed header ${JSON.stringify(text)}: the value holds a control character`);
  return [name, value];
}

/**
 * The `--manifest-url` source: polls a URL and delivers what it serves.
 *
 * A backend that fails (down, slow, 5xx, garbage) is reported once through `error` and the last
 * good set stays in force: a flaky web server must never make the agent stop containers.
 */
export class HttpManifestSource implements ManifestSource {
  readonly name: string;
  private readonly url: string;
  /** The URL as messages show it: a password in it must not end up in every log line. */
  private readonly where: string;
  private readonly checkFrequencyMs: number;
  private readonly timeoutMs: number;
  private readonly headers: Readonly<Record<string, string>>;
  private readonly tls: HttpSourceTlsOptions | undefined;
  private readonly clock: Clock;
  /** The body is the source's one document: its last good manifests, problems and warnings. */
  private readonly intake: ManifestIntake;
  /** Names a manifest served without an id, by its position in the body (see `manifestIdFor`). */
  private readonly idFor: (position: number | undefined) => string;
  // Our own agents, without keep-alive: a poll every 20 s gains nothing from an idle socket, which
  // the server may close just as we reuse it (a spurious ECONNRESET), and close() can end them all.
  private readonly agents = { http: new HttpAgent({ keepAlive: false }), https: new HttpsAgent({ keepAlive: false }) };
  private sink: SourceSink | undefined;
  private timer: TimerHandle | undefined;
  private polling: Promise<void> | undefined;
  private request: AbortController | undefined;
  private closed = false;
  /** The last body read whole, and the validators (ETag, Last-Modified) that name it. */
  private body: Buffer | undefined;
  private etag: string | undefined;
  private lastModified: string | undefined;
  /** The request failure last said, forgotten on any answer, so that the next failure is said again. */
  private readonly failure = new ChangeReporter();

  constructor(options: HttpManifestSourceOptions) {
    const protocol = URL.canParse(options.url) ? new URL(options.url).protocol : '';
    if (protocol !== 'http:' && protocol !== 'https:')
      throw new Error(`manifest URL must be http:// or https://, got ${JSON.stringify(options.url)}`);
    this.url = options.url;
    this.where = withoutPassword(options.url);
    this.checkFrequencyMs = options.checkFrequencyMs ?? 20_000;
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.headers = Object.fromEntries(Object.entries(options.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
    this.tls = checkTlsFiles(options.tls);
    this.name = options.name ?? ADAPTER;
    this.clock = options.clock ?? systemClock;
    this.intake = new ManifestIntake({
      adapter: ADAPTER,
      maxBytes: MAX_BODY_BYTES,
      ...hostAccessOf(options),
      describedAs: `${this.where}: the body's manifests`,
    });
    const named = manifestIdFor(options.url);
    this.idFor = (position) => derivedManifestId(named.name, named.origin, position);
  }

  /** Polls once before resolving, whatever the answer: a backend that is down is an `error`, not a failed start. */
  async start(sink: SourceSink): Promise<void> {
    this.sink = sink;
    this.closed = false;
    // A (re)start tells its sink everything afresh: the first good read is delivered even if it
    // equals what an earlier start delivered, and standing problems are reported again.
    this.body = undefined;
    this.etag = undefined;
    this.lastModified = undefined;
    this.intake.start(sink);
    this.failure.reset();
    await this.poll();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.intake.close();
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.request?.abort();
    await this.polling;
    this.agents.http.destroy();
    this.agents.https.destroy();
  }

  /** One poll, and the next one `checkFrequencyMs` after it ends: polls never overlap. */
  private poll(): Promise<void> {
    this.polling = this.check()
      .catch((error: unknown) =>
        this.fail(new KubeletError('Internal', `${this.where}: ${String(error)}`, { adapter: ADAPTER, cause: error })),
      )
      .finally(() => {
        this.polling = undefined;
        if (!this.closed) this.timer = this.clock.setTimeout(() => void this.poll(), this.checkFrequencyMs);
      });
    return this.polling;
  }

  private async check(): Promise<void> {
    const request = new AbortController();
    this.request = request;
    let tooLarge = false;
    let response: Response<Buffer>;
    try {
      const pending = got(this.url, {
        headers: this.requestHeaders(),
        agent: this.agents,
        https: await this.tlsFiles(),
        hooks: { beforeRedirect: [(next) => this.checkRedirect(next.url)] },
        retry: { limit: 0 }, // the poll loop is the retry
        timeout: { request: this.timeoutMs },
        throwHttpErrors: false,
        followRedirect: true,
        // Bytes, so that a body that is not UTF-8 is unreadable rather than read with replacement characters.
        responseType: 'buffer',
        signal: request.signal,
      });
      // Checked as it arrives (and against Content-Length before it does), so that a huge or
      // endless body costs at most 1 MiB of memory.
      pending.on('downloadProgress', ({ transferred, total }) => {
        if (transferred > MAX_BODY_BYTES || (total ?? 0) > MAX_BODY_BYTES) {
          tooLarge = true;
          request.abort();
        }
      });
      response = await pending;
    } catch (error) {
      if (this.closed) return;
      this.fail(
        tooLarge
          ? new KubeletError('InvalidManifest', `${this.where}: the body is larger than 1 MiB`, { adapter: ADAPTER })
          : requestFailure(this.where, this.timeoutMs, error),
      );
      return;
    } finally {
      this.request = undefined;
    }
    if (this.closed) return;
    const { statusCode } = response;
    if (statusCode === 304 && this.body !== undefined) {
      this.failure.reset(); // the body we hold is still current
      return;
    }
    if (statusCode < 200 || statusCode > 299) {
      this.fail(statusFailure(this.where, response));
      return;
    }
    this.failure.reset();
    this.etag = response.headers.etag;
    this.lastModified = response.headers['last-modified'];
    if (this.body?.equals(response.body) === true) return; // a server without validators: same body, nothing new
    this.body = response.body;
    // An unreadable body changes nothing, not even on the first read: no empty set.
    this.intake.read(this.where, response.body, this.idFor);
    this.intake.commit();
  }

  /** The TLS files as got takes them, read now (a rotated certificate is used from this poll on). */
  private async tlsFiles(): Promise<{ certificateAuthority?: Buffer; certificate?: Buffer; key?: Buffer }> {
    const tls = this.tls;
    if (tls === undefined) return {};
    const read = async (path: string | undefined) => (path === undefined ? undefined : readFile(path));
    const [ca, cert, key] = await Promise.all([read(tls.caFile), read(tls.certFile), read(tls.keyFile)]);
    return {
      ...(ca === undefined ? {} : { certificateAuthority: ca }),
      ...(cert === undefined ? {} : { certificate: cert }),
      ...(key === undefined ? {} : { key }),
    };
  }

  /**
   * The headers given for the URL (credentials, usually) must not reach another origin: refuse a
   * redirect there rather than strip them, as a manifest that another host serves is not what the
   * operator pointed the agent at. Without headers, redirects are followed as before.
   */
  private checkRedirect(next: URL | string | undefined): void {
    if (Object.keys(this.headers).length === 0 || next === undefined) return;
    const target = new URL(String(next));
    if (target.origin === new URL(this.url).origin) return;
    throw new KubeletError(
      'Unavailable',
      `${this.where}: redirected to another origin (${withoutPassword(target.toString())}); not followed, as --manifest-url-header headers would go with it`,
      {
        adapter: ADAPTER,
      },
    );
  }

  private requestHeaders(): Record<string, string> {
    return {
      'user-agent': 'kubelet-ts',
      ...this.headers,
      ...(this.etag === undefined ? {} : { 'if-none-match': this.etag }),
      ...(this.lastModified === undefined ? {} : { 'if-modified-since': this.lastModified }),
    };
  }

  private fail(error: KubeletError): void {
    if (this.failure.changed(error.message)) this.sink?.error(error);
  }
}

/** Fails at construction, naming the flag, when a file cannot be read or a pair is half given. */
function checkTlsFiles(tls: HttpSourceTlsOptions | undefined): HttpSourceTlsOptions | undefined {
  if (tls === undefined) return undefined;
  if ((tls.certFile === undefined) !== (tls.keyFile === undefined)) {
    throw new Error(
      'manifest URL TLS: a client certificate needs its key and the key its certificate (--manifest-url-cert-file with --manifest-url-key-file)',
    );
  }
  for (const [path, flag] of [
    [tls.caFile, '--manifest-url-ca-file'],
    [tls.certFile, '--manifest-url-cert-file'],
    [tls.keyFile, '--manifest-url-key-file'],
  ] as const) {
    if (path === undefined) continue;
    try {
      readFileSync(path);
    } catch (error) {
      throw new Error(`manifest URL TLS: cannot read ${flag} ${path}: ${(error as Error).message}`, { cause: error });
    }
  }
  return tls;
}

/**
 * What a manifest served without an id is named after: the URL's last path segment (or its host),
 * made readable, and a hash of the URL without its credentials and fragment, so that a changed
 * password or an `#anchor` renames no pod (see `derivedManifestId`).
 */
export function manifestIdFor(url: string): { name: string; origin: string } {
  const parsed = new URL(url);
  const name =
    parsed.pathname
      .split('/')
      .filter((part) => part !== '')
      .at(-1) ?? parsed.hostname;
  return { name: decodeURIComponentSafe(name), origin: `${parsed.protocol}//${parsed.host}${parsed.pathname}${parsed.search}` };
}

function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

function withoutPassword(url: string): string {
  const shown = new URL(url);
  if (shown.password === '') return url;
  shown.password = '***';
  return shown.toString();
}

function requestFailure(url: string, timeoutMs: number, error: unknown): KubeletError {
  if (error instanceof TimeoutError) {
    return new KubeletError('Timeout', `${url}: no answer within ${timeoutMs} ms`, { adapter: ADAPTER, cause: error });
  }
  const message = error instanceof Error ? error.message : String(error);
  return new KubeletError('Unavailable', `${url}: ${message}`, { adapter: ADAPTER, cause: error });
}

/** A 404 or 410 says the URL is wrong rather than the backend down; any other status may heal. */
function statusFailure(url: string, response: Response<Buffer>): KubeletError {
  const { statusCode, statusMessage } = response;
  const code = statusCode === 404 || statusCode === 410 ? 'NotFound' : 'Unavailable';
  return new KubeletError(code, `${url}: HTTP ${statusCode}${statusMessage ? ` ${statusMessage}` : ''}`, { adapter: ADAPTER });
}

/** Registers an HTTP source (`--manifest-url`) and returns it. */
export function registerHttpSource(registry: Registry, options: HttpManifestSourceOptions): HttpManifestSource {
  const source = new HttpManifestSource(options);
  registry.register(Tokens.Source, { useValue: source });
  return source;
}
