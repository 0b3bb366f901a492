import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { validateManifest, type ContainerManifest } from '@kubelet-ts/core';
import { parseManifests } from '../src/parse.js';
import { millisOfShares } from '../src/v1/quantity.js';
import { toV1Pod } from '../src/v1/to-v1.js';
import { toV1beta1 } from '../src/v1/to-v1beta1.js';

const label = fc.stringMatching(/^[a-z]([a-z0-9-]{0,10}[a-z0-9])?$/);
const word = fc.stringMatching(/^[A-Za-z0-9 ._:/=-]{0,12}$/);

/** Domain manifests both formats can say (no v1-only field); `v1Only` adds what only v1 can. */
function manifests(v1Only: boolean) {
  const port = fc.record(
    {
      containerPort: fc.integer({ min: 1, max: 65535 }),
      hostPort: fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined }),
      protocol: fc.constantFrom('TCP', 'UDP'),
      ...(v1Only ? { hostIP: fc.option(fc.constantFrom('127.0.0.1', '::1'), { nil: undefined }) } : {}),
    },
    { requiredKeys: ['containerPort', 'protocol'] },
  );
  const probe = fc.record({
    exec: fc.record({ command: fc.array(word, { minLength: 1, maxLength: 3 }) }),
    periodSeconds: fc.integer({ min: 1, max: 60 }),
    failureThreshold: fc.integer({ min: 1, max: 9 }),
  });
  const container = fc.record(
    {
      name: label,
      image: fc.constantFrom('busybox', 'nginx:1.25', 'registry.k8s.io/etcd:3.5.9-0'),
      command: fc.option(fc.array(word, { minLength: 1, maxLength: 4 }), { nil: undefined }),
      workingDir: fc.option(fc.constantFrom('/srv', '/w/x'), { nil: undefined }),
      ports: fc.uniqueArray(port, { maxLength: 3, selector: (p) => p.hostPort ?? -p.containerPort }),
      env: fc.uniqueArray(fc.record({ name: fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,6}$/), value: word }), {
        maxLength: 3,
        selector: (e) => e.name,
      }),
      memory: fc.option(fc.integer({ min: 1, max: 2 ** 40 }), { nil: undefined }),
      // Shares a CPU request can give (floor(milli × 1024 / 1000), at least 2): not every count can be said in millis.
      cpu: fc.option(
        fc.integer({ min: 1, max: 64_000 }).map((milli) => sharesOf(milli)),
        { nil: undefined },
      ),
      imagePullPolicy: fc.option(fc.constantFrom('Always', 'IfNotPresent', 'Never'), { nil: undefined }),
      livenessProbe: fc.option(probe, { nil: undefined }),
      ...(v1Only
        ? {
            entrypoint: fc.option(fc.array(word, { minLength: 1, maxLength: 2 }), { nil: undefined }),
            cpuLimitMillis: fc.option(fc.integer({ min: 1, max: 64_000 }), { nil: undefined }),
            readinessProbe: fc.option(probe, { nil: undefined }),
          }
        : {}),
    },
    { requiredKeys: ['name', 'image', 'ports', 'env'] },
  );
  return (
    fc
      .record(
        {
          id: fc
            .stringMatching(/^[a-z]([a-z0-9.-]{0,20}[a-z0-9])?$/)
            .filter((s) => !s.includes('..') && !s.includes('.-') && !s.includes('-.')),
          uuid: fc.option(fc.uuid(), { nil: undefined }),
          volumes: fc.uniqueArray(fc.record({ name: label }), { maxLength: 2, selector: (v) => v.name }),
          containers: fc.uniqueArray(container, { minLength: 1, maxLength: 3, selector: (c) => c.name }),
          restartPolicy: fc.option(fc.constantFrom('Always', 'OnFailure', 'Never'), { nil: undefined }),
          terminationGracePeriodSeconds: fc.option(fc.integer({ min: 0, max: 600 }), { nil: undefined }),
          ...(v1Only
            ? {
                hostNetwork: fc.option(fc.boolean(), { nil: undefined }),
                labels: fc.option(fc.dictionary(label, label, { maxKeys: 2 }), { nil: undefined }),
              }
            : {}),
        },
        { requiredKeys: ['id', 'volumes', 'containers'] },
      )
      // Host ports unique per protocol across the pod. A CPU limit comes with a request of at most the
      // limit: v1 cannot say a limit without shares (a limit alone requests the limit, as in Kubernetes).
      .map((m) => ({
        ...m,
        containers: m.containers.map((c, i) => ({
          ...c,
          // In a hostNetwork pod, a v1 hostPort must be its containerPort.
          ports: c.ports.map((p) =>
            p.hostPort === undefined
              ? p
              : { ...p, hostPort: m.hostNetwork === true ? p.containerPort : ((p.hostPort + i * 1000) % 65535) + 1 },
          ),
          ...(c.cpuLimitMillis === undefined
            ? {}
            : c.cpu === undefined
              ? { cpu: sharesOf(c.cpuLimitMillis) }
              : { cpuLimitMillis: Math.max(c.cpuLimitMillis, millisOfShares(c.cpu)) }),
        })),
      }))
      // v1 says a dotted name without a namespace as `<name>.default` in `default` (see `v1PodId`):
      // a manifest v1 can say has that id and namespace.
      .map((m) => (v1Only && m.id.includes('.') ? { ...m, id: `${m.id}.default`, namespace: 'default' } : m))
      .map((raw) => validateManifest(raw, { allowHostNetwork: true }))
      .filter((r) => r.ok)
      .map((r) => (r.ok ? r.manifest : (undefined as never)))
  );
}

const sharesOf = (milli: number) => Math.max(2, Math.floor((milli * 1024) / 1000));

const readBack = (converted: unknown): ContainerManifest | undefined => {
  const parsed = parseManifests(JSON.stringify(converted), 'x.json', { allowHostNetwork: true });
  expect(parsed.rejected).toEqual([]);
  return parsed.manifests[0];
};

describe('conversions round-trip, for any manifest a format can say', () => {
  it('parse(toV1Pod(m)) is m, whatever m says', () => {
    fc.assert(
      fc.property(manifests(true), (m) => expect(readBack(toV1Pod(m))).toEqual(m)),
      { numRuns: 150 },
    );
  });

  it('parse(toV1beta1(m)) is m for what v1beta1 can say, and going through both formats changes nothing', () => {
    fc.assert(
      fc.property(manifests(false), (m) => {
        expect(readBack(toV1beta1(m))).toEqual(m);
        // A dotted 2014 id becomes another pod's in v1 (`<id>.default`): only an undotted one comes back.
        if (!m.id.includes('.')) expect(readBack(toV1beta1(readBack(toV1Pod(m)) as ContainerManifest))).toEqual(m);
      }),
      { numRuns: 150 },
    );
  });
});
