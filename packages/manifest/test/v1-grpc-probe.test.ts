import { describe, expect, it } from '@jest/globals';
import { isKubeletError } from '@kubelet-ts/core';
import { parseManifests } from '../src/parse.js';
import { toV1Pod } from '../src/v1/to-v1.js';
import { toV1beta1 } from '../src/v1/to-v1beta1.js';
import { accepted, app, pod, refused } from './v1-pod-fixture.js';

describe('v1 Pod: grpc probes', () => {
  // The Kubernetes documentation's example (configure-liveness-readiness-startup-probes: etcd-with-grpc).
  const etcd = pod(
    {
      name: 'etcd',
      image: 'registry.k8s.io/etcd:3.5.1-0',
      command: ['/usr/local/bin/etcd', '--data-dir', '/var/lib/etcd', '--listen-client-urls', 'http://0.0.0.0:2379'],
      ports: [{ containerPort: 2379 }],
      livenessProbe: { grpc: { port: 2379 }, initialDelaySeconds: 10 },
      readinessProbe: { grpc: { port: 2379, service: 'readiness' }, periodSeconds: 2 },
    },
    {},
    { name: 'etcd-with-grpc' },
  );

  it('reads them into the domain probe, the service left out when it is the whole server', () => {
    const m = accepted(etcd);
    expect(app(m)?.livenessProbe).toMatchObject({ grpc: { port: 2379 }, initialDelaySeconds: 10 });
    expect(app(m)?.livenessProbe?.grpc).toEqual({ port: 2379 });
    expect(app(m)?.readinessProbe).toMatchObject({ grpc: { port: 2379, service: 'readiness' }, periodSeconds: 2 });
  });

  it('writes them back as v1 and reads the same again; v1beta1 has no form for them', () => {
    const m = accepted(etcd);
    const v1 = toV1Pod(m);
    expect(v1.spec.containers[0]?.livenessProbe).toMatchObject({ grpc: { port: 2379 } });
    const again = parseManifests(JSON.stringify(v1), 'again.json', { allowHostNetwork: true }).manifests[0];
    expect(again).toEqual(m);
    try {
      toV1beta1(m);
      throw new Error('converted');
    } catch (error) {
      expect(isKubeletError(error) && error.fieldErrors.map((e) => e.path)).toEqual(
        expect.arrayContaining(['spec.containers[0].livenessProbe.grpc']),
      );
    }
  });

  it('refuses a named port and an unknown field by their paths', () => {
    expect(refused(pod({ livenessProbe: { grpc: { port: 'client' } } }))).toEqual([
      { path: 'spec.containers[0].livenessProbe.grpc.port', message: expect.stringContaining('must be a port number') },
    ]);
    expect(refused(pod({ livenessProbe: { grpc: { port: 1, host: 'a' } } }))).toEqual([
      { path: 'spec.containers[0].livenessProbe.grpc.host', message: 'not supported' },
    ]);
  });
});
