import Docker from 'dockerode';
import type { DockerApi } from './docker-api.js';

/** A dockerode client of `host`: `unix:///path/to/docker.sock`, a socket path, or `tcp://host:port`. */
export function connectDocker(host: string): DockerApi {
  // dockerode's own typings declare optional fields loosely (`x?: T` where the engine may send
  // null or leave it out), which exactOptionalPropertyTypes reads as a mismatch with the slice
  // declared here; the slice is what this adapter reads, and the engine's JSON is what it gets.
  const client = (options: Docker.DockerOptions) => new Docker(options) as unknown as DockerApi;
  if (host.startsWith('unix://')) return client({ socketPath: host.slice('unix://'.length) });
  if (host.startsWith('/')) return client({ socketPath: host });
  const url = new URL(host.replace(/^tcp:/, 'http:'));
  return client({ host: url.hostname, port: Number(url.port || 2375), protocol: url.protocol === 'https:' ? 'https' : 'http' });
}

/**
 * Whether `host` is a unix socket, and so (but for a socket forwarded from elsewhere, which the
 * stats' kernel path tells by the cgroup paths it finds) an engine on this host.
 */
export function isLocalEndpoint(host: string): boolean {
  return host.startsWith('unix://') || host.startsWith('/');
}
