import { describe, expect, it } from '@jest/globals';
import { parseResolvConf, podDns } from '../src/dns.js';
import { buildSandboxSpec, manifestSandboxHash } from '../src/sandbox.js';
import { validateManifest } from '../src/validate.js';

const HOST = parseResolvConf(
  [
    '# written by hand',
    'nameserver 10.0.0.2',
    'nameserver 10.0.0.3 ; the second',
    'domain corp.example',
    'search corp.example lab.example',
    'options ndots:1 timeout:2',
    'options rotate',
    'sortlist 10.0.0.0/8',
  ].join('\n'),
);

function checked(fields: Record<string, unknown>) {
  const r = validateManifest(
    { version: 'v1beta1', id: 'web', containers: [{ name: 'app', image: 'app:1' }], ...fields },
    { allowHostNetwork: true },
  );
  return r.ok ? { manifest: r.manifest, errors: [] } : { manifest: undefined, errors: r.errors };
}

describe('parseResolvConf (the host file, as the kubelet reads --resolv-conf)', () => {
  it('takes the name servers in order, the last search or domain line, and every option', () => {
    expect(HOST).toEqual({
      servers: ['10.0.0.2', '10.0.0.3'],
      searches: ['corp.example', 'lab.example'],
      options: ['ndots:1', 'timeout:2', 'rotate'],
    });
    expect(parseResolvConf('search a.example\ndomain b.example\n')).toEqual({ servers: [], searches: ['b.example'], options: [] });
    expect(parseResolvConf('')).toEqual({ servers: [], searches: [], options: [] });
  });
});

describe('podDns (the kubelet’s DNS configurer, without a cluster DNS)', () => {
  const config = {
    nameservers: ['192.0.2.53', '10.0.0.2'],
    searches: ['svc.example', 'corp.example'],
    options: [{ name: 'ndots', value: '5' }, { name: 'edns0' }],
  };

  it('leaves a pod without dnsConfig to the engine’s copy of the host file, whatever its policy but None', () => {
    expect(podDns({}, HOST)).toBeUndefined();
    expect(podDns({ dnsPolicy: 'Default' }, HOST)).toBeUndefined();
    expect(podDns({ dnsPolicy: 'ClusterFirstWithHostNet' }, HOST)).toBeUndefined();
  });

  it('adds dnsConfig to the host’s: servers and domains appended once each, an option of the same name replaced', () => {
    const merged = {
      servers: ['10.0.0.2', '10.0.0.3', '192.0.2.53'],
      searches: ['corp.example', 'lab.example', 'svc.example'],
      options: ['ndots:5', 'timeout:2', 'rotate', 'edns0'],
    };
    expect(podDns({ dnsConfig: config }, HOST)).toEqual(merged);
    // ClusterFirst falls back to Default, as the kubelet does with no --cluster-dns.
    expect(podDns({ dnsPolicy: 'Default', dnsConfig: config }, HOST)).toEqual(merged);
    // Without a host file, the pod's own settings are all there is.
    expect(podDns({ dnsConfig: config }, undefined)).toEqual({
      servers: ['192.0.2.53', '10.0.0.2'],
      searches: ['svc.example', 'corp.example'],
      options: ['ndots:5', 'edns0'],
    });
  });

  it('makes None from dnsConfig alone, and cuts to 3 servers and 32 domains', () => {
    expect(podDns({ dnsPolicy: 'None', dnsConfig: config }, HOST)).toEqual({
      servers: ['192.0.2.53', '10.0.0.2'],
      searches: ['svc.example', 'corp.example'],
      options: ['ndots:5', 'edns0'],
    });
    const many = {
      servers: ['10.0.0.1', '10.0.0.2', '10.0.0.3'],
      searches: Array.from({ length: 32 }, (_, i) => `d${i}.example`),
      options: [],
    };
    const cut = podDns({ dnsConfig: { nameservers: ['192.0.2.1'], searches: ['extra.example'] } }, many);
    expect(cut?.servers).toEqual(['10.0.0.1', '10.0.0.2', '10.0.0.3']);
    expect(cut?.searches).toHaveLength(32);
    expect(cut?.searches).not.toContain('extra.example');
  });
});

