import { isIP } from 'node:net';
import { MAX_DNS_SEARCHES, MAX_DNS_SERVERS } from './dns.js';
import { describeValue } from './field-checks.js';
import type { ContainerManifest, DnsPolicy, PodDnsConfig } from './manifest.js';
import { PlacementChecks } from './validate-placement.js';

const DNS_POLICIES: readonly DnsPolicy[] = ['ClusterFirst', 'ClusterFirstWithHostNet', 'Default', 'None'];
const DNS_CONFIG_FIELDS = new Set(['nameservers', 'searches', 'options']);
const OPTION_FIELDS = new Set(['name', 'value']);
// A search domain: DNS labels joined by '.', a trailing '.' allowed (Kubernetes' check).
const SEARCH_DOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\.?$/;
// Kubernetes' bound on the search list's length, written out.
const MAX_SEARCH_CHARS = 2048;

/** The checks of a pod's `dnsPolicy` and `dnsConfig`, as Kubernetes validates them. */
export class DnsChecks extends PlacementChecks {
  protected dns(m: Record<string, unknown>, hostNetwork: boolean): Pick<ContainerManifest, 'dnsPolicy' | 'dnsConfig'> {
    const policy = m['dnsPolicy'] == null || m['dnsPolicy'] === '' ? undefined : this.oneOf(m['dnsPolicy'], 'dnsPolicy', DNS_POLICIES);
    const config = m['dnsConfig'] == null ? undefined : this.dnsConfig(m['dnsConfig']);
    if (policy === 'None' && (config?.nameservers ?? []).length === 0)
      this.fail('dnsConfig.nameservers', 'must give at least one name server when dnsPolicy is None');
    // Docker gives a pod on the host's network the host's resolv.conf and takes no other.
    if (hostNetwork && (config !== undefined || policy === 'None'))
      this.fail(
        config === undefined ? 'dnsPolicy' : 'dnsConfig',
        "a hostNetwork pod uses the host's resolv.conf here; leave dnsConfig out (and dnsPolicy None), or drop hostNetwork",
      );
    return {
      // ClusterFirst is what an absent policy means: left out, so one pod has one form.
      ...(policy === undefined || policy === 'ClusterFirst' ? {} : { dnsPolicy: policy }),
      ...(config === undefined ? {} : { dnsConfig: config }),
    };
  }

  /** The list at `dnsConfig.<field>` (none when absent; a value that is no list is said, and none). */
  private entries(c: Record<string, unknown>, field: string): unknown[] {
    return c[field] == null ? [] : (this.list(c[field], `dnsConfig.${field}`) ?? []);
  }

  private dnsConfig(input: unknown): PodDnsConfig | undefined {
    const c = this.record(input, 'dnsConfig', DNS_CONFIG_FIELDS);
    if (c === undefined) return undefined;
    const nameservers = this.entries(c, 'nameservers').flatMap((s, i) => {
      const path = `dnsConfig.nameservers[${i}]`;
      return typeof s === 'string' && isIP(s) !== 0 ? [s] : (this.fail(path, `must be an IP address, got ${describeValue(s)}`) ?? []);
    });
    if (nameservers.length > MAX_DNS_SERVERS)
      this.fail('dnsConfig.nameservers', `must list at most ${MAX_DNS_SERVERS} name servers, got ${nameservers.length}`);
    const searches = this.entries(c, 'searches').flatMap((s, i) => {
      const path = `dnsConfig.searches[${i}]`;
      return typeof s === 'string' && s.length <= 253 && SEARCH_DOMAIN.test(s)
        ? [s]
        : (this.fail(path, `must be a DNS domain (lower-case labels joined by '.'), got ${describeValue(s)}`) ?? []);
    });
    if (searches.length > MAX_DNS_SEARCHES)
      this.fail('dnsConfig.searches', `must list at most ${MAX_DNS_SEARCHES} search domains, got ${searches.length}`);
    const chars = searches.join(' ').length;
    if (chars > MAX_SEARCH_CHARS) this.fail('dnsConfig.searches', `must be at most ${MAX_SEARCH_CHARS} characters in all, got ${chars}`);
    const options = this.entries(c, 'options').flatMap((raw, i) => {
      const path = `dnsConfig.options[${i}]`;
      const o = this.record(raw, path, OPTION_FIELDS);
      if (o === undefined) return [];
      const name = this.string(o['name'], `${path}.name`, true);
      const value = o['value'] == null ? undefined : this.string(o['value'], `${path}.value`, false);
      if (name !== undefined && !/^[^\s:]+$/.test(name)) return this.fail(`${path}.name`, 'must be one word, without spaces or ":"') ?? [];
      if (value !== undefined && /\s/.test(value)) return this.fail(`${path}.value`, 'must be one word, without spaces') ?? [];
      return name === undefined ? [] : [{ name, ...(value === undefined ? {} : { value }) }];
    });
    // An empty dnsConfig adds nothing: the pod is as one without it.
    if (nameservers.length + searches.length + options.length === 0) return undefined;
    return {
      ...(nameservers.length === 0 ? {} : { nameservers }),
      ...(searches.length === 0 ? {} : { searches }),
      ...(options.length === 0 ? {} : { options }),
    };
  }
}
