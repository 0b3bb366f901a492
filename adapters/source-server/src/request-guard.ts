import type { IncomingMessage } from 'node:http';
import { isLoopback } from '@kubelet-ts/core';
import { isIP } from 'node:net';
import { hostname, networkInterfaces } from 'node:os';
import { HttpProblem } from './http-kit.js';

/**
 * The names a request may give for this server, in its `Host` header and in its `Origin`, and
 * the port they must come with. A browser lets any page send requests to 127.0.0.1, but it
 * always says which name it sent them to (`Host`) and, for a cross-site one, from which page
 * (`Origin`): those two are what tells the agent's own user from a page on another site.
 */
export interface ReachableNames {
  readonly port: number;
  /** `https:` when the server speaks TLS: the scheme of its own pages' `Origin`. Default `http:`. */
  readonly protocol?: 'http:' | 'https:';
  /** `name` lowercased, an IPv6 address in brackets as in a URL (`[::1]`). */
  includes(name: string): boolean;
}

const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]'];
/** A host name or an IPv4 address, lowercased: what `allowedHosts` takes besides an IPv6 address. */
const HOST_NAME = /^[a-z0-9_]([a-z0-9_.-]*[a-z0-9_])?$/;
/** `name` or `[ipv6]`, then an optional port: the whole of a valid `Host` header. */
const HOST_HEADER = /^(\[[^\]]+\]|[^:[\]]+)(?::(\d{1,5}))?$/;

/**
 * `allowedHosts` checked and normalised (lowercase, IPv6 in brackets), so a mistyped name fails
 * when the server is built rather than refusing every request later. A name only: the port is
 * always the one the server listens on.
 */
export function allowedHostNames(allowedHosts: readonly string[] = []): string[] {
  return allowedHosts.map((given) => {
    const name = given.toLowerCase();
    const bare = name.startsWith('[') && name.endsWith(']') ? name.slice(1, -1) : name;
    if (isIP(bare) === 6) return canonicalIpv6(bare);
    if (HOST_NAME.test(name)) return name;
    throw new Error(
      `allowedHosts (kubelet-ts: --allowed-host): ${JSON.stringify(given)} is not a host name or address; give the name alone (no scheme, no port: the port is the one the server listens on)`,
    );
  });
}

/**
 * What a server bound to `address` (as `server.address()` reports it) on `port` may be called:
 * - bound to every interface (`0.0.0.0`, `::`): any address of a local interface, `localhost`
 *   and the machine's hostname. Interfaces are read at each ask, as addresses come and go;
 * - bound to a loopback address: that address, `localhost`, `127.0.0.1` and `[::1]`;
 * - bound to another address: that address;
 * and, in every case, the `extra` names (from `allowedHostNames`).
 */
export function reachableNames(
  address: string,
  port: number,
  extra: readonly string[],
  protocol: 'http:' | 'https:' = 'http:',
): ReachableNames {
  const bound = unmapped(address.toLowerCase());
  const anyInterface = bound === '0.0.0.0' || bound === '::';
  const names = new Set(extra);
  if (anyInterface) for (const name of ['localhost', hostname().toLowerCase()]) names.add(name);
  else {
    names.add(isIP(bound) === 6 ? canonicalIpv6(bound) : bound);
    if (isLoopback(bound)) for (const name of LOOPBACK_NAMES) names.add(name);
  }
  return { port, protocol, includes: (name) => names.has(name) || (anyInterface && interfaceAddresses().has(name)) };
}

/**
 * Throws a 403 unless `Host` names this server (`reachable`) with its port, and unless `Origin`,
 * when there is one, is this server's own (`http://`, or `https://` over TLS, + such a name + port). `Origin: null`, sent
 * by sandboxed frames and `file:` pages, is refused like any other site. A program such as curl
 * sends no `Origin`, so it is not stopped by the second check.
 */
export function checkHostAndOrigin(req: IncomingMessage, reachable: ReachableNames, checkHost = true): void {
  const host = req.headers.host;
  if (checkHost) checkHostHeader(host, reachable);
  const origin = req.headers.origin;
  if (origin !== undefined && !isOwnOrigin(origin, reachable)) {
    throw new HttpProblem(
      403,
      `Origin ${JSON.stringify(origin.slice(0, 100))} is not this agent's own: a browser is sending this request for a page of another site, and cross-site requests are refused. ` +
        'Call the agent from a program (curl sends no Origin), or from a page served under a name in allowedHosts',
    );
  }
}

function checkHostHeader(host: string | undefined, reachable: ReachableNames): void {
  if (host === undefined)
    throw new HttpProblem(403, 'no Host header: say which address or name of the agent the request is for, as HTTP/1.1 requires');
  const asked = parseHost(host);
  if (asked === undefined || asked.port !== reachable.port || !reachable.includes(asked.name)) {
    throw new HttpProblem(
      403,
      `Host ${JSON.stringify(host.slice(0, 100))} is not an address or name this agent listens on, so a page may have pointed its own name at this host (DNS rebinding). ` +
        'Address the agent by an address it listens on, with its port; to reach it by another name, add the name to allowedHosts (kubelet-ts: --allowed-host NAME)',
    );
  }
}

function isOwnOrigin(origin: string, reachable: ReachableNames): boolean {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false; // `null` (an opaque origin) lands here too
  }
  // A page of the other scheme is another origin, even on the same name and port.
  const protocol = reachable.protocol ?? 'http:';
  const port = url.port === '' ? (protocol === 'https:' ? 443 : 80) : Number(url.port);
  return url.protocol === protocol && port === reachable.port && reachable.includes(url.hostname);
}

function parseHost(header: string): { name: string; port: number } | undefined {
  const match = HOST_HEADER.exec(header.toLowerCase());
  if (match === null) return undefined;
  let name = match[1]!;
  if (name.startsWith('[')) {
    if (isIP(name.slice(1, -1)) !== 6) return undefined;
    name = canonicalIpv6(name.slice(1, -1));
  }
  // No port means the scheme's default; the agent's is rarely 80, so this mostly refuses.
  return { name, port: match[2] === undefined ? 80 : Number(match[2]) };
}

/** `[addr]` in the form a browser writes it (`[fd00::99]` for `FD00:0::99`), so the two compare equal. */
function canonicalIpv6(address: string): string {
  // A link-local socket address may carry its zone (`fe80::1%eth0`), which no Host can.
  return new URL(`http://[${address.replace(/%.*$/, '')}]/`).hostname;
}

/** A dual-stack socket reports an IPv4 peer as `::ffff:a.b.c.d`; the address is `a.b.c.d`. */
function unmapped(address: string): string {
  return address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
}

function interfaceAddresses(): Set<string> {
  const addresses = Object.values(networkInterfaces()).flatMap((list) => list ?? []);
  return new Set(addresses.map((a) => (a.family === 'IPv6' ? canonicalIpv6(a.address) : a.address)));
}
