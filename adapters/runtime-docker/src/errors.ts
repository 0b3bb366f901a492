import { KubeletError, type ErrorCode } from '@kubelet-ts/core';
import type { DockerCallError } from './docker-api.js';

export const ADAPTER = 'docker';

const UNREACHABLE = new Set(['ECONNREFUSED', 'ENOENT', 'EACCES', 'ECONNRESET', 'EPIPE', 'EHOSTUNREACH', 'ETIMEDOUT']);

/** The engine's HTTP 304: the container was already in the asked-for state. */
export function isNotModified(error: unknown): boolean {
  return (error as DockerCallError | undefined)?.statusCode === 304;
}

/** The engine's own words for a failure (dockerode puts them in `json.message` or its message). */
export function dockerDetail(error: unknown): string {
  const e = (error ?? {}) as DockerCallError;
  return e.json?.message ?? e.message ?? String(error);
}

/**
 * Translates an engine failure into the core's codes, keeping it as the cause: 404 → NotFound,
 * 409 → Conflict, a socket that does not answer → Unavailable with where and how to start one.
 */
export function translate(error: unknown, what: string, endpoint: string): KubeletError {
  if (error instanceof KubeletError) return error;
  const e = (error ?? {}) as DockerCallError;
  const detail = dockerDetail(error);
  if (e.code !== undefined && UNREACHABLE.has(e.code)) {
    return new KubeletError(
      'Unavailable',
      `${what}: no Docker engine answers at ${endpoint} (${e.code}). Start one (\`dockerd &\`, or \`npm test\` which starts it), or point --docker-host / DOCKER_HOST at a running engine`,
      { adapter: ADAPTER, cause: error },
    );
  }
  let code: ErrorCode = 'Internal';
  if (e.statusCode === 404) code = 'NotFound';
  else if (e.statusCode === 409) code = 'Conflict';
  // Podman answers 500 where Docker answers 409: for a name already taken ("the container name …
  // is already in use"), a host port already bound, and a container in the wrong state for the
  // call ("container state improper", e.g. removing a running one).
  else if (/already allocated|address already in use|name .* is already in use|container state improper/i.test(detail)) code = 'Conflict';
  return new KubeletError(code, `${what}: ${detail}`, { adapter: ADAPTER, cause: error });
}

/** Pull failures arrive as text in the progress stream; sort them into "no such image" and "cannot reach". */
export function classifyPullError(image: string, message: string, cause: unknown): KubeletError {
  // A registry that refuses the pull's credentials (none, or wrong ones) cannot give the image either.
  const notFound =
    /not found|manifest unknown|does not exist|pull access denied|repository .* not|unauthorized|authentication required|no basic auth credentials/i.test(
      message,
    );
  // Podman's registries.conf can block a registry ("registry … is blocked in …"): it is not reachable for this engine.
  const unreachable =
    /no such host|dial tcp|i\/o timeout|connection refused|TLS handshake|network is unreachable|server misbehaving|registry .* is blocked in/i.test(
      message,
    );
  const code: ErrorCode = notFound ? 'NotFound' : unreachable ? 'Unavailable' : 'Internal';
  const hint = unreachable ? ' (no registry reachable: build or load the image locally, or use an image the engine already has)' : '';
  return new KubeletError(code, `pull ${image}: ${message}${hint}`, { adapter: ADAPTER, cause });
}
