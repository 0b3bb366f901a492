import { describe, expect, it } from '@jest/globals';
import type { ContainerManifest } from '../src/manifest.js';
import { validateManifest } from '../src/validate.js';

/** The domain form of a v1 Pod, every field the v1 decoder can set, as an embedder could write it. */
const FULL: ContainerManifest = {
  id: 'etcd.kube-system',
  uuid: '1234-abcd',
  namespace: 'kube-system',
  labels: { component: 'etcd', 'k8s.io/tier': 'control-plane', empty: '' },
  annotations: { 'kubeadm.kubernetes.io/etcd.advertise-client-urls': 'https://10.0.0.1:2379', long: 'x'.repeat(10_000) },
  hostNetwork: true,
  volumes: [{ name: 'data', hostPath: { path: '/var/lib/etcd', type: 'DirectoryOrCreate' } }, { name: 'scratch' }],
  containers: [
    {
      name: 'etcd',
      image: 'registry.k8s.io/etcd:3.5.9-0',
      entrypoint: ['etcd'],
      command: ['--data-dir=/var/lib/etcd'],
      ports: [{ containerPort: 2379, hostIP: '127.0.0.1', protocol: 'TCP' }],
      env: [],
      memory: 104857600,
      cpu: 256,
      cpuLimitMillis: 500,
      volumeMounts: [{ name: 'data', mountPath: '/var/lib/etcd', readOnly: false }],
      livenessProbe: {
        httpGet: { path: '/health', port: 2381, host: '127.0.0.1', scheme: 'HTTPS', httpHeaders: [{ name: 'X-A', value: 'b' }] },
        initialDelaySeconds: 10,
        periodSeconds: 10,
        timeoutSeconds: 15,
        failureThreshold: 8,
      },
      readinessProbe: {
        tcpSocket: { port: 2379, host: 'localhost' },
        initialDelaySeconds: 0,
        periodSeconds: 1,
        timeoutSeconds: 1,
        failureThreshold: 3,
        successThreshold: 2,
      },
      startupProbe: { exec: { command: ['true'] }, initialDelaySeconds: 0, periodSeconds: 10, timeoutSeconds: 1, failureThreshold: 24 },
    },
  ],
};

function errorsOf(input: unknown, allowHostMounts = true) {
  const r = validateManifest(input, { allowHostMounts, allowHostNetwork: true });
  return r.ok ? [] : r.errors;
}

function withContainer(patch: Record<string, unknown>, manifest: Record<string, unknown> = {}) {
  return { ...FULL, ...manifest, containers: [{ ...FULL.containers[0], ...patch }] };
}

