import type { ContainerManifest } from './manifest.js';

/**
 * A resolver's settings as `/etc/resolv.conf` holds them, and as CRI's `DNSConfig` carries them:
 * name servers, search domains, options (`ndots:2`, `edns0`).
 */
export interface ResolverConfig {
  readonly servers: readonly string[];
  readonly searches: readonly string[];
  readonly options: readonly string[];
}

/** glibc's limits, which the kubelet applies to a pod's resolv.conf: 3 servers, 32 search domains. */
export const MAX_DNS_SERVERS = 3;
export const MAX_DNS_SEARCHES = 32;

/**
 * The settings a `resolv.conf` gives (as the kubelet reads `--resolv-conf`): `nameserver` lines in
 * order, the last `search` or `domain` line, `options` lines joined; comments (`#`, `;`) and
 * anything else ignored.
 */
export function parseResolvConf(text: string): ResolverConfig {
  const servers: string[] = [];
  let searches: string[] = [];
  const options: string[] = [];
  for (const raw of text.split('\n')) {
    const [keyword, ...fields] = raw
      .replace(/[#;].*$/, '')
      .trim()
      .split(/\s+/);
    if (keyword === 'nameserver' && fields[0] !== undefined) servers.push(fields[0]);
    else if (keyword === 'search') searches = fields;
    else if (keyword === 'domain' && fields[0] !== undefined) searches = [fields[0]];
    else if (keyword === 'options') options.push(...fields);
  }
  return { servers, searches, options };
}

const EMPTY: ResolverConfig = { servers: [], searches: [], options: [] };

/**
 * The resolver a pod's sandbox is made with, as the kubelet's DNS configurer makes it, or
 * undefined for the engine's own (the host's resolv.conf as the engine copies it). There is no
 * cluster DNS, so `ClusterFirst` (the default) and `ClusterFirstWithHostNet` are `Default`, as the
 * kubelet falls back without `--cluster-dns`. `None` is `dnsConfig` alone; `Default` with a
 * `dnsConfig` is `host`'s settings with the pod's added: servers and search domains appended, each
 * once, an option of the same name replaced; then cut to 3 servers and 32 search domains.
 */
export function podDns(
  manifest: Pick<ContainerManifest, 'dnsPolicy' | 'dnsConfig'>,
  host: ResolverConfig | undefined,
): ResolverConfig | undefined {
  const given = manifest.dnsConfig;
  if (manifest.dnsPolicy !== 'None' && given === undefined) return undefined;
  const base = manifest.dnsPolicy === 'None' ? EMPTY : (host ?? EMPTY);
  const once = (list: readonly string[]) => [...new Set(list)];
  const options = new Map<string, string>();
  for (const option of base.options) options.set(option.split(':')[0]!, option);
  for (const { name, value } of given?.options ?? []) options.set(name, value === undefined ? name : `${name}:${value}`);
  return {
    servers: once([...base.servers, ...(given?.nameservers ?? [])]).slice(0, MAX_DNS_SERVERS),
    searches: once([...base.searches, ...(given?.searches ?? [])]).slice(0, MAX_DNS_SEARCHES),
    options: [...options.values()],
  };
}
