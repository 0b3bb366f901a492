import {
  MASTER_SERVICE,
  objectKey,
  type Logger,
  type ObjectRef,
  type ServiceAccountTokenRequest,
  type SourceObject,
} from '@kubelet-ts/core';
import type { KubeConfig } from '@kubernetes/client-node';
import { getJson, requestJson } from './api-json.js';
import { ApiServices } from './api-services.js';
import { type ApiService, linkVariables, masterVariables, type PodApiServer } from './service-variables.js';

/** How often the objects in use are read again (the kubelet's pod sync period: a change reaches a volume within it). */
export const OBJECT_REFRESH_MS = 10_000;

/** What `ApiObjects` needs: the cluster, a logger, whom to tell of a change, and how often to read again. */
export interface ApiObjectsOptions {
  readonly kubeConfig: KubeConfig;
  readonly logger: Logger;
  /** Told when an object in use changed, appeared or went, and once the first pass is done. */
  readonly changed: () => void;
  readonly refreshMs?: number;
  /** Where the pods reach the API server (see `masterVariables`); absent: the `kubernetes` Service's ClusterIP. */
  readonly podApiServer?: PodApiServer;
  /** The time, for tokens' lifetimes (tests). */
  readonly now?: () => number;
  /** The Services, watched once for many nodes of one process; absent, watched by this one alone. */
  readonly services?: ApiServices;
}

interface ApiConfigMap {
  readonly data?: Readonly<Record<string, string>>;
  readonly binaryData?: Readonly<Record<string, string>>;
}

interface ApiSecret {
  readonly data?: Readonly<Record<string, string>>;
}

interface ApiTokenRequest {
  readonly spec?: { readonly expirationSeconds?: number };
  readonly status?: { readonly token?: string; readonly expirationTimestamp?: string };
}

/** When a token was issued and when it expires, in ms, as its TokenRequest answered. */
export interface IssuedToken {
  readonly issuedAt: number;
  readonly expiresAt: number;
}

/** A token's longest life before it is asked for again, whatever it says (the kubelet's `maxTTL`). */
export const TOKEN_MAX_AGE_MS = 24 * 60 * 60 * 1000;

/**
 * Whether a token is due for a new one, as the kubelet's token manager says (`requiresRefresh`):
 * at 80 % of its life, or a day after it was issued.
 */
export function tokenRefreshDue(token: IssuedToken, now: number): boolean {
  const life = token.expiresAt - token.issuedAt;
  return now >= token.issuedAt + TOKEN_MAX_AGE_MS || now >= token.expiresAt - life * 0.2;
}

/**
 * The objects the node's API pods read, from the API server with the node's own credentials (the
 * Node authorizer lets a node get those of its pods and nothing else), as the kubelet's managers
 * fetch them:
 * - ConfigMaps and Secrets: each one in use is read when a pod starts to use it, and again every
 *   `refreshMs` while one does, so that a change reaches mounted volumes within that time; one no
 *   pod uses is forgotten. A missing one (404) is left out (the pod's containers that need it
 *   wait, saying which); one that cannot be read (403: the authorizer has not yet seen the pod, or
 *   the API server is down) keeps its last good value.
 * - Service-account tokens: asked for by TokenRequest, bound to their pod, and asked for again
 *   at 80 % of their life (`tokenRefreshDue`).
 * - Service variables (`ServiceEnvironment`): from the Services, listed once and watched
 *   (`ApiServices`), a change of one reaching the next container made.
 * Never logs a value.
 */
export class ApiObjects {
  private readonly objects = new Map<string, SourceObject>();
  private readonly issued = new Map<string, IssuedToken>();
  private wanted = new Map<string, ObjectRef>();
  private timer: NodeJS.Timeout | undefined;
  private reading: Promise<void> | undefined;
  private closed = false;
  private passes = 0;
  /** The Services, watched once a pod needs their variables. */
  private readonly services: ApiServices;
  private readonly stopHearing: () => void;

  constructor(private readonly options: ApiObjectsOptions) {
    this.services = options.services ?? new ApiServices({ kubeConfig: options.kubeConfig, logger: options.logger });
    this.stopHearing = this.services.subscribe(() => void this.refresh());
  }

  /** What the pods now read: objects not read yet are read at once (then `changed`). */
  use(refs: readonly ObjectRef[]): void {
    const next = new Map(refs.map((r) => [objectKey(r.kind, r.namespace, r.name), r]));
    const fresh = [...next.keys()].some((k) => !this.wanted.has(k));
    for (const key of this.objects.keys()) if (!next.has(key)) this.objects.delete(key);
    for (const key of this.issued.keys()) if (!next.has(key)) this.issued.delete(key);
    this.wanted = next;
    if (fresh) void this.refresh();
    if (this.timer === undefined && next.size > 0) this.schedule();
  }

  /** The objects read so far, of those in use. */
  current(): SourceObject[] {
    return [...this.objects.values()];
  }

  /** Whether a pass over the objects has been made (whatever it could read): pods wait for it to get their service variables. */
  read(): boolean {
    return this.passes > 0;
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.stopHearing();
    // A shared one is closed by who made it.
    if (this.options.services === undefined) this.services.close();
  }