describe('validateManifest: the domain fields a v1 Pod sets', () => {
  it('accepts every one and validates its result again to itself', () => {
    const once = validateManifest(FULL, { allowHostMounts: true, allowHostNetwork: true });
    if (!once.ok) throw new Error(JSON.stringify(once.errors));
    expect(once.manifest).toEqual(FULL);
    const twice = validateManifest(once.manifest, { allowHostMounts: true, allowHostNetwork: true });
    expect(twice.ok && twice.manifest).toEqual(once.manifest);
  });

  it('leaves the default forms out: scheme HTTP, successThreshold 1, hostPath type "", empty labels', () => {
    const r = validateManifest(
      {
        id: 'a',
        labels: {},
        volumes: [{ name: 'h', hostPath: { path: '/srv', type: '' } }],
        containers: [
          {
            name: 'c',
            image: 'busybox',
            livenessProbe: { httpGet: { path: '/', port: 80, host: '10.0.0.1', scheme: 'HTTP' }, successThreshold: 1 },
          },
        ],
      },
      { allowHostMounts: true, allowHostNetwork: true },
    );
    expect(r.ok && r.manifest).toEqual({
      id: 'a',
      volumes: [{ name: 'h', hostPath: { path: '/srv' } }],
      containers: [
        {
          name: 'c',
          image: 'busybox',
          ports: [],
          env: [],
          volumeMounts: [],
          livenessProbe: {
            httpGet: { path: '/', port: 80, host: '10.0.0.1' },
            initialDelaySeconds: 0,
            periodSeconds: 10,
            timeoutSeconds: 1,
            failureThreshold: 3,
          },
        },
      ],
    });
  });

  it('refuses hostNetwork: true without allowHostNetwork, naming the flag and what to do instead (issue 27 item 4)', () => {
    const result = validateManifest({ id: 'web', hostNetwork: true, containers: [{ name: 'main', image: 'app:1' }] });
    expect(result).toEqual({
      ok: false,
      id: 'web',
      errors: [
        {
          path: 'hostNetwork',
          message:
            "true puts the pod in the host's network, where it reaches this agent on 127.0.0.1 and can take its port, which this agent refuses; run it with --allow-host-network (allowHostNetwork) to accept it, or publish ports (hostPort)",
        },
      ],
    });
    expect(validateManifest({ id: 'web', hostNetwork: false, containers: [{ name: 'main', image: 'app:1' }] }).ok).toBe(true);
    expect(
      validateManifest({ id: 'web', hostNetwork: true, containers: [{ name: 'main', image: 'app:1' }] }, { allowHostNetwork: true }).ok,
    ).toBe(true);
  });

  it('normalises a hostPath volume as the kubelet binds it (a trailing "/", "." or empty steps); "/" stays refused', () => {
    for (const [written, normal] of [
      ['/var/log/', '/var/log'],
      ['/var//./log', '/var/log'],
      ['/usr/libexec/kubernetes/plugins/', '/usr/libexec/kubernetes/plugins'],
    ]) {
      const r = validateManifest(
        { id: 'web', volumes: [{ name: 'h', hostPath: { path: written } }], containers: [] },
        { allowHostMounts: true },
      );
      expect(r.ok && r.manifest.volumes[0]?.hostPath?.path).toBe(normal);
    }
    const root = validateManifest(
      { id: 'web', volumes: [{ name: 'h', hostPath: { path: '//./' } }], containers: [] },
      { allowHostMounts: true },
    );
    expect(root.ok).toBe(false);
  });

  it('refuses a hostPath volume without allowHostMounts, naming the flag', () => {
    expect(errorsOf(FULL, false)).toEqual([{ path: 'volumes[0].hostPath', message: expect.stringContaining('--allow-host-mounts') }]);
  });

  it.each([
    [{ volumes: [{ name: 'data', hostPath: { path: '/var/../etc' } }] }, 'volumes[0].hostPath.path', 'must not contain ".."'],
    [{ volumes: [{ name: 'data', hostPath: { path: '/' } }] }, 'volumes[0].hostPath.path', 'root directory'],
    [{ volumes: [{ name: 'data', hostPath: { path: '/x', type: 'Dir' } }] }, 'volumes[0].hostPath.type', 'must be one of'],
    [{ namespace: 'Kube_System' }, 'namespace', 'DNS label'],
    [{ labels: { 'a b': 'x' } }, 'labels.a b', 'must be a key'],
    [{ labels: { a: 'x y' } }, 'labels.a', 'label value'],
    [{ labels: { a: 1 } }, 'labels.a', 'quote it'],
    [{ annotations: { big: 'x'.repeat(300_000) } }, 'annotations', 'at most 262144 bytes'],
    [{ hostNetwork: 'yes' }, 'hostNetwork', 'true or false'],
  ])('refuses %j at its path', (patch, path, message) => {
    const errors = errorsOf({ ...FULL, ...patch, containers: [{ ...FULL.containers[0], volumeMounts: [] }] });
    expect(errors).toEqual([{ path, message: expect.stringContaining(message) }]);
  });

  it.each([
    [{ ports: [{ containerPort: 80, hostIP: '1.2.3' }] }, 'containers[0].ports[0].hostIP', 'IPv4 or IPv6'],
    [{ cpuLimitMillis: 0 }, 'containers[0].cpuLimitMillis', 'must be 1-1000000'],
    [{ entrypoint: 'etcd' }, 'containers[0].entrypoint', 'must be a list'],
    [
      { livenessProbe: { ...FULL.containers[0]!.livenessProbe, successThreshold: 2 } },
      'containers[0].livenessProbe.successThreshold',
      'must be 1 for a livenessProbe',
    ],
    [
      { startupProbe: { exec: { command: ['x'] }, successThreshold: 3 } },
      'containers[0].startupProbe.successThreshold',
      'must be 1 for a startupProbe',
    ],
    [
      { readinessProbe: { httpGet: { port: 1, scheme: 'https' } } },
      'containers[0].readinessProbe.httpGet.scheme',
      'must be one of HTTP, HTTPS',
    ],
    [
      { readinessProbe: { httpGet: { port: 1, httpHeaders: [{ name: 'A B', value: 'x' }] } } },
      'containers[0].readinessProbe.httpGet.httpHeaders[0].name',
      'HTTP header name',
    ],
    [
      { readinessProbe: { httpGet: { port: 1, httpHeaders: [{ name: 'A', value: 'x\r\nB: y' }] } } },
      'containers[0].readinessProbe.httpGet.httpHeaders[0].value',
      'line breaks',
    ],
    [{ readinessProbe: { tcpSocket: { port: 1, host: 'a b' } } }, 'containers[0].readinessProbe.tcpSocket.host', 'host name or an IP'],
  ])('refuses container field %j at its path', (patch, path, message) => {
    expect(errorsOf(withContainer(patch))).toEqual([{ path, message: expect.stringContaining(message) }]);
  });

  it('probes any port by number (a port not published on the pod IP, as the kubelet does), or a TCP port by name', () => {
    const probe = { tcpSocket: { port: 9000 } };
    expect(errorsOf(withContainer({ readinessProbe: probe }))).toEqual([]);
    expect(errorsOf(withContainer({ readinessProbe: probe }, { hostNetwork: false }))).toEqual([]);
    expect(errorsOf(withContainer({ readinessProbe: { tcpSocket: { port: 9000, host: '127.0.0.1' } } }, { hostNetwork: false }))).toEqual(
      [],
    );
    expect(errorsOf(withContainer({ readinessProbe: { tcpSocket: { port: 'metrics' } } }))).toEqual([
      { path: 'containers[0].readinessProbe.tcpSocket.port', message: expect.stringContaining("name one of this container's TCP ports") },
    ]);
  });
});
