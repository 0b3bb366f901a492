import { describe, expect, it } from '@jest/globals';
import { podNameOf, validateManifest, type ContainerManifest } from '@kubelet-ts/core';
import { parseManifests } from '../src/parse.js';
import { toV1Pod } from '../src/v1/to-v1.js';
import { v1PodId } from '../src/v1/pod-id.js';

function valid(input: unknown, allowHostMounts = false): ContainerManifest {
  const r = validateManifest(input, { allowHostMounts });
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.manifest;
}

describe('toV1Pod of a 2014 manifest', () => {
  it('writes command as args, memory as limits, shares as a milli request, published ports with hostPort', () => {
    const m = valid({
      version: 'v1beta1',
      id: 'web',
      uuid: 'a-b-c',
      volumes: [{ name: 'data' }],
      containers: [
        {
          name: 'nginx',
          image: 'nginx:1.25',
          command: ['nginx', '-g', 'daemon off;'],
          memory: 134217728,
          cpu: 512,
          ports: [
            { containerPort: 80, hostPort: 8080 },
            { containerPort: 53, hostPort: 0, protocol: 'udp' },
          ],
          env: [{ name: 'A', value: '1' }],
          volumeMounts: [{ name: 'data', mountPath: '/data', readOnly: true }],
          livenessProbe: { httpGet: { path: '/healthz', port: 80 } },
        },
      ],
      restartPolicy: 'OnFailure',
    });
    expect(toV1Pod(m)).toEqual({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web', uid: 'a-b-c' },
      spec: {
        restartPolicy: 'OnFailure',
        volumes: [{ name: 'data', emptyDir: {} }],
        containers: [
          {
            name: 'nginx',
            image: 'nginx:1.25',
            args: ['nginx', '-g', 'daemon off;'],
            ports: [
              { containerPort: 80, hostPort: 8080, protocol: 'TCP' },
              { containerPort: 53, protocol: 'UDP' },
            ],
            env: [{ name: 'A', value: '1' }],
            resources: { limits: { memory: '128Mi' }, requests: { cpu: '500m' } },
            volumeMounts: [{ name: 'data', mountPath: '/data', readOnly: true }],
            livenessProbe: {
              httpGet: { path: '/healthz', port: 80 },
              initialDelaySeconds: 0,
              periodSeconds: 10,
              timeoutSeconds: 1,
              failureThreshold: 3,
              successThreshold: 1,
            },
          },
        ],
      },
    });
  });

  it('writes memory that is not a whole MiB in bytes, and rounds shares up to the request that gives them back', () => {
    const m = valid({ id: 'x', containers: [{ name: 'a', image: 'busybox', memory: 1000000, cpu: 22 }] });
    const c = toV1Pod(m).spec.containers[0];
    // floor(22m × 1024 / 1000) = 22, where 21m (the nearest) would give 21.
    expect(c?.resources).toEqual({ limits: { memory: '1000000' }, requests: { cpu: '22m' } });
  });

  it('turns a HOST mount into a hostPath volume of its own', () => {
    const m = valid(
      {
        id: 'x',
        volumes: [{ name: 'logs' }, { name: 'logs-host' }],
        containers: [{ name: 'a', image: 'busybox', volumeMounts: [{ name: 'logs', mountPath: '/var/log', mountType: 'HOST' }] }],
      },
      true,
    );
    const pod = toV1Pod(m);
    expect(pod.spec['volumes']).toEqual([
      { name: 'logs', emptyDir: {} },
      { name: 'logs-host', emptyDir: {} },
      { name: 'logs-host-2', hostPath: { path: '/var/log' } },
    ]);
    expect(pod.spec.containers[0]?.volumeMounts).toEqual([{ name: 'logs-host-2', mountPath: '/var/log' }]);
  });

  it('splits the namespace off the id again', () => {
    const m: ContainerManifest = {
      id: 'etcd.kube-system',
      namespace: 'kube-system',
      labels: { tier: 'control-plane' },
      volumes: [],
      containers: [],
    };
    expect(toV1Pod(m).metadata).toEqual({ name: 'etcd', namespace: 'kube-system', labels: { tier: 'control-plane' } });
    expect(toV1Pod({ ...m, id: 'etcd', namespace: 'default' }).metadata['name']).toBe('etcd');
  });
});

describe('v1PodId', () => {
  it('is the name, with .namespace unless the namespace is absent or default', () => {
    expect(v1PodId('etcd', 'kube-system')).toBe('etcd.kube-system');
    expect(v1PodId('etcd', 'default')).toBe('etcd');
    expect(v1PodId('etcd')).toBe('etcd');
    expect(v1PodId('Etcd')).toBeUndefined();
    expect(v1PodId('a'.repeat(200), 'b'.repeat(60))).toBeUndefined();
  });

  it('is one-to-one with (namespace, name): a dotted name in default is kept as <name>.default, so a.b/default is not a/b', () => {
    expect(v1PodId('a.b', 'default')).toBe('a.b.default');
    expect(v1PodId('a.b')).toBe('a.b.default');
    expect(v1PodId('a', 'b')).toBe('a.b');
    // Every (namespace, name) of a small alphabet: no two share an id, and the name reads back from it.
    const names = ['a', 'b', 'a.b', 'b.a', 'a.default', 'default', 'a.b.default'];
    const namespaces = ['default', 'b', 'a', 'kube-system'];
    const seen = new Map<string, string>();
    for (const ns of namespaces)
      for (const name of names) {
        const id = v1PodId(name, ns)!;
        expect(seen.get(id)).toBeUndefined();
        seen.set(id, `${ns}/${name}`);
        expect(podNameOf(id, ns)).toBe(name);
      }
  });
});

function readAll(input: string): readonly ContainerManifest[] {
  const parsed = parseManifests(input, 'pod.yaml');
  expect(parsed.rejected).toEqual([]);
  return parsed.manifests;
}

describe('a dotted name in default through the decoder', () => {
  it('reads a.b in default and a in b as two pods, each named back as written', () => {
    const [inDefault] = readAll('apiVersion: v1\nkind: Pod\nmetadata: {name: a.b}\nspec: {containers: [{name: c, image: busybox}]}');
    const [inB] = readAll('apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: b}\nspec: {containers: [{name: c, image: busybox}]}');
    expect(inDefault).toMatchObject({ id: 'a.b.default', namespace: 'default' });
    expect(inB).toMatchObject({ id: 'a.b', namespace: 'b' });
    expect(toV1Pod(inDefault!).metadata).toMatchObject({ name: 'a.b', namespace: 'default' });
    expect(toV1Pod(inB!).metadata).toMatchObject({ name: 'a', namespace: 'b' });
  });
});
