import { describe, expect, it } from '@jest/globals';
import { nodeLabelsOf, type ContainerManifest } from '@kubelet-ts/core';
import { parseManifests, toV1Pod, toV1beta1 } from '../src/index.js';

const pod = (spec: object) =>
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web' },
    spec: { containers: [{ name: 'app', image: 'nginx:1.25' }], ...spec },
  });
const nodeLabels = nodeLabelsOf({ disktype: 'ssd' }, 'node-a');
const required = (key: string, values: string[]) => ({
  nodeAffinity: {
    requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key, operator: 'In', values }] }] },
    preferredDuringSchedulingIgnoredDuringExecution: [
      { weight: 1, preference: { matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] } },
    ],
  },
  podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [] },
});

describe('v1 nodeSelector and node affinity, checked against the node', () => {
  it('runs a pod whose selector and required affinity this node meets, and writes them back', () => {
    const parsed = parseManifests(
      pod({ nodeSelector: { disktype: 'ssd' }, affinity: required('kubernetes.io/hostname', ['node-a']) }),
      'web.json',
      { nodeLabels },
    );
    expect(parsed.rejected).toEqual([]);
    const m = parsed.manifests[0] as ContainerManifest;
    expect(m.nodeAffinity).toEqual({
      nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['node-a'] }] }],
    });
    expect(parseManifests(JSON.stringify(toV1Pod(m)), 'back.json', { nodeLabels }).manifests).toEqual([m]);
    expect(() => toV1beta1(m)).toThrow(/spec.nodeSelector: has no v1beta1 form/);
  });

  it('refuses a pod for another node by the v1 path written; the preferred affinity and pod affinity only place pods, and are ignored', () => {
    const parsed = parseManifests(pod({ nodeSelector: { disktype: 'hdd' }, affinity: required('zone', ['b']) }), 'web.json', {
      nodeLabels,
    });
    expect(parsed.rejected[0]?.errors).toEqual([
      { path: 'spec.nodeSelector.disktype', message: expect.stringContaining('--node-labels disktype=hdd') },
      {
        path: 'spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution',
        message: expect.stringContaining('no term matches this node'),
      },
    ]);
  });
});
