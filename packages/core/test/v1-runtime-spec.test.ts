import { describe, expect, it } from '@jest/globals';
import { formatFieldErrors } from '../src/errors.js';
import type { ContainerManifest } from '../src/manifest.js';
import { Labels } from '../src/naming.js';
import { HOST_NETWORK_SANDBOX_HASH, buildSandboxSpec, manifestSandboxHash, sandboxHash } from '../src/sandbox.js';
import { decideSandbox } from '../src/sandbox-plan.js';
import { CFS_PERIOD_US, buildContainerSpec, cfsQuotaOf, cpuLimitMillisOf, podPorts, specHash } from '../src/spec.js';
import { validateManifest } from '../src/validate.js';

type Obj = Record<string, unknown>;

/** A fresh validated copy each time, so no hash is remembered from another test's object. */
function valid(input: Obj): ContainerManifest {
  const result = validateManifest(structuredClone(input), { allowHostMounts: true, allowHostNetwork: true });
  if (!result.ok) throw new Error(formatFieldErrors(result.errors));
  return result.manifest;
}

const BASE: Obj = {
  id: 'web',
  volumes: [
    { name: 'data' },
    { name: 'host', hostPath: { path: '/srv/host', type: 'Directory' } },
    { name: 'unmounted', hostPath: { path: '/srv/other' } },
  ],
  containers: [
    {
      name: 'main',
      image: 'busybox:1.36',
      command: ['echo $0'],
      ports: [{ containerPort: 80, hostPort: 8080, protocol: 'TCP' }],
      volumeMounts: [
        { name: 'data', mountPath: '/data' },
        { name: 'host', mountPath: '/host', readOnly: true },
      ],
    },
  ],
};

const withContainer = (patch: Obj, manifest: Obj = {}): Obj => ({
  ...BASE,
  ...manifest,
  containers: [{ ...(BASE['containers'] as Obj[])[0], ...patch }],
});
const hashOf = (input: Obj) => {
  const m = valid(input);
  return specHash(m, m.containers[0]!);
};
const context = { node: 'node-1', source: 'file' };

describe('the spec hash and the v1 fields', () => {
  const base = hashOf(BASE);

  it.each([
    ['entrypoint', withContainer({ entrypoint: ['sh', '-c'] })],
    ['cpuLimitMillis', withContainer({ cpuLimitMillis: 500 })],
    ['a port hostIP', withContainer({ ports: [{ containerPort: 80, hostPort: 8080, hostIP: '127.0.0.1', protocol: 'TCP' }] })],
    ['hostNetwork', { ...BASE, hostNetwork: true }],
    [
      'a mounted hostPath path',
      { ...BASE, volumes: [{ name: 'data' }, { name: 'host', hostPath: { path: '/srv/elsewhere', type: 'Directory' } }] },
    ],
    [
      'a mounted hostPath type',
      { ...BASE, volumes: [{ name: 'data' }, { name: 'host', hostPath: { path: '/srv/host', type: 'DirectoryOrCreate' } }] },
    ],
    [
      'an emptyDir volume becoming a hostPath',
      {
        ...BASE,
        volumes: [
          { name: 'data', hostPath: { path: '/srv/data' } },
          { name: 'host', hostPath: { path: '/srv/host', type: 'Directory' } },
        ],
      },
    ],
  ])('changes with %s', (_what, changed) => {
    expect(hashOf(changed)).not.toBe(base);
  });

  it.each([
    ['labels and annotations', { ...BASE, labels: { app: 'web' }, annotations: { note: 'x' } }],
    ['a uuid', { ...BASE, uuid: 'abc-123' }],
    ['hostNetwork: false (the same as absent)', { ...BASE, hostNetwork: false }],
    [
      'an unmounted volume’s host path',
      {
        ...BASE,
        volumes: [
          { name: 'data' },
          { name: 'host', hostPath: { path: '/srv/host', type: 'Directory' } },
          { name: 'unmounted', hostPath: { path: '/elsewhere', type: 'File' } },
        ],
      },
    ],
    [
      'readiness and startup probes',
      withContainer({ readinessProbe: { exec: { command: ['true'] } }, startupProbe: { exec: { command: ['true'] } } }),
    ],
  ])('does not change with %s', (_what, same) => {
    expect(hashOf(same)).toBe(base);
  });
});

