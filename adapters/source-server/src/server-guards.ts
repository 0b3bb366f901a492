import { isLoopback, podNameOf, type ContainerManifest } from '@kubelet-ts/core';
import type { DelegatedAuth } from './request-auth.js';
import type { ServerManifestSourceOptions } from './server-source.js';

/** The secure default: refuse to serve everyone on a reachable address unless told to in so many words. */
export function checkAuthenticated(address: string, options: ServerManifestSourceOptions): void {
  const authenticated =
    options.authToken !== undefined || options.tls?.clientCaFile !== undefined || guardedByDelegation(options.delegated);
  // A pod in the host's network is on loopback too: there, loopback is no boundary.
  if (options.allowHostNetwork === true && !authenticated && options.insecureAllowUnauthenticated !== true)
    throw new Error(
      "the agent lets pods share the host's network (--allow-host-network), so a pod reaches this server on 127.0.0.1 and could post manifests and read every pod: " +
        'authenticate callers with a token (--auth-token) or client certificates (--tls-cert-file, --tls-private-key-file and --client-ca-file), ' +
        'or accept that with --insecure-allow-unauthenticated',
    );
  if (
    isLoopback(address.toLowerCase()) ||
    options.authToken !== undefined ||
    options.tls?.clientCaFile !== undefined ||
    guardedByDelegation(options.delegated) ||
    options.insecureAllowUnauthenticated === true
  )
    return;
  throw new Error(
    `the agent server would listen on ${address}, which is not loopback, and let anyone who reaches it post manifests: ` +
      'authenticate callers with a token (--auth-token) or client certificates (--tls-cert-file, --tls-private-key-file and --client-ca-file), ' +
      'or bind 127.0.0.1 (--address), or accept that with --insecure-allow-unauthenticated',
  );
}

/**
 * Delegation guards the server when every request it serves is either reviewed (`authorize`) or
 * authenticated (a token review, and anonymous requests refused).
 */
function guardedByDelegation(delegated: DelegatedAuth | undefined): boolean {
  if (delegated === undefined) return false;
  return delegated.authorize !== undefined || (delegated.authenticateToken !== undefined && delegated.anonymous !== true);
}

/**
 * Why the server cannot listen on `address:port`, said loudly by the caller (and the agent is
 * unhealthy while its supervisor retries): until it listens, whatever holds its port answers the
 * agent's clients, and would get their tokens. The error keeps its `code` (`EADDRINUSE`, `EACCES`).
 */
export function listenProblem(error: NodeJS.ErrnoException, address: string, port: number): Error {
  const why = error.code === 'EADDRINUSE' ? 'another process holds that address' : error.message;
  return Object.assign(
    new Error(
      `the agent server cannot listen on ${address}:${port}: ${why}. Until it can, whatever holds the port answers this agent's clients ` +
        `(and would receive their bearer tokens; clients that verify the serving certificate refuse it): find it (ss -ltnp 'sport = :${port}') and stop it, or give --port`,
      { cause: error },
    ),
    { code: error.code },
  );
}

/**
 * A v1 Pod's id is one-to-one with its namespace and name (see `v1PodId`), but a 2014 manifest's
 * is what it says: manifest `x.kube-system` (no namespace, so `default`) and pod `x` of namespace
 * `kube-system` have one id. Replacing the one by the other would be silent: the message of the
 * 409 that names both, or undefined when they are the same pod.
 */
export function idClash(id: string, posted: ContainerManifest | undefined, existing: ContainerManifest | undefined): string | undefined {
  if (posted === undefined || existing === undefined) return undefined;
  const namespace = (m: ContainerManifest) => m.namespace ?? 'default';
  if (namespace(posted) === namespace(existing)) return undefined;
  const pod = (m: ContainerManifest) => `pod ${JSON.stringify(podNameOf(m.id, m.namespace))} of namespace ${namespace(m)}`;
  return `manifest id ${JSON.stringify(id)} is already ${pod(existing)}; ${pod(posted)} has the same id and would replace it: delete it first (DELETE /container/${id}), or rename one of them`;
}
