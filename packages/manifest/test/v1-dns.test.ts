import { describe, expect, it } from '@jest/globals';
import { isKubeletError } from '@kubelet-ts/core';
import { parseManifests } from '../src/parse.js';
import { toV1Pod } from '../src/v1/to-v1.js';
import { toV1beta1 } from '../src/v1/to-v1beta1.js';
import { accepted, pod, refused } from './v1-pod-fixture.js';

describe('v1 Pod: dnsPolicy and dnsConfig', () => {
  // The Kubernetes documentation's dns-example (Pod's DNS Config).
  const example = pod(
    {},
    {
      dnsPolicy: 'None',
      dnsConfig: {
        nameservers: ['192.0.2.1'],
        searches: ['ns1.svc.cluster-domain.example', 'my.dns.search.suffix'],
        options: [{ name: 'ndots', value: '2' }, { name: 'edns0' }],
      },
    },
    { name: 'dns-example' },
  );

  it('reads them into the manifest, and writes them back as v1; v1beta1 has no form for them', () => {
    const m = accepted(example);
    expect(m.dnsPolicy).toBe('None');
    expect(m.dnsConfig).toEqual({
      nameservers: ['192.0.2.1'],
      searches: ['ns1.svc.cluster-domain.example', 'my.dns.search.suffix'],
      options: [{ name: 'ndots', value: '2' }, { name: 'edns0' }],
    });
    expect(parseManifests(JSON.stringify(toV1Pod(m)), 'again.json').manifests[0]).toEqual(m);
    try {
      toV1beta1(m);
      throw new Error('converted');
    } catch (error) {
      expect(isKubeletError(error) && error.fieldErrors.map((e) => e.path)).toEqual(['spec.dnsPolicy', 'spec.dnsConfig']);
    }
  });

  it('takes the policies a pod may say, the default left out; an empty dnsConfig is none', () => {
    expect(accepted(pod({}, { dnsPolicy: 'ClusterFirst', dnsConfig: {} }))).toEqual(accepted(pod()));
    expect(accepted(pod({}, { dnsPolicy: 'Default' })).dnsPolicy).toBe('Default');
    expect(accepted(pod({}, { dnsPolicy: 'ClusterFirstWithHostNet', hostNetwork: true })).dnsPolicy).toBe('ClusterFirstWithHostNet');
  });

  it('refuses what Kubernetes refuses, by its v1 path', () => {
    expect(refused(pod({}, { dnsPolicy: 'None' }))).toEqual([
      { path: 'spec.dnsConfig.nameservers', message: expect.stringContaining('at least one name server') },
    ]);
    expect(refused(pod({}, { dnsPolicy: 'ClusterFirst', dnsConfig: { nameservers: ['not-an-ip'] } }))).toEqual([
      { path: 'spec.dnsConfig.nameservers[0]', message: expect.stringContaining('must be an IP address') },
    ]);
    expect(refused(pod({}, { dnsPolicy: 'Sometimes' }))).toEqual([
      { path: 'spec.dnsPolicy', message: expect.stringContaining('must be one of ClusterFirst') },
    ]);
  });
});
