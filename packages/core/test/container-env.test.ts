import { describe, expect, it } from '@jest/globals';
import { expandVariables, resolveContainerEnv } from '../src/container-env.js';
import { validateManifest, type ContainerManifest } from '../src/index.js';

describe('expandVariables: the kubelet’s $(VAR) expansion', () => {
  const vars: Record<string, string> = { A: 'a', B: 'b$(A)', EMPTY: '' };
  const expand = (s: string) => expandVariables(s, (n) => vars[n]);

  it.each([
    ['plain', 'plain'],
    ['$(A)', 'a'],
    ['x$(A)y$(A)', 'xaya'],
    ['$(B)', 'b$(A)'],
    ['$(EMPTY)|', '|'],
    ['$(MISSING)', '$(MISSING)'],
    ['$$(A)', '$(A)'],
    ['$$$(A)', '$a'],
    ['$A', '$A'],
    ['$', '$'],
    ['a$', 'a$'],
    ['$(A', '$(A'],
    ['$()', '$()'],
    ['$(A)$(', 'a$('],
  ])('%j → %j', (input, out) => {
    expect(expand(input)).toBe(out);
  });
});

describe('resolveContainerEnv', () => {
  const manifest = (env: unknown[], extra: Record<string, unknown> = {}): ContainerManifest => {
    const result = validateManifest({
      id: 'web',
      containers: [
        {
          name: 'main',
          image: 'busybox',
          env,
          cpu: 256,
          cpuLimitMillis: 1500,
          memory: 64 * 1024 * 1024,
          memoryRequest: 32 * 1024 * 1024,
          ...extra,
        },
        { name: 'other', image: 'busybox' },
      ],
    });
    if (!result.ok) throw new Error(JSON.stringify(result.errors));
    return result.manifest;
  };
  const context = { node: 'n1', podUid: 'uid-1', hostIP: '192.0.2.1', nodeCapacity: { cpuMillis: 4000, memoryBytes: 8 * 1024 ** 3 } };
  const env = (m: ContainerManifest, c = 0) => resolveContainerEnv(m, m.containers[c]!, context).env;
  const ref = (resource: string, extra: object = {}) => ({ valueFrom: { resourceFieldRef: { resource, ...extra } } });

  it('expands a value against the variables before it only, in order', () => {
    expect(
      env(
        manifest([
          { name: 'X', value: '$(Y)' },
          { name: 'Y', value: 'y' },
          { name: 'Z', value: '$(Y)$(X)' },
        ]),
      ),
    ).toEqual({
      X: '$(Y)',
      Y: 'y',
      Z: 'y$(Y)',
    });
  });

  it('reads resources as the kubelet writes them: CPU in cores rounded up unless a divisor says, memory in bytes', () => {
    const m = manifest([
      { name: 'LIMIT_CPU', ...ref('limits.cpu') },
      { name: 'LIMIT_CPU_M', ...ref('limits.cpu', { divisor: 1 }) },
      { name: 'REQ_CPU_M', ...ref('requests.cpu', { divisor: 1 }) },
      { name: 'LIMIT_MEM_MI', ...ref('limits.memory', { divisor: 1024 * 1024 }) },
      { name: 'REQ_MEM', ...ref('requests.memory') },
      { name: 'OTHER_CPU', ...ref('limits.cpu', { containerName: 'other' }) },
      { name: 'OTHER_MEM', ...ref('limits.memory', { containerName: 'other' }) },
      { name: 'OTHER_REQ', ...ref('requests.cpu', { containerName: 'other' }) },
    ]);
    expect(env(m)).toEqual({
      LIMIT_CPU: '2',
      LIMIT_CPU_M: '1500',
      REQ_CPU_M: '250',
      LIMIT_MEM_MI: '64',
      REQ_MEM: String(32 * 1024 * 1024),
      // A container without a limit reads the node's capacity; without a request, 0.
      OTHER_CPU: '4',
      OTHER_MEM: String(8 * 1024 ** 3),
      OTHER_REQ: '0',
    });
  });

  it('reads the pod’s fields: hostIP from the node, podIP empty until the sandbox tells', () => {
    const m = manifest([
      { name: 'HOST', valueFrom: { fieldRef: { fieldPath: 'status.hostIP' } } },
      { name: 'POD', valueFrom: { fieldRef: { fieldPath: 'status.podIPs' } } },
      { name: 'NS', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
      { name: 'SA', valueFrom: { fieldRef: { fieldPath: 'spec.serviceAccountName' } } },
      { name: 'NOTE', valueFrom: { fieldRef: { fieldPath: "metadata.annotations['note']" } } },
    ]);
    expect(env(m)).toEqual({ HOST: '192.0.2.1', POD: '', NS: 'default', SA: '', NOTE: '' });
    expect(resolveContainerEnv(m, m.containers[0]!, { ...context, podIP: '10.0.0.9' }).env['POD']).toBe('10.0.0.9');
  });
});

describe('validateManifest: env valueFrom', () => {
  const refused = (env: unknown[]) => {
    const result = validateManifest({ id: 'web', containers: [{ name: 'main', image: 'busybox', env }] });
    return result.ok ? [] : result.errors;
  };

  it.each([
    [{ name: 'A', valueFrom: {} }, 'containers[0].env[0].valueFrom', 'must have exactly one of fieldRef, resourceFieldRef'],
    [
      { name: 'A', valueFrom: { fieldRef: { fieldPath: 'spec.hostname' } } },
      'containers[0].env[0].valueFrom.fieldRef.fieldPath',
      'must be one of',
    ],
    [
      { name: 'A', value: 'x', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      'containers[0].env[0].value',
      'must be empty when valueFrom',
    ],
    [
      { name: 'A', valueFrom: { resourceFieldRef: { resource: 'limits.gpu' } } },
      'containers[0].env[0].valueFrom.resourceFieldRef.resource',
      'must be one of',
    ],
    [
      { name: 'A', valueFrom: { resourceFieldRef: { resource: 'limits.cpu', containerName: 'nope' } } },
      'containers[0].env[0].valueFrom.resourceFieldRef.containerName',
      'names no container',
    ],
    [
      { name: 'A', valueFrom: { resourceFieldRef: { resource: 'limits.cpu', divisor: 0 } } },
      'containers[0].env[0].valueFrom.resourceFieldRef.divisor',
      'must be 1-',
    ],
  ])('%# refuses %j', (entry, path, message) => {
    expect(refused([entry])).toContainEqual({ path, message: expect.stringContaining(message) });
  });
});