  private schedule(): void {
    if (this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.refresh().then(() => {
        if (this.wanted.size > 0) this.schedule();
      });
    }, this.options.refreshMs ?? OBJECT_REFRESH_MS);
    this.timer.unref();
  }

  /** Reads every object in use once (one pass at a time; a pass asked for meanwhile follows it). */
  private refresh(): Promise<void> {
    if (this.reading !== undefined) return this.reading.then(() => this.refresh());
    this.reading = this.readAll().finally(() => (this.reading = undefined));
    return this.reading;
  }

  private async readAll(): Promise<void> {
    let changed = this.passes === 0;
    const refs = [...this.wanted.entries()];
    const services = refs.some(([, r]) => r.kind === 'ServiceEnvironment') ? this.services.current() : Promise.resolve(undefined);
    await Promise.all(
      refs.map(async ([key, ref]) => {
        const read = await this.readOne(key, ref, services);
        if (read === 'unknown' || this.closed || !this.wanted.has(key)) return;
        const before = this.objects.get(key);
        if (read === undefined) {
          if (before !== undefined) changed = true;
          this.objects.delete(key);
          return;
        }
        if (before === undefined || !sameData(before, read)) changed = true;
        this.objects.set(key, read);
      }),
    );
    this.passes++;
    if (changed && !this.closed) this.options.changed();
  }

  /** The object, undefined when it does not exist, `unknown` when it cannot be told (kept as it was). */
  private async readOne(
    key: string,
    ref: ObjectRef,
    services: Promise<readonly ApiService[] | undefined>,
  ): Promise<SourceObject | undefined | 'unknown'> {
    if (ref.kind === 'ServiceEnvironment') {
      const listed = await services;
      if (listed === undefined) return 'unknown';
      const variables =
        ref.name === MASTER_SERVICE ? masterVariables(listed, this.options.podApiServer) : linkVariables(listed, ref.namespace);
      return { kind: ref.kind, namespace: ref.namespace, name: ref.name, data: bytesOf(variables) };
    }
    if (ref.kind === 'ServiceAccountToken') {
      const issued = this.issued.get(key);
      if (issued !== undefined && !tokenRefreshDue(issued, this.now())) return 'unknown';
      return ref.token === undefined ? undefined : this.requestToken(key, ref, ref.token);
    }
    const plural = ref.kind === 'ConfigMap' ? 'configmaps' : 'secrets';
    try {
      const object = (await getJson(
        this.options.kubeConfig,
        `/api/v1/namespaces/${encodeURIComponent(ref.namespace)}/${plural}/${encodeURIComponent(ref.name)}`,
      )) as ApiConfigMap & ApiSecret;
      const data: Record<string, Uint8Array> = {};
      if (ref.kind === 'ConfigMap') {
        for (const [k, v] of Object.entries(object.data ?? {})) data[k] = Buffer.from(v, 'utf8');
        for (const [k, v] of Object.entries(object.binaryData ?? {})) data[k] = Buffer.from(v, 'base64');
      } else for (const [k, v] of Object.entries(object.data ?? {})) data[k] = Buffer.from(v, 'base64');
      return { kind: ref.kind, namespace: ref.namespace, name: ref.name, data };
    } catch (error) {
      const code = (error as { code?: number }).code;
      if (code === 404) return undefined;
      this.cannot(ref, ref.name, error);
      return 'unknown';
    }
  }

  /**
   * A token by TokenRequest, bound to its pod (so that it stops working when the pod is gone); a
   * refusal (the service account missing, the authorizer not yet knowing the pod) leaves the last
   * token, or none, and is tried again at the next pass.
   */
  private async requestToken(key: string, ref: ObjectRef, token: ServiceAccountTokenRequest): Promise<SourceObject | 'unknown'> {
    const path = `/api/v1/namespaces/${encodeURIComponent(ref.namespace)}/serviceaccounts/${encodeURIComponent(token.serviceAccount)}/token`;
    try {
      const answer = (await requestJson(this.options.kubeConfig, 'POST', path, {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: {
          audiences: token.audience === undefined ? [] : [token.audience],
          expirationSeconds: token.expirationSeconds,
          boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: token.pod.name, uid: token.pod.uid },
        },
      })) as ApiTokenRequest;
      const value = answer.status?.token;
      const expiresAt = Date.parse(answer.status?.expirationTimestamp ?? '');
      if (value === undefined || Number.isNaN(expiresAt)) throw new Error('the TokenRequest was answered without a token or its expiry');
      const seconds = answer.spec?.expirationSeconds ?? token.expirationSeconds;
      this.issued.set(key, { issuedAt: expiresAt - seconds * 1000, expiresAt });
      return { kind: ref.kind, namespace: ref.namespace, name: ref.name, data: { token: Buffer.from(value, 'utf8') } };
    } catch (error) {
      this.cannot(ref, `of service account ${token.serviceAccount} for pod ${token.pod.name}`, error);
      return 'unknown';
    }
  }

  private cannot(ref: ObjectRef, what: string, error: unknown): void {
    const code = (error as { code?: number }).code;
    this.options.logger.debug(
      { kind: ref.kind, namespace: ref.namespace, status: code },
      `cannot read ${ref.kind} ${ref.namespace}/${what} yet: ${(error as Error).message.slice(0, 200)}`,
    );
  }

  private now(): number {
    return this.options.now?.() ?? Date.now();
  }
}

function bytesOf(variables: Record<string, string>): Record<string, Uint8Array> {
  return Object.fromEntries(Object.entries(variables).map(([k, v]) => [k, Buffer.from(v, 'utf8')]));
}

function sameData(a: SourceObject, b: SourceObject): boolean {
  const keys = Object.keys(a.data);
  if (keys.length !== Object.keys(b.data).length) return false;
  return keys.every((k) => b.data[k] !== undefined && Buffer.from(a.data[k]!).equals(Buffer.from(b.data[k]!)));
}
