import { describe, expect, it } from '@jest/globals';
import { checkedManifest } from '@kubelet-ts/conformance';
import { Labels, buildContainerSpec, type ContainerManifest, type ContainerSummary, type SandboxSummary } from '@kubelet-ts/core';
import { probeTargets } from '../src/probe-targets.js';
import { manifest } from './helpers.js';

const NODE = 'node-1';

/** The manifest's containers as running on this node, ids `<container>-id`. */
function runningOf(m: ContainerManifest): ContainerSummary[] {
  return m.containers.map((c) => {
    const spec = buildContainerSpec(m, c, { node: NODE, source: 'file' });
    return {
      id: `${c.name}-id`,
      name: spec.name,
      image: spec.image,
      labels: spec.labels,
      state: 'running',
      createdAt: 1_000,
      startedAt: 2_000,
    };
  });
}

const timing = { initialDelaySeconds: 1, periodSeconds: 10, timeoutSeconds: 1, failureThreshold: 3 };

describe('probeTargets', () => {
  it('gives each probe of a running container its kind, and where network probes dial', () => {
    const m = manifest('web', [
      {
        name: 'app',
        image: 'app:1',
        ports: [
          { name: 'http', containerPort: 8080, hostPort: 18080 },
          { containerPort: 9000, hostPort: 19000 },
        ],
        startupProbe: { ...timing, tcpSocket: { port: 'http' } },
        livenessProbe: { ...timing, httpGet: { path: '/live', port: 9000 } },
        readinessProbe: { ...timing, httpGet: { path: '/ready', port: 8080, host: '10.1.2.3', scheme: 'HTTPS' } },
      },
      { name: 'plain', image: 'app:1' },
    ]);
    const targets = probeTargets([{ manifest: m, source: 'file' }], runningOf(m), NODE);
    expect(targets.map(({ kind, id, startedAt, host, hostPort }) => ({ kind, id, startedAt, host, hostPort }))).toEqual([
      { kind: 'startup', id: 'app-id', startedAt: 2_000, host: undefined, hostPort: 18080 }, // the published port, by name
      { kind: 'liveness', id: 'app-id', startedAt: 2_000, host: undefined, hostPort: 19000 },
      { kind: 'readiness', id: 'app-id', startedAt: 2_000, host: '10.1.2.3', hostPort: 8080 }, // `host` set: that address, the port itself
    ]);
  });

  it("dials a port that is not published on the pod's IP, as the kubelet does; the published one as before", () => {
    const m = checkedManifest({
      id: 'web',
      containers: [
        {
          name: 'app',
          image: 'app:1',
          ports: [
            { name: 'http', containerPort: 8080 },
            { containerPort: 9000, hostPort: 19000 },
          ],
          readinessProbe: { ...timing, httpGet: { path: '/ready', port: 'http' } },
          livenessProbe: { ...timing, tcpSocket: { port: 9000 } },
          startupProbe: { ...timing, tcpSocket: { port: 7000 } },
        },
      ],
    });
    const sandbox = (ip: string | undefined, node = NODE) => ({
      id: 'sandbox-id',
      name: 'POD--web--00000000',
      labels: { [Labels.sandbox]: 'web', [Labels.node]: node },
      state: 'ready' as const,
      createdAt: 1_000,
      ...(ip === undefined ? {} : { ip }),
    });
    const where = (sandboxes: readonly SandboxSummary[]) =>
      probeTargets([{ manifest: m, source: 'file' }], runningOf(m), NODE, sandboxes).map(({ kind, host, hostPort }) => ({
        kind,
        host,
        hostPort,
      }));
    expect(where([sandbox('10.88.0.7')])).toEqual([
      { kind: 'startup', host: '10.88.0.7', hostPort: 7000 }, // a port the container does not even declare
      { kind: 'liveness', host: undefined, hostPort: 19000 },
      { kind: 'readiness', host: '10.88.0.7', hostPort: 8080 },
    ]);
    // Without the pod's address (another node's sandbox, or none listed), an unpublished port has nowhere to be dialled.
    expect(where([sandbox('10.88.0.7', 'other-node')]).map((t) => t.host)).toEqual([undefined, undefined, undefined]);
  });

  it("dials a grpc probe's port on the pod's IP, or its published host port", () => {
    const m = checkedManifest({
      id: 'etcd',
      containers: [
        {
          name: 'etcd',
          image: 'etcd:3.4',
          ports: [{ containerPort: 2379, hostPort: 12379 }],
          livenessProbe: { ...timing, grpc: { port: 2379 } },
          readinessProbe: { ...timing, grpc: { port: 2380, service: 'readiness' } },
        },
      ],
    });
    const sandbox = {
      id: 's',
      name: 'POD--etcd--0',
      labels: { [Labels.sandbox]: 'etcd', [Labels.node]: NODE },
      state: 'ready' as const,
      createdAt: 1,
      ip: '10.88.0.9',
    };
    const targets = probeTargets([{ manifest: m, source: 'file' }], runningOf(m), NODE, [sandbox]);
    expect(targets.map(({ kind, host, hostPort, probe }) => ({ kind, host, hostPort, grpc: probe.grpc }))).toEqual([
      { kind: 'liveness', host: undefined, hostPort: 12379, grpc: { port: 2379 } },
      { kind: 'readiness', host: '10.88.0.9', hostPort: 2380, grpc: { port: 2380, service: 'readiness' } },
    ]);
  });

  it('dials 127.0.0.1 and the container port itself in a hostNetwork pod, published or not', () => {
    const m = checkedManifest(
      {
        version: 'v1beta1',
        id: 'node-exporter',
        hostNetwork: true,
        containers: [
          {
            name: 'exporter',
            image: 'exporter:1',
            livenessProbe: { ...timing, httpGet: { path: '/metrics', port: 9100 } },
            readinessProbe: { ...timing, tcpSocket: { port: 9100, host: '192.0.2.1' } },
          },
        ],
      },
      { allowHostNetwork: true },
    );
    const targets = probeTargets([{ manifest: m, source: 'file' }], runningOf(m), NODE);
    expect(targets.map(({ kind, host, hostPort }) => ({ kind, host, hostPort }))).toEqual([
      { kind: 'liveness', host: '127.0.0.1', hostPort: 9100 },
      { kind: 'readiness', host: '192.0.2.1', hostPort: 9100 },
    ]);
  });

  it('leaves out exited containers, those of an older spec, and other nodes', () => {
    const m = manifest('web', [{ name: 'app', image: 'app:1', readinessProbe: { ...timing, exec: { command: ['true'] } } }]);
    const [c] = runningOf(m);
    const older = manifest('web', [{ name: 'app', image: 'app:0', readinessProbe: { ...timing, exec: { command: ['true'] } } }]);
    const actual: ContainerSummary[] = [
      { ...c!, id: 'exited', state: 'exited' },
      { ...runningOf(older)[0]!, id: 'older' },
      { ...c!, id: 'elsewhere', labels: { ...c!.labels, 'io.kubelet-ts.node': 'node-2' } },
      c!,
    ];
    expect(probeTargets([{ manifest: m, source: 'file' }], actual, NODE).map((t) => t.id)).toEqual(['app-id']);
  });
});
