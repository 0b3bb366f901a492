import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { systemClock, type Logger } from '@kubelet-ts/core';
import { AuthThrottle } from './auth-throttle.js';
import { HttpProblem } from './http-kit.js';

/** Who made a request (the API server's `user.Info`): a name, groups, and what else the authenticator said. */
export interface RequestUser {
  readonly name: string;
  readonly uid?: string;
  readonly groups: readonly string[];
  readonly extra?: Readonly<Record<string, readonly string[]>>;
}

/**
 * What a request to the node's port asks, as the kubelet puts it to its authorizer
 * (`pkg/kubelet/server/auth.go`): a verb on `nodes/<subresource>` of this node's name.
 */
export interface NodeRequestAttributes {
  /** From the method: GET get, POST create, PUT update, PATCH patch, DELETE delete (else empty). */
  readonly verb: string;
  readonly resource: 'nodes';
  readonly subresource: string;
  /** The node's name. */
  readonly name: string;
  readonly path: string;
}

/** A decision of the authorizer, with its reason when it gave one. */
export interface AuthorizationDecision {
  readonly allowed: boolean;
  readonly reason?: string;
}

/**
 * Authentication and authorization delegated to the cluster, as the kubelet's
 * `--authentication-token-webhook` and `--authorization-mode Webhook` delegate them (a TokenReview
 * for a bearer token, a SubjectAccessReview for every request). `@kubelet-ts/cluster`'s
 * `ClusterAuth` is one; an embedder may give its own.
 */
export interface DelegatedAuth {
  /** The node's name: what the attributes of every request name. */
  readonly nodeName: string;
  /**
   * The user a bearer token is (a TokenReview), or undefined when the token authenticates no one;
   * throws when it cannot tell (the API server cannot be reached): the request is then a 401.
   * Absent: bearer tokens authenticate only as `authToken`.
   */
  authenticateToken?(token: string): Promise<RequestUser | undefined>;
  /**
   * Whether `user` may do what `attributes` say (a SubjectAccessReview); throws when it cannot tell
   * (the request is then a 500, as the kubelet answers). Absent: every authenticated request is allowed
   * (the kubelet's `AlwaysAllow`).
   */
  authorize?(user: RequestUser, attributes: NodeRequestAttributes): Promise<AuthorizationDecision>;
  /**
   * The kubelet's `--anonymous-auth`: a request with no credentials is `system:anonymous` in
   * `system:unauthenticated` (and then authorized as anyone is) rather than a 401. Default false.
   */
  readonly anonymous?: boolean;
}

/** The user a valid `authToken` (the agent's own static token) is, when authorization is delegated. */
export const AUTH_TOKEN_USER: RequestUser = { name: 'kubelet-ts:auth-token', groups: ['system:authenticated'] };

/** The kubelet's paths that have a subresource of their own; all others are `proxy`. */
const SUBRESOURCE_PATHS: ReadonlyArray<readonly [path: string, subresource: string]> = [
  ['/stats', 'stats'],
  ['/metrics', 'metrics'],
  ['/logs', 'log'],
  ['/checkpoint', 'checkpoint'],
  ['/statusz', 'statusz'],
  ['/flagz', 'configz'],
];

/**
 * With the kubelet's fine-grained authorization (KubeletFineGrainedAuthz, on since 1.33): these
 * paths are first asked as their own subresource, then as `proxy`; either allows.
 */
const FINE_GRAINED_PATHS: ReadonlyArray<readonly [path: string, subresource: string]> = [
  ['/pods', 'pods'],
  ['/runningpods', 'pods'],
  ['/healthz', 'healthz'],
  ['/configz', 'configz'],
];

const VERBS: Readonly<Record<string, string>> = { GET: 'get', POST: 'create', PUT: 'update', PATCH: 'patch', DELETE: 'delete' };

/** `path` is `under` or below it (the kubelet's `isSubpath`). */
function isSubpath(path: string, under: string): boolean {
  return path === under || path.startsWith(`${under}/`);
}

/**
 * The attributes the kubelet asks its authorizer about for a request: one, or two (a fine-grained
 * subresource, then `proxy`), in order. `/containerLogs`, `/exec`, `/attach`, `/portForward`,
 * `/run` are `proxy`, as the kubelet has them; so are the agent's own routes (`/sources`, `/plan`,
 * `/events`, the manifest routes).
 */
export function nodeRequestAttributes(method: string | undefined, path: string, nodeName: string): NodeRequestAttributes[] {
  const subresources: string[] = [];
  const fine = FINE_GRAINED_PATHS.find(([p]) => isSubpath(path, p));
  if (fine !== undefined) subresources.push(fine[1]);
  subresources.push(SUBRESOURCE_PATHS.find(([p]) => isSubpath(path, p))?.[1] ?? 'proxy');
  const verb = VERBS[method ?? 'GET'] ?? '';
  return subresources.map((subresource) => ({ verb, resource: 'nodes', subresource, name: nodeName, path }));
}

