import { readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { isKubeletError, specHashes, type ContainerManifest } from '@kubelet-ts/core';
import { parseManifests } from '../src/parse.js';
import { toV1Pod } from '../src/v1/to-v1.js';
import { toV1beta1 } from '../src/v1/to-v1beta1.js';

const text = (path: string) => readFileSync(new URL(`./fixtures/${path}`, import.meta.url), 'utf8');

function readAll(input: string, allowHostMounts = true): readonly ContainerManifest[] {
  const parsed = parseManifests(input, 'x', { allowHostMounts, allowHostNetwork: true, idFor: (i) => `derived-${i ?? 0}` });
  expect(parsed.rejected).toEqual([]);
  expect(parsed.unreadable).toBeUndefined();
  return parsed.manifests;
}
const again = (converted: unknown) => readAll(JSON.stringify(converted))[0];

/** The 2014 fixtures that have no HOST mount (a HOST mount becomes a hostPath volume in v1). */
const FIXTURES_2014 = [
  'container-agent-example.yaml',
  'container-agent-example.json',
  'container-agent-registry.yaml',
  'container-agent-volumes.yaml',
  'late-2014.json',
];

describe('conversions round-trip', () => {
  it.each(FIXTURES_2014)('2014 %s → v1 Pod → the same manifest and spec hashes', (name) => {
    for (const m of readAll(text(`2014/${name}`))) {
      // A dotted 2014 id is a name in `default` to v1, kept on the host as `<id>.default` (see `v1PodId`).
      const expected = m.id.includes('.') ? { ...m, id: `${m.id}.default`, namespace: 'default' } : m;
      expect(again(toV1Pod(m))).toEqual(expected);
      expect(specHashes(again(toV1Pod(m)) as ContainerManifest)).toEqual(specHashes(m));
    }
  });

  it.each([...FIXTURES_2014, 'cadvisor.manifest'])('2014 %s → v1beta1 → the same manifest', (name) => {
    for (const m of readAll(text(`2014/${name}`))) expect(again(toV1beta1(m))).toEqual(m);
  });

  it('keeps an unpublished port unpublished in v1beta1 with hostPort 0, and a published one published', () => {
    const [m] = readAll(
      'apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers: [{name: a, image: nginx, ports: [{containerPort: 80}, {containerPort: 443, hostPort: 8443}]}]',
    );
    const beta = toV1beta1(m as ContainerManifest);
    expect(beta).toEqual({
      version: 'v1beta1',
      id: 'web',
      containers: [
        {
          name: 'a',
          image: 'nginx',
          ports: [
            { containerPort: 80, hostPort: 0, protocol: 'TCP' },
            { containerPort: 443, hostPort: 8443, protocol: 'TCP' },
          ],
        },
      ],
    });
    expect(again(beta)).toEqual(m);
    expect(again(toV1Pod(again(beta) as ContainerManifest))).toEqual(m);
  });

  it('v1 Pod → v1beta1 → v1 Pod: args as command, resources as memory and shares', () => {
    const [m] = readAll(
      [
        'apiVersion: v1',
        'kind: Pod',
        'metadata: {name: web, uid: 1-2-3}',
        'spec:',
        '  restartPolicy: OnFailure',
        '  terminationGracePeriodSeconds: 3',
        '  volumes: [{name: d, emptyDir: {}}]',
        '  containers:',
        '  - {name: a, image: nginx, args: [x], workingDir: /w, env: [{name: A, value: b}], resources: {limits: {memory: 64Mi}, requests: {cpu: 250m}},',
        '     volumeMounts: [{name: d, mountPath: /d, readOnly: true}], imagePullPolicy: Always, livenessProbe: {exec: {command: ["true"]}, periodSeconds: 3}}',
      ].join('\n'),
    );
    const beta = toV1beta1(m as ContainerManifest);
    expect(beta['containers']).toEqual([expect.objectContaining({ command: ['x'], memory: 67108864, cpu: 256 })]);
    expect(again(beta)).toEqual(m);
    expect(again(toV1Pod(again(beta) as ContainerManifest))).toEqual(m);
  });

  it('writes a hostPath volume without a type, mounted at its own path, as v1beta1 HOST mounts', () => {
    const [m] = readAll(
      'apiVersion: v1\nkind: Pod\nmetadata: {name: w}\nspec:\n  volumes: [{name: logs, hostPath: {path: /var/log}}]\n  containers: [{name: a, image: nginx, volumeMounts: [{name: logs, mountPath: /var/log}]}]',
    );
    const beta = toV1beta1(m as ContainerManifest);
    expect(beta).toMatchObject({
      volumes: [{ name: 'logs' }],
      containers: [{ volumeMounts: [{ name: 'logs', mountPath: '/var/log', mountType: 'HOST' }] }],
    });
    expect(again(beta)?.containers[0]?.volumeMounts[0]).toEqual({
      name: 'logs',
      mountPath: '/var/log',
      readOnly: false,
      mountType: 'HOST',
    });
  });

  it('refuses what v1beta1 cannot say, every field by its v1 path', () => {
    const [m] = readAll(text('kubeadm/kube-apiserver.yaml'));
    let error: unknown;
    try {
      toV1beta1(m as ContainerManifest);
    } catch (e) {
      error = e;
    }
    expect(isKubeletError(error, 'InvalidManifest')).toBe(true);
    const fields = isKubeletError(error) ? error.fieldErrors : [];
    expect(fields.every((f) => f.message === 'has no v1beta1 form')).toBe(true);
    expect(fields.map((f) => f.path)).toEqual([
      'metadata.namespace',
      'metadata.labels',
      'metadata.annotations',
      'spec.hostNetwork',
      ...[0, 1, 2, 3, 4].map((i) => `spec.volumes[${i}].hostPath.type`),
      'spec.containers[0].command',
      'spec.containers[0].readinessProbe',
      'spec.containers[0].startupProbe',
      'spec.containers[0].livenessProbe.httpGet.host',
      'spec.containers[0].livenessProbe.httpGet.scheme',
    ]);
  });

  it.each([
    ['resources: {limits: {cpu: "1"}}', 'spec.containers[0].resources.limits.cpu'],
    ['ports: [{containerPort: 80, hostPort: 80, hostIP: 127.0.0.1}]', 'spec.containers[0].ports[0].hostIP'],
    [
      'ports: [{containerPort: 80, hostPort: 80}], livenessProbe: {httpGet: {port: 80, httpHeaders: [{name: A, value: b}]}}',
      'spec.containers[0].livenessProbe.httpGet.httpHeaders',
    ],
    [
      'ports: [{containerPort: 80, hostPort: 80}], livenessProbe: {tcpSocket: {port: 80, host: 10.0.0.1}}',
      'spec.containers[0].livenessProbe.tcpSocket.host',
    ],
  ])('refuses a container with %s at %s', (container, path) => {
    const [m] = readAll(`apiVersion: v1\nkind: Pod\nmetadata: {name: w}\nspec:\n  containers: [{name: a, image: nginx, ${container}}]`);
    expect(() => toV1beta1(m as ContainerManifest)).toThrow(`${path}: has no v1beta1 form`);
  });

  it('refuses a hostPath volume mounted elsewhere than its own path', () => {
    const [m] = readAll(
      'apiVersion: v1\nkind: Pod\nmetadata: {name: w}\nspec:\n  volumes: [{name: l, hostPath: {path: /var/log}}]\n  containers: [{name: a, image: nginx, volumeMounts: [{name: l, mountPath: /logs}]}]',
    );
    expect(() => toV1beta1(m as ContainerManifest)).toThrow('spec.volumes[0].hostPath.path: has no v1beta1 form');
  });
});
