import { readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { specHashes, type Container, type ContainerManifest } from '@kubelet-ts/core';
import { parseManifests } from '../src/parse.js';
import { toV1Pod } from '../src/v1/to-v1.js';

/** kubeadm's control-plane static pods as `kubeadm init` (v1.28) writes them to /etc/kubernetes/manifests. */
const fixture = (name: string) => readFileSync(new URL(`./fixtures/kubeadm/${name}.yaml`, import.meta.url), 'utf8');
const FILES = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler'] as const;

function read(name: string, text = fixture(name)): ContainerManifest {
  const parsed = parseManifests(text, `/etc/kubernetes/manifests/${name}.yaml`, { allowHostMounts: true, allowHostNetwork: true });
  expect(parsed.unreadable).toBeUndefined();
  expect(parsed.rejected).toEqual([]);
  expect(parsed.manifests).toHaveLength(1);
  return parsed.manifests[0] as ContainerManifest;
}

const httpProbe = (host: string, port: number, path: string, scheme: 'HTTP' | 'HTTPS', failureThreshold: number, extra: object = {}) => ({
  httpGet: { path, port, host, ...(scheme === 'HTTPS' ? { scheme } : {}) },
  initialDelaySeconds: 10,
  periodSeconds: 10,
  timeoutSeconds: 15,
  failureThreshold,
  ...extra,
});
const dirs = (...entries: Array<[string, string]>) =>
  entries.map(([name, path]) => ({ name, hostPath: { path, type: 'DirectoryOrCreate' } }));
const caVolumes = dirs(['ca-certs', '/etc/ssl/certs'], ['etc-ca-certificates', '/etc/ca-certificates']);
const caMounts = [
  { name: 'ca-certs', mountPath: '/etc/ssl/certs', readOnly: true },
  { name: 'etc-ca-certificates', mountPath: '/etc/ca-certificates', readOnly: true },
];
const shareMounts = [
  { name: 'usr-local-share-ca-certificates', mountPath: '/usr/local/share/ca-certificates', readOnly: true },
  { name: 'usr-share-ca-certificates', mountPath: '/usr/share/ca-certificates', readOnly: true },
];
const shareVolumes = dirs(
  ['usr-local-share-ca-certificates', '/usr/local/share/ca-certificates'],
  ['usr-share-ca-certificates', '/usr/share/ca-certificates'],
);
const controlPlane = (component: string) => ({ namespace: 'kube-system', labels: { component, tier: 'control-plane' }, hostNetwork: true });
// kubeadm asks for the RuntimeDefault seccomp profile, kept as written (the engines' default: it changes no spec hash).
const runtimeDefault = { securityContext: { seccompProfile: { type: 'RuntimeDefault' } } };

describe('kubeadm control-plane manifests', () => {
  it('etcd: hostNetwork, DirectoryOrCreate volumes, HTTP probes on 127.0.0.1, requests 100m/100Mi', () => {
    const m = read('etcd');
    const c = m.containers[0] as Container;
    expect({ ...m, containers: [{ ...c, entrypoint: c.entrypoint?.slice(0, 2) }] }).toEqual({
      id: 'etcd.kube-system',
      ...controlPlane('etcd'),
      ...runtimeDefault,
      annotations: { 'kubeadm.kubernetes.io/etcd.advertise-client-urls': 'https://10.0.0.10:2379' },
      volumes: dirs(['etcd-certs', '/etc/kubernetes/pki/etcd'], ['etcd-data', '/var/lib/etcd']),
      containers: [
        {
          name: 'etcd',
          image: 'registry.k8s.io/etcd:3.5.9-0',
          entrypoint: ['etcd', '--advertise-client-urls=https://10.0.0.10:2379'],
          ports: [],
          env: [],
          // 100m: floor(100 × 1024 / 1000). requests.memory 100Mi is kept, not applied (and not in the spec hash).
          cpu: 102,
          memoryRequest: 100 * 1024 * 1024,
          volumeMounts: [
            { name: 'etcd-data', mountPath: '/var/lib/etcd', readOnly: false },
            { name: 'etcd-certs', mountPath: '/etc/kubernetes/pki/etcd', readOnly: false },
          ],
          imagePullPolicy: 'IfNotPresent',
          livenessProbe: httpProbe('127.0.0.1', 2381, '/health?exclude=NOSPACE&serializable=true', 'HTTP', 8),
          startupProbe: httpProbe('127.0.0.1', 2381, '/health?serializable=false', 'HTTP', 24),
        },
      ],
    });
    expect(c.entrypoint).toHaveLength(20);
    expect(c.command).toBeUndefined();
    expect(c).not.toHaveProperty('memory');
  });

  it('kube-apiserver: HTTPS probes on the advertise address, a readiness probe, requests 250m', () => {
    const m = read('kube-apiserver');
    const c = m.containers[0] as Container;
    expect(m).toMatchObject({
      id: 'kube-apiserver.kube-system',
      ...controlPlane('kube-apiserver'),
      annotations: { 'kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint': '10.0.0.10:6443' },
    });
    expect(m.volumes).toEqual([...caVolumes, ...dirs(['k8s-certs', '/etc/kubernetes/pki']), ...shareVolumes]);
    expect(c.cpu).toBe(256);
    expect(c.entrypoint?.[0]).toBe('kube-apiserver');
    expect(c.entrypoint).toHaveLength(28);
    expect(c.volumeMounts).toEqual([...caMounts, { name: 'k8s-certs', mountPath: '/etc/kubernetes/pki', readOnly: true }, ...shareMounts]);
    expect(c.livenessProbe).toEqual(httpProbe('10.0.0.10', 6443, '/livez', 'HTTPS', 8));
    expect(c.readinessProbe).toEqual({
      httpGet: { path: '/readyz', port: 6443, host: '10.0.0.10', scheme: 'HTTPS' },
      initialDelaySeconds: 0,
      periodSeconds: 1,
      timeoutSeconds: 15,
      failureThreshold: 3,
    });
    expect(c.startupProbe).toEqual(httpProbe('10.0.0.10', 6443, '/livez', 'HTTPS', 24));
  });

  it('kube-controller-manager: a FileOrCreate kubeconfig, HTTPS probes on 127.0.0.1:10257, requests 200m', () => {
    const m = read('kube-controller-manager');
    const c = m.containers[0] as Container;
    expect(m).toMatchObject({ id: 'kube-controller-manager.kube-system', ...controlPlane('kube-controller-manager') });
    expect(m).not.toHaveProperty('annotations');
    expect(m.volumes).toEqual([
      ...caVolumes,
      ...dirs(['flexvolume-dir', '/usr/libexec/kubernetes/kubelet-plugins/volume/exec'], ['k8s-certs', '/etc/kubernetes/pki']),
      { name: 'kubeconfig', hostPath: { path: '/etc/kubernetes/controller-manager.conf', type: 'FileOrCreate' } },
      ...shareVolumes,
    ]);
    expect(c.cpu).toBe(204);
    expect(c.volumeMounts).toContainEqual({
      name: 'flexvolume-dir',
      mountPath: '/usr/libexec/kubernetes/kubelet-plugins/volume/exec',
      readOnly: false,
    });
    expect(c.livenessProbe).toEqual(httpProbe('127.0.0.1', 10257, '/healthz', 'HTTPS', 8));
    expect(c.startupProbe).toEqual(httpProbe('127.0.0.1', 10257, '/healthz', 'HTTPS', 24));
  });

  it('kube-scheduler: exactly this domain manifest', () => {
    const m = read('kube-scheduler');
    expect(m).toEqual({
      id: 'kube-scheduler.kube-system',
      ...controlPlane('kube-scheduler'),
      ...runtimeDefault,
      volumes: [{ name: 'kubeconfig', hostPath: { path: '/etc/kubernetes/scheduler.conf', type: 'FileOrCreate' } }],
      containers: [
        {
          name: 'kube-scheduler',
          image: 'registry.k8s.io/kube-scheduler:v1.28.2',
          entrypoint: [
            'kube-scheduler',
            '--authentication-kubeconfig=/etc/kubernetes/scheduler.conf',
            '--authorization-kubeconfig=/etc/kubernetes/scheduler.conf',
            '--bind-address=127.0.0.1',
            '--kubeconfig=/etc/kubernetes/scheduler.conf',
            '--leader-elect=true',
          ],
          ports: [],
          env: [],
          cpu: 102,
          volumeMounts: [{ name: 'kubeconfig', mountPath: '/etc/kubernetes/scheduler.conf', readOnly: true }],
          imagePullPolicy: 'IfNotPresent',
          livenessProbe: httpProbe('127.0.0.1', 10259, '/healthz', 'HTTPS', 8),
          startupProbe: httpProbe('127.0.0.1', 10259, '/healthz', 'HTTPS', 24),
        },
      ],
    });
  });

  it('reads all four from one multi-document file, as from the directory', () => {
    const parsed = parseManifests(FILES.map(fixture).join('---\n'), 'all.yaml', { allowHostMounts: true, allowHostNetwork: true });
    expect(parsed.rejected).toEqual([]);
    expect(parsed.manifests).toEqual(FILES.map((f) => read(f)));
  });

  it.each(FILES)('%s: refuses its hostPath volumes without --allow-host-mounts, each by its path', (name) => {
    const parsed = parseManifests(fixture(name), `${name}.yaml`, { allowHostNetwork: true });
    const errors = parsed.rejected[0]?.errors ?? [];
    expect(errors.length).toBeGreaterThan(0);
    errors.forEach((e, i) =>
      expect(e).toEqual({ path: `spec.volumes[${i}].hostPath`, message: expect.stringContaining('--allow-host-mounts') }),
    );
  });

  it.each(FILES)('%s: refuses its host network without --allow-host-network, by its path (issue 27 item 4)', (name) => {
    const parsed = parseManifests(fixture(name), `${name}.yaml`, { allowHostMounts: true });
    expect(parsed.manifests).toEqual([]);
    expect(parsed.rejected[0]?.errors).toEqual([{ path: 'spec.hostNetwork', message: expect.stringContaining('--allow-host-network') }]);
  });

  it.each(FILES)('%s: toV1Pod reads back to the same manifest, and the same spec hashes', (name) => {
    const m = read(name);
    const again = read(name, JSON.stringify(toV1Pod(m)));
    expect(again).toEqual(m);
    expect(specHashes(again)).toEqual(specHashes(m));
  });

  it('refuses a variant with unsupported fields field by field, the rest still read', () => {
    const text = fixture('kube-apiserver')
      .replace('  hostNetwork: true\n', '  hostNetwork: true\n  hostPID: true\n  initContainers:\n  - name: wait\n    image: busybox\n')
      .replace(
        '    name: kube-apiserver\n',
        '    name: kube-apiserver\n    securityContext:\n      privileged: true\n    volumeDevices: []\n',
      )
      .replace('        cpu: 250m\n', '        cpu: 250m\n        ephemeral-storage: 1Gi\n')
      .replace('  - hostPath:\n      path: /etc/ssl/certs\n      type: DirectoryOrCreate\n', '  - gitRepo:\n      repository: certs\n');
    const parsed = parseManifests(text, 'kube-apiserver.yaml', { allowHostMounts: true, allowHostNetwork: true });
    expect(parsed.manifests).toEqual([]);
    expect(parsed.rejected[0]?.id).toBe('kube-apiserver.kube-system');
    expect(parsed.rejected[0]?.errors.map((e) => `${e.path}: ${e.message.split(';')[0]}`).sort()).toEqual([
      'spec.containers[0].resources.requests.ephemeral-storage: not supported',
      'spec.containers[0].securityContext.privileged: true gives the container every device and capability of the host, which this agent refuses',
      'spec.containers[0].volumeDevices: not supported',
      "spec.hostPID: true puts the pod's containers in the host's process namespace, where they reach every process of the host, which this agent refuses",
      'spec.volumes[0].gitRepo: not supported',
    ]);
  });
});
