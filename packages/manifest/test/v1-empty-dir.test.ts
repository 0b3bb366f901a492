import { describe, expect, it } from '@jest/globals';
import { accepted, pod } from './v1-pod-fixture.js';

describe('v1 Pod: emptyDir sizeLimit', () => {
  // The Kubernetes documentation's shared-volume example: a volume on the disk with a size limit.
  it('keeps a size limit on the disk (reported when outgrown, as the kubelet does for a static pod) and in memory', () => {
    const disk = accepted(pod({}, { volumes: [{ name: 'cache', emptyDir: { sizeLimit: '500Mi' } }] }));
    expect(disk.volumes[0]?.emptyDir).toEqual({ sizeLimit: 500 * 1024 * 1024 });
    const memory = accepted(pod({}, { volumes: [{ name: 'cache', emptyDir: { medium: 'Memory', sizeLimit: '16Mi' } }] }));
    expect(memory.volumes[0]?.emptyDir).toEqual({ medium: 'Memory', sizeLimit: 16 * 1024 * 1024 });
  });
});
