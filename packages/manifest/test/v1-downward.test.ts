import { describe, expect, it } from '@jest/globals';
import type { Container, ContainerManifest } from '@kubelet-ts/core';
import { toV1Pod } from '../src/v1/to-v1.js';
import { toV1beta1 } from '../src/v1/to-v1beta1.js';
import { accepted, pod, refused } from './v1-pod-fixture.js';

const first = (m: ContainerManifest) => m.containers[0] as Container;

describe('v1 env valueFrom: the downward API and resources', () => {
  const input = pod({
    resources: { limits: { cpu: '500m', memory: '128Mi' }, requests: { memory: '64Mi' } },
    env: [
      { name: 'POD_IP', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'status.podIP' } } },
      { name: 'CPU_M', valueFrom: { resourceFieldRef: { resource: 'limits.cpu', divisor: '1m' } } },
      { name: 'MEM_MI', valueFrom: { resourceFieldRef: { containerName: 'app', resource: 'requests.memory', divisor: '1Mi' } } },
      { name: 'CORES', valueFrom: { resourceFieldRef: { resource: 'limits.cpu' } } },
    ],
  });

  it('keeps each source, a divisor in millicores (CPU) or bytes (memory), and the memory request', () => {
    const c = first(accepted(input));
    expect(c.env).toEqual([
      { name: 'POD_IP', value: '', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
      { name: 'CPU_M', value: '', valueFrom: { resourceFieldRef: { resource: 'limits.cpu', divisor: 1 } } },
      {
        name: 'MEM_MI',
        value: '',
        valueFrom: { resourceFieldRef: { containerName: 'app', resource: 'requests.memory', divisor: 1048576 } },
      },
      { name: 'CORES', value: '', valueFrom: { resourceFieldRef: { resource: 'limits.cpu' } } },
    ]);
    expect(c.memoryRequest).toBe(64 * 1024 * 1024);
  });

  it('writes them back in v1, which reads to the same manifest; v1beta1 has no form for them', () => {
    const m = accepted(input);
    const env = (toV1Pod(m).spec['containers'] as Array<{ env: unknown[] }>)[0]?.env;
    expect(env?.[1]).toEqual({ name: 'CPU_M', valueFrom: { resourceFieldRef: { resource: 'limits.cpu', divisor: '1m' } } });
    expect(accepted(toV1Pod(m))).toEqual(m);
    expect(() => toV1beta1(m)).toThrow(/spec\.containers\[0\]\.env\[0\]\.valueFrom: has no v1beta1 form/);
  });

  it.each([
    [
      pod({ env: [{ name: 'A', valueFrom: { resourceFieldRef: { resource: 'limits.cpu', divisor: '0' } } }] }),
      'spec.containers[0].env[0].valueFrom.resourceFieldRef.divisor',
      'must be at least 1m',
    ],
    [
      pod({ env: [{ name: 'A', valueFrom: { resourceFieldRef: { resource: 'limits.memory', divisor: 'lots' } } }] }),
      'spec.containers[0].env[0].valueFrom.resourceFieldRef.divisor',
      'must be a Kubernetes quantity',
    ],
    [
      pod({ env: [{ name: 'A', valueFrom: { secretKeyRef: { name: 's' } } }] }),
      'spec.containers[0].env[0].valueFrom.secretKeyRef.key',
      'is required',
    ],
    [
      pod({ env: [{ name: 'A', valueFrom: { secretKeyRef: { name: 's', key: 'k' }, fieldRef: { fieldPath: 'metadata.name' } } }] }),
      'spec.containers[0].env[0].valueFrom',
      'must have exactly one of fieldRef, resourceFieldRef, configMapKeyRef, secretKeyRef',
    ],
    [
      pod({ env: [{ name: 'A', valueFrom: { fieldRef: { fieldPath: 'status.phase' } } }] }),
      'spec.containers[0].env[0].valueFrom.fieldRef.fieldPath',
      'must be one of metadata.name',
    ],
  ])('%# refuses %j', (given, path, message) => {
    expect(refused(given)).toContainEqual({ path, message: expect.stringContaining(message) });
  });
});