describe('dnsPolicy and dnsConfig, as Kubernetes validates them', () => {
  it('keeps a policy and a config; ClusterFirst and an empty config are as if absent', () => {
    expect(
      checked({ dnsPolicy: 'None', dnsConfig: { nameservers: ['192.0.2.53'], options: [{ name: 'ndots', value: '2' }] } }).manifest,
    ).toMatchObject({
      dnsPolicy: 'None',
      dnsConfig: { nameservers: ['192.0.2.53'], options: [{ name: 'ndots', value: '2' }] },
    });
    const plain = checked({}).manifest;
    expect(checked({ dnsPolicy: 'ClusterFirst', dnsConfig: {} }).manifest).toEqual(plain);
  });

  it.each([
    [{ dnsPolicy: 'Cluster' }, 'dnsPolicy', 'must be one of ClusterFirst, ClusterFirstWithHostNet, Default, None'],
    [{ dnsPolicy: 'None' }, 'dnsConfig.nameservers', 'at least one name server when dnsPolicy is None'],
    [{ dnsConfig: { nameservers: ['dns.example'] } }, 'dnsConfig.nameservers[0]', 'must be an IP address'],
    [{ dnsConfig: { nameservers: ['10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.4'] } }, 'dnsConfig.nameservers', 'at most 3'],
    [{ dnsConfig: { searches: ['Bad_Domain'] } }, 'dnsConfig.searches[0]', 'must be a DNS domain'],
    [{ dnsConfig: { searches: Array.from({ length: 33 }, (_, i) => `d${i}.example`) } }, 'dnsConfig.searches', 'at most 32'],
    [{ dnsConfig: { options: [{ value: '2' }] } }, 'dnsConfig.options[0].name', 'is required'],
    [{ dnsConfig: { options: [{ name: 'nd ots' }] } }, 'dnsConfig.options[0].name', 'one word'],
    [{ dnsConfig: { servers: ['10.0.0.1'] } }, 'dnsConfig.servers', 'unknown field'],
    [{ hostNetwork: true, dnsConfig: { nameservers: ['10.0.0.1'] } }, 'dnsConfig', "uses the host's resolv.conf here"],
  ])('refuses %j at its path', (fields, path, message) => {
    expect(checked(fields).errors).toEqual([{ path, message: expect.stringContaining(message) }]);
  });
});

describe("a pod's sandbox and its DNS", () => {
  const context = { node: 'node-1', source: 'file', hostDns: HOST };

  it('carries the merged resolver; a pod without dnsConfig carries none', () => {
    const { manifest } = checked({ dnsConfig: { nameservers: ['192.0.2.53'] } });
    expect(buildSandboxSpec(manifest!, context).dns).toEqual({ ...HOST, servers: ['10.0.0.2', '10.0.0.3', '192.0.2.53'] });
    expect(buildSandboxSpec(checked({}).manifest!, context).dns).toBeUndefined();
  });

  it('is another sandbox when the pod’s DNS settings change, not when the host’s do or a policy changes nothing', () => {
    const hash = (fields: Record<string, unknown>) => manifestSandboxHash(checked(fields).manifest!);
    const plain = hash({});
    expect(hash({ dnsPolicy: 'Default' })).toBe(plain);
    expect(hash({ dnsPolicy: 'ClusterFirstWithHostNet' })).toBe(plain);
    const withConfig = hash({ dnsConfig: { nameservers: ['192.0.2.53'] } });
    expect(withConfig).not.toBe(plain);
    expect(hash({ dnsConfig: { nameservers: ['192.0.2.54'] } })).not.toBe(withConfig);
    expect(hash({ dnsPolicy: 'None', dnsConfig: { nameservers: ['192.0.2.53'] } })).not.toBe(withConfig);
    const { manifest } = checked({ dnsConfig: { nameservers: ['192.0.2.53'] } });
    const labels = (hostDns: typeof HOST) => buildSandboxSpec(manifest!, { ...context, hostDns }).labels;
    expect(labels({ servers: ['10.9.9.9'], searches: [], options: [] })).toEqual(labels(HOST));
  });
});
