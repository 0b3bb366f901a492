import { describe, expect, it } from '@jest/globals';
import { specHash } from '../src/spec.js';
import { validateManifest } from '../src/validate.js';

const manifest = (probe: unknown, hook?: unknown) => ({
  version: 'v1beta1',
  id: 'etcd',
  containers: [
    { name: 'etcd', image: 'etcd:3.5', livenessProbe: probe, ...(hook === undefined ? {} : { lifecycle: { postStart: hook } }) },
  ],
});

function checked(probe: unknown, hook?: unknown) {
  const r = validateManifest(manifest(probe, hook));
  return r.ok ? { probe: r.manifest.containers[0]!.livenessProbe, errors: [] } : { probe: undefined, errors: r.errors };
}

describe('a gRPC probe (the kubelet’s grpc.health.v1 check)', () => {
  it('takes a port number and a service; an empty service is the server as a whole, written as none', () => {
    expect(checked({ grpc: { port: 2379 } }).probe).toEqual({
      grpc: { port: 2379 },
      initialDelaySeconds: 0,
      periodSeconds: 10,
      timeoutSeconds: 1,
      failureThreshold: 3,
    });
    expect(checked({ grpc: { port: 9090, service: 'liveness' }, periodSeconds: 5 }).probe).toMatchObject({
      grpc: { port: 9090, service: 'liveness' },
      periodSeconds: 5,
    });
    expect(checked({ grpc: { port: 2379, service: '' } }).probe).toEqual(checked({ grpc: { port: 2379 } }).probe);
  });

  it.each([
    [{ grpc: { port: 'grpc' } }, 'containers[0].livenessProbe.grpc.port', 'must be a port number (a gRPC probe names no port)'],
    [{ grpc: {} }, 'containers[0].livenessProbe.grpc.port', 'is required'],
    [{ grpc: { port: 70000 } }, 'containers[0].livenessProbe.grpc.port', '65535'],
    [{ grpc: { port: 1, host: 'x' } }, 'containers[0].livenessProbe.grpc.host', 'unknown field'],
    [{ grpc: { port: 1, service: 'a\nb' } }, 'containers[0].livenessProbe.grpc.service', 'control characters'],
    [
      { grpc: { port: 1 }, tcpSocket: { port: 1 } },
      'containers[0].livenessProbe',
      'must have exactly one of exec, httpGet, tcpSocket, grpc, got tcpSocket and grpc',
    ],
  ])('refuses %j at its path', (probe, path, message) => {
    expect(checked(probe).errors).toEqual([{ path, message: expect.stringContaining(message) }]);
  });

  it('is no hook: a postStart of grpc is an unknown field', () => {
    expect(checked({ grpc: { port: 1 } }, { grpc: { port: 1 } }).errors).toContainEqual({
      path: 'containers[0].lifecycle.postStart.grpc',
      message: expect.stringContaining('unknown field'),
    });
  });

  it('changes no container when it changes, as any probe (the spec hash leaves probes out)', () => {
    const hashOf = (probe: unknown) => {
      const r = validateManifest(manifest(probe));
      if (!r.ok) throw new Error(JSON.stringify(r.errors));
      return specHash(r.manifest, r.manifest.containers[0]!);
    };
    expect(hashOf({ grpc: { port: 2379 } })).toBe(hashOf({ grpc: { port: 2380, service: 'x' } }));
    expect(hashOf({ grpc: { port: 2379 } })).toBe(hashOf({ tcpSocket: { port: 2379 } }));
  });
});
