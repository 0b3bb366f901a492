import { describe, expect, it } from '@jest/globals';
import { buildContainerSpec, specHash, type Container, type ContainerManifest } from '@kubelet-ts/core';
import { toV1Pod } from '../src/v1/to-v1.js';
import { toV1beta1 } from '../src/v1/to-v1beta1.js';
import { accepted, pod, refused } from './v1-pod-fixture.js';

const withClaim = (claim: Record<string, unknown>, mount: Record<string, unknown> = {}) =>
  pod(
    { volumeMounts: [{ name: 'data', mountPath: '/var/lib/mysql', ...mount }] },
    { volumes: [{ name: 'data', persistentVolumeClaim: claim }] },
  );
const first = (m: ContainerManifest) => m.containers[0] as Container;

describe('v1 persistentVolumeClaim: a named volume of the host, as podman kube play makes one per claim', () => {
  it('becomes a claim volume, and the runtime is told to bind the claim', () => {
    const m = accepted(withClaim({ claimName: 'mysql-pv-claim' }));
    expect(m.volumes).toEqual([{ name: 'data', claim: { name: 'mysql-pv-claim' } }]);
    const spec = buildContainerSpec(m, first(m), { node: 'n', source: 's' });
    expect(spec.mounts).toEqual([{ volume: 'data', containerPath: '/var/lib/mysql', readOnly: false, claim: 'mysql-pv-claim' }]);
  });

  it('mounts a readOnly claim read-only in every container, whatever the mount says', () => {
    const m = accepted(withClaim({ claimName: 'shared', readOnly: true }));
    expect(m.volumes[0]).toEqual({ name: 'data', claim: { name: 'shared', readOnly: true } });
    expect(buildContainerSpec(m, first(m), { node: 'n', source: 's' }).mounts[0]?.readOnly).toBe(true);
  });

  it('a changed claim changes the spec hash of the containers that mount it', () => {
    const a = accepted(withClaim({ claimName: 'a' }));
    const b = accepted(withClaim({ claimName: 'b' }));
    expect(specHash(a, first(a))).not.toBe(specHash(b, first(b)));
  });

  it('writes back as the same claim in v1, which reads to the same manifest; v1beta1 has no form for it', () => {
    const m = accepted(withClaim({ claimName: 'shared', readOnly: true }));
    expect(toV1Pod(m).spec['volumes']).toEqual([{ name: 'data', persistentVolumeClaim: { claimName: 'shared', readOnly: true } }]);
    expect(accepted(toV1Pod(m))).toEqual(m);
    expect(() => toV1beta1(m)).toThrow(/spec\.volumes\[0\]\.persistentVolumeClaim: has no v1beta1 form/);
  });

  it.each([
    [withClaim({}), 'spec.volumes[0].persistentVolumeClaim.claimName', 'is required'],
    [withClaim({ claimName: 'Not_A_Name' }), 'spec.volumes[0].persistentVolumeClaim.claimName', 'must be a DNS subdomain'],
    [withClaim({ claimName: 'x', readOnly: 'yes' }), 'spec.volumes[0].persistentVolumeClaim.readOnly', 'must be true or false'],
    [withClaim({ claimName: 'x', storageClass: 'fast' }), 'spec.volumes[0].persistentVolumeClaim.storageClass', 'not supported'],
    [
      pod({}, { volumes: [{ name: 'data', emptyDir: {}, persistentVolumeClaim: { claimName: 'x' } }] }),
      'spec.volumes[0]',
      'exactly one of emptyDir, hostPath, persistentVolumeClaim',
    ],
  ])('%# refuses %j', (input, path, message) => {
    expect(refused(input)).toContainEqual({ path, message: expect.stringContaining(message) });
  });
});