describe('the sandbox hash and the v1 fields', () => {
  it('keeps the ports-only hash without hostNetwork, and a constant one with it', () => {
    const m = valid(BASE);
    expect(manifestSandboxHash(m)).toBe(sandboxHash(podPorts(m)));
    expect(manifestSandboxHash(valid({ ...BASE, hostNetwork: false }))).toBe(sandboxHash(podPorts(m)));
    const host = valid({ ...BASE, hostNetwork: true });
    expect(manifestSandboxHash(host)).toBe(HOST_NETWORK_SANDBOX_HASH);
    expect(HOST_NETWORK_SANDBOX_HASH).not.toBe(sandboxHash([]));
    expect(HOST_NETWORK_SANDBOX_HASH).toMatch(/^[0-9a-f]{16}$/);
  });

  it('changes with a hostIP, so the sandbox that publishes the port is made again', () => {
    const m = valid(withContainer({ ports: [{ containerPort: 80, hostPort: 8080, hostIP: '127.0.0.1', protocol: 'TCP' }] }));
    expect(manifestSandboxHash(m)).not.toBe(manifestSandboxHash(valid(BASE)));
  });

  it('replaces a pod’s sandbox when hostNetwork is switched on', () => {
    const before = valid(BASE);
    const spec = buildSandboxSpec(before, context);
    const existing = [{ id: 's1', name: spec.name, labels: spec.labels, state: 'ready' as const, createdAt: 1 }];
    expect(decideSandbox(before, existing).kind).toBe('ready');
    expect(decideSandbox(valid({ ...BASE, hostNetwork: true }), existing).kind).toBe('new');
  });
});

describe('buildSandboxSpec and buildContainerSpec with v1 fields', () => {
  it('makes a host-network sandbox that publishes nothing, labelled with the namespace', () => {
    const spec = buildSandboxSpec(valid({ ...BASE, hostNetwork: true, namespace: 'kube-system' }), context);
    expect(spec.hostNetwork).toBe(true);
    expect(spec.ports).toEqual([]);
    expect(spec.labels[Labels.sandboxHash]).toBe(HOST_NETWORK_SANDBOX_HASH);
    expect(spec.labels[Labels.namespace]).toBe('kube-system');
  });

  it('leaves a 2014 sandbox as it was: no hostNetwork key, no namespace label', () => {
    const spec = buildSandboxSpec(valid(BASE), context);
    expect('hostNetwork' in spec).toBe(false);
    expect(spec.ports).toEqual([{ containerPort: 80, hostPort: 8080, protocol: 'TCP' }]);
    expect(Labels.namespace in spec.labels).toBe(false);
  });

  it('maps entrypoint, command, the CPU limit, hostIP, hostPath volumes and the namespace label', () => {
    const m = valid(
      withContainer(
        {
          entrypoint: ['sh', '-c'],
          cpuLimitMillis: 250,
          ports: [{ containerPort: 80, hostPort: 8080, hostIP: '127.0.0.1', protocol: 'TCP' }],
        },
        { namespace: 'team-a' },
      ),
    );
    const spec = buildContainerSpec(m, m.containers[0]!, context);
    expect(spec.entrypoint).toEqual(['sh', '-c']);
    expect(spec.command).toEqual(['echo $0']);
    expect(spec.cpuLimitMillis).toBe(250);
    expect(spec.ports).toEqual([{ containerPort: 80, hostPort: 8080, hostIp: '127.0.0.1', protocol: 'TCP' }]);
    expect(spec.mounts).toEqual([
      { volume: 'data', containerPath: '/data', readOnly: false },
      { volume: 'host', containerPath: '/host', readOnly: true, hostPath: '/srv/host', hostPathType: 'Directory' },
    ]);
    expect(spec.labels[Labels.namespace]).toBe('team-a');
  });

  it('gives an untyped hostPath no type to check, and a 2014 HOST mount its own path as before', () => {
    const m = valid({
      ...BASE,
      volumes: [{ name: 'data', hostPath: { path: '/srv/data', type: '' } }, { name: 'host' }],
      containers: [
        {
          name: 'main',
          image: 'busybox:1.36',
          volumeMounts: [
            { name: 'data', mountPath: '/data' },
            { name: 'host', mountPath: '/var/log', mountType: 'HOST' },
          ],
        },
      ],
    });
    expect(buildContainerSpec(m, m.containers[0]!, context).mounts).toEqual([
      { volume: 'data', containerPath: '/data', readOnly: false, hostPath: '/srv/data' },
      { volume: 'host', containerPath: '/var/log', readOnly: false, hostPath: '/var/log' },
    ]);
  });
});

describe('the CFS quota of a CPU limit', () => {
  it('is millis × 100 µs per 100,000 µs, at least 1,000 µs (as the kubelet), and reads back', () => {
    expect(cfsQuotaOf(500)).toBe(50_000);
    expect(cfsQuotaOf(2500)).toBe(250_000);
    expect(cfsQuotaOf(5)).toBe(1_000);
    expect(cpuLimitMillisOf(CFS_PERIOD_US, 50_000)).toBe(500);
    expect(cpuLimitMillisOf(50_000, 50_000)).toBe(1000);
    expect(cpuLimitMillisOf(CFS_PERIOD_US, 0)).toBeUndefined();
    expect(cpuLimitMillisOf(CFS_PERIOD_US, -1)).toBeUndefined();
    expect(cpuLimitMillisOf(undefined, undefined)).toBeUndefined();
  });
});
