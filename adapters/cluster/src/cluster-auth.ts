import { createHash } from 'node:crypto';
import type { Logger } from '@kubelet-ts/core';
import type { AuthorizationDecision, DelegatedAuth, NodeRequestAttributes, RequestUser } from '@kubelet-ts/source-server';
import { AuthenticationV1Api, AuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node';

/** The kubelet's defaults (`authentication.webhook.cacheTTL`, `authorization.webhook.cacheAuthorizedTTL`, `…UnauthorizedTTL`). */
export const TOKEN_REVIEW_CACHE_MS = 120_000;
/** How long an allowed SubjectAccessReview is kept (the kubelet's `cacheAuthorizedTTL`, 5 minutes). */
export const AUTHORIZED_CACHE_MS = 300_000;
/** How long a refused SubjectAccessReview is kept (the kubelet's `cacheUnauthorizedTTL`, 30 seconds). */
export const UNAUTHORIZED_CACHE_MS = 30_000;

/** What `ClusterAuth` asks the cluster: whether tokens and requests are reviewed, and how long answers are kept. */
export interface ClusterAuthOptions {
  /** The node's credentials: a node may create TokenReviews and SubjectAccessReviews (the `system:node` role). */
  readonly kubeConfig: KubeConfig;
  readonly nodeName: string;
  /** `--authentication-token-webhook`: bearer tokens are reviewed (TokenReview). Default true. */
  readonly tokenReview?: boolean;
  /** `--authorization-mode Webhook`: every request is reviewed (SubjectAccessReview). Default true. */
  readonly accessReview?: boolean;
  /** `--anonymous-auth`. Default false. */
  readonly anonymous?: boolean;
  /** `--authentication-token-webhook-cache-ttl`: how long a token's review (either answer) is kept. */
  readonly tokenCacheMs?: number;
  /** `--authorization-webhook-cache-authorized-ttl`. */
  readonly authorizedCacheMs?: number;
  /** `--authorization-webhook-cache-unauthorized-ttl`. */
  readonly unauthorizedCacheMs?: number;
  /** Milliseconds now; default `Date.now`. */
  readonly now?: () => number;
  readonly logger: Logger;
}

/** Answers kept for a while, at most `max` of them (the oldest dropped first). */
class TtlCache<T> {
  private readonly entries = new Map<string, { value: T; until: number }>();
  constructor(
    private readonly now: () => number,
    private readonly max = 4096,
  ) {}
  get(key: string): T | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.until > this.now()) return entry.value;
    this.entries.delete(key);
    return undefined;
  }
  set(key: string, value: T, ms: number): void {
    if (ms <= 0) return;
    this.entries.delete(key);
    this.entries.set(key, { value, until: this.now() + ms });
    if (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value!);
  }
}

/**
 * Who calls the node's port and what they may do, asked of the cluster as the kubelet asks it
 * (`k8s.io/apiserver`'s delegating authenticator and authorizer): a bearer token by a TokenReview,
 * each request's `nodes/<subresource>` by a SubjectAccessReview, with the kubelet's caches (a
 * token's answer 2 min either way; an access allowed 5 min, refused 30 s; a failure to ask is never
 * kept). Hand it to the agent's server as `delegated`.
 */
export class ClusterAuth implements DelegatedAuth {
  readonly nodeName: string;
  readonly anonymous: boolean;
  readonly authenticateToken?: (token: string) => Promise<RequestUser | undefined>;
  readonly authorize?: (user: RequestUser, attributes: NodeRequestAttributes) => Promise<AuthorizationDecision>;
  private readonly tokens: TtlCache<RequestUser | null>;
  private readonly decisions: TtlCache<AuthorizationDecision>;
  /** Reviews asked of the API server (not answered from a cache), for the tests and the bench. */
  reviews = { tokens: 0, access: 0 };

  constructor(private readonly options: ClusterAuthOptions) {
    this.nodeName = options.nodeName;
    this.anonymous = options.anonymous ?? false;
    const now = options.now ?? Date.now;
    this.tokens = new TtlCache(now);
    this.decisions = new TtlCache(now);
    const authentication = options.kubeConfig.makeApiClient(AuthenticationV1Api);
    const authorization = options.kubeConfig.makeApiClient(AuthorizationV1Api);
    if (options.tokenReview !== false) this.authenticateToken = (token) => this.reviewToken(authentication, token);
    if (options.accessReview !== false) this.authorize = (user, attributes) => this.reviewAccess(authorization, user, attributes);
  }

  private async reviewToken(api: AuthenticationV1Api, token: string): Promise<RequestUser | undefined> {
    // Kept by the token's digest, as the API server's token cache keys it: no token is held as written.
    const key = createHash('sha256').update(token).digest('hex');
    const cached = this.tokens.get(key);
    if (cached !== undefined) return cached ?? undefined;
    this.reviews.tokens++;
    const review = await api.createTokenReview({ body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } } });
    const status = review.status;
    if (status?.error !== undefined && status.error !== '' && status.authenticated !== true)
      this.options.logger.debug({ error: status.error }, 'a bearer token was not authenticated');
    const user: RequestUser | null =
      status?.authenticated === true && status.user?.username !== undefined
        ? {
            name: status.user.username,
            ...(status.user.uid === undefined ? {} : { uid: status.user.uid }),
            groups: status.user.groups ?? [],
            ...(status.user.extra === undefined ? {} : { extra: status.user.extra }),
          }
        : null;
    this.tokens.set(key, user, this.options.tokenCacheMs ?? TOKEN_REVIEW_CACHE_MS);
    return user ?? undefined;
  }

  private async reviewAccess(api: AuthorizationV1Api, user: RequestUser, a: NodeRequestAttributes): Promise<AuthorizationDecision> {
    const spec = {
      user: user.name,
      ...(user.uid === undefined ? {} : { uid: user.uid }),
      groups: [...user.groups],
      ...(user.extra === undefined ? {} : { extra: Object.fromEntries(Object.entries(user.extra).map(([k, v]) => [k, [...v]])) }),
      resourceAttributes: { verb: a.verb, group: '', version: 'v1', resource: a.resource, subresource: a.subresource, name: a.name },
    };
    const key = JSON.stringify(spec);
    const cached = this.decisions.get(key);
    if (cached !== undefined) return cached;
    this.reviews.access++;
    const review = await api.createSubjectAccessReview({
      body: { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec },
    });
    const allowed = review.status?.allowed === true && review.status.denied !== true;
    const reason = review.status?.reason ?? review.status?.evaluationError;
    const decision: AuthorizationDecision = { allowed, ...(reason === undefined || reason === '' ? {} : { reason }) };
    this.decisions.set(
      key,
      decision,
      allowed ? (this.options.authorizedCacheMs ?? AUTHORIZED_CACHE_MS) : (this.options.unauthorizedCacheMs ?? UNAUTHORIZED_CACHE_MS),
    );
    return decision;
  }
}