/** What lets requests in: the options of `routeListener` and `upgradeListener` that say who may call. */
export interface AuthenticationOptions {
  /** The agent's own bearer token. Never empty. */
  readonly authToken?: string | undefined;
  /** The server asks for client certificates and checks them against its CA. */
  readonly clientCertificates?: boolean | undefined;
  /** Token reviews, access reviews and anonymous requests (see `DelegatedAuth`). */
  readonly delegated?: DelegatedAuth | undefined;
  /** Slows down an address that keeps failing authentication (429). Default: an `AuthThrottle` on the system clock. */
  readonly throttle?: AuthThrottle | undefined;
  readonly logger: Logger;
}

/**
 * Checks that a request may be served, and throws the `HttpProblem` that says why not; undefined
 * when nothing is configured (every request is served, as on loopback today).
 *
 * Who calls: a client certificate the TLS layer verified (the user its CN names, in the groups its
 * O name), else a bearer token (never from the query string) that is the agent's own `authToken`
 * or that the delegated TokenReview names, else `system:anonymous` when `delegated.anonymous`,
 * else a 401 (or a 429 while the caller's network is locked out by `throttle`; a valid credential
 * always gets in, see `AuthThrottle`). Then, when authorization is delegated, whether that user may
 * (`nodeRequestAttributes`): a 403 that names the user, verb and subresources, as the kubelet's.
 */
export function requestAuthentication(options: AuthenticationOptions): ((req: IncomingMessage, url: URL) => Promise<void>) | undefined {
  const { authToken, clientCertificates = false, delegated } = options;
  if (authToken === undefined && !clientCertificates && delegated === undefined) return undefined;
  const expected = authToken === undefined ? undefined : digest(authToken);
  const throttle = options.throttle ?? new AuthThrottle(systemClock);
  const wanted = [
    ...(clientCertificates ? ['a client certificate signed by the client CA'] : []),
    ...(authToken === undefined && delegated?.authenticateToken === undefined ? [] : ['a valid bearer token']),
  ].join(' or ');

  const authenticate = async (req: IncomingMessage): Promise<RequestUser | undefined> => {
    const socket = req.socket as Partial<TLSSocket>;
    // `authorized` is set only by a TLS socket whose peer certificate chains to the CA and is valid now.
    if (clientCertificates && socket.authorized === true) return certificateUser(socket);
    const header = req.headers.authorization ?? '';
    // The scheme is case-insensitive (RFC 9110 §11.1), as the API server reads it.
    const presented = /^bearer /i.test(header) ? header.slice('Bearer '.length).trim() : '';
    // Digests have one length, so the comparison takes the same time whatever was presented.
    if (expected !== undefined && timingSafeEqual(digest(presented), expected)) return AUTH_TOKEN_USER;
    if (presented !== '' && delegated?.authenticateToken !== undefined) {
      try {
        return await delegated.authenticateToken(presented);
      } catch (error) {
        options.logger.warn({ err: error }, 'cannot review a bearer token: the request is refused (401)');
        return undefined;
      }
    }
    if (presented === '' && header === '' && delegated?.anonymous === true)
      return { name: 'system:anonymous', groups: ['system:unauthenticated'] };
    return undefined;
  };

  return async (req, url) => {
    const user = await authenticate(req);
    if (user === undefined) {
      const address = req.socket.remoteAddress ?? '';
      const wait = throttle.lockedFor(address);
      throttle.failed(address);
      if (wait > 0) {
        const seconds = Math.ceil(wait / 1000);
        throw new HttpProblem(429, `too many failed authentication attempts from this network: retry in ${seconds} s`, [], undefined, {
          'retry-after': String(seconds),
        });
      }
      throw new HttpProblem(401, delegated === undefined ? `${wanted} is required` : `Unauthorized: ${wanted} is required`);
    }
    if (delegated?.authorize === undefined) return;
    const attributes = nodeRequestAttributes(req.method, url.pathname, delegated.nodeName);
    for (const a of attributes) {
      let decision: AuthorizationDecision;
      try {
        decision = await delegated.authorize(user, a);
      } catch (error) {
        options.logger.error({ err: error, user: user.name, verb: a.verb, subresource: a.subresource }, 'authorization error');
        throw new HttpProblem(
          500,
          `Authorization error (user=${user.name}, verb=${a.verb}, resource=${a.resource}, subresource=${a.subresource})`,
        );
      }
      if (decision.allowed) return;
    }
    const first = attributes[0]!;
    throw new HttpProblem(
      403,
      `Forbidden (user=${user.name}, verb=${first.verb}, resource=${first.resource}, subresource(s)=[${attributes.map((a) => a.subresource).join(' ')}])`,
    );
  };
}

/** The user a verified client certificate names: its CN, in the groups its O (organisations) name. */
function certificateUser(socket: Partial<TLSSocket>): RequestUser | undefined {
  const subject = socket.getPeerCertificate?.()?.subject;
  const name = subject?.CN;
  if (name === undefined || name === '') return undefined;
  const organisations = subject?.O;
  const groups = organisations === undefined ? [] : Array.isArray(organisations) ? organisations : [organisations];
  return { name: Array.isArray(name) ? name[0]! : name, groups: [...groups, 'system:authenticated'] };
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}
