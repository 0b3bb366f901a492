import { describe, expect, it } from '@jest/globals';
import { resolveContainerEnv } from '../src/container-env.js';
import {
  KubeletError,
  MASTER_SERVICE,
  objectLookupOf,
  referencedObjects,
  SERVICE_LINKS,
  serviceAccountTokenName,
  serviceEnvironmentRefs,
  validateManifest,
  type ContainerManifest,
  type SourceObject,
} from '../src/index.js';
import { volumeFilesOf } from '../src/objects.js';

/**
 * What a pod of an API server reads beyond ConfigMaps and Secrets: its service-account tokens
 * (a projected `serviceAccountToken`, accepted only from a source that asks an API server) and
 * the services' variables (the kubelet's `getServiceEnvVarMap` and `makeEnvironmentVariables`).
 */

const bytes = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array | undefined) => new TextDecoder().decode(b);
const object = (kind: SourceObject['kind'], namespace: string, name: string, data: Record<string, string>): SourceObject => ({
  kind,
  namespace,
  name,
  data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, bytes(v)])),
});
const context = { node: 'node-a', podUid: 'uid-1' };

/** A pod as an API server gives it: a uid, a namespace, the kube-api-access volume. */
const apiPod = (extra: Record<string, unknown> = {}) => ({
  id: 'caller.team',
  uuid: '6a1e0e7c-0000-4000-8000-000000000001',
  namespace: 'team',
  volumes: [
    {
      name: 'kube-api-access-x1',
      files: {
        defaultMode: 0o644,
        sources: [
          { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
          { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
          { downwardAPI: { items: [{ path: 'namespace', fieldRef: { fieldPath: 'metadata.namespace' } }] } },
        ],
      },
    },
  ],
  containers: [
    {
      name: 'main',
      image: 'busybox',
      volumeMounts: [{ name: 'kube-api-access-x1', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount' }],
    },
  ],
  ...extra,
});
const fromApi = (raw: unknown): ContainerManifest => {
  const r = validateManifest(raw, { serviceAccountTokens: true });
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.manifest;
};

describe('service-account tokens of a pod', () => {
  it('are refused from a source without an API server, by field, saying what to do instead', () => {
    const r = validateManifest(apiPod());
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.errors).toEqual([
      {
        path: 'volumes[0].files.sources[0].serviceAccountToken',
        message: expect.stringContaining('issued by an API server, which this source has not'),
      },
    ]);
  });

  it('are read from one that asks an API server: lifetime 3600 by default, at least 600, a relative path', () => {
    const m = fromApi(apiPod({ serviceAccountName: 'robot' }));
    expect(m.serviceAccountName).toBe('robot');
    expect(m.volumes[0]!.files!.sources[0]).toEqual({ serviceAccountToken: { expirationSeconds: 3607, path: 'token' } });
    const defaulted = fromApi(
      apiPod({
        volumes: [{ name: 'v', files: { sources: [{ serviceAccountToken: { path: 't', audience: 'vault' } }] } }],
        containers: [{ name: 'main', image: 'b' }],
      }),
    );
    expect(defaulted.volumes[0]!.files!.sources[0]).toEqual({
      serviceAccountToken: { audience: 'vault', expirationSeconds: 3600, path: 't' },
    });
    const bad = validateManifest(
      apiPod({
        volumes: [{ name: 'v', files: { sources: [{ serviceAccountToken: { path: '../t', expirationSeconds: 599, extra: 1 } }] } }],
        containers: [{ name: 'main', image: 'b' }],
      }),
      { serviceAccountTokens: true },
    );
    expect(bad.ok).toBe(false);
    if (bad.ok) return;
    const paths = bad.errors.map((e) => e.path).sort();
    expect(paths).toEqual([
      'volumes[0].files.sources[0].serviceAccountToken.expirationSeconds',
      'volumes[0].files.sources[0].serviceAccountToken.extra',
      'volumes[0].files.sources[0].serviceAccountToken.path',
    ]);
  });

  it('are among what the source must fetch: a TokenRequest of the pod’s account, bound to the pod by name and uid', () => {
    const m = fromApi(apiPod({ serviceAccountName: 'robot' }));
    const refs = referencedObjects(m);
    expect(refs).toContainEqual({
      kind: 'ServiceAccountToken',
      namespace: 'team',
      name: serviceAccountTokenName(m.uuid!, { expirationSeconds: 3607 }),
      token: { serviceAccount: 'robot', expirationSeconds: 3607, pod: { name: 'caller', uid: m.uuid } },
    });
    expect(refs).toContainEqual({ kind: 'ConfigMap', namespace: 'team', name: 'kube-root-ca.crt' });
    // Without serviceAccountName, the pod's account is `default` (the API server writes it anyway).
    const plain = fromApi(apiPod());
    expect(referencedObjects(plain).find((r) => r.kind === 'ServiceAccountToken')?.token?.serviceAccount).toBe('default');
  });

  it('are written at their path with the volume’s mode; a pod waits, saying so, until its token is issued', () => {
    const m = fromApi(apiPod());
    const volume = m.volumes[0]!;
    const issued = objectLookupOf([
      object('ServiceAccountToken', 'team', serviceAccountTokenName(m.uuid!, { expirationSeconds: 3607 }), { token: 'eyJhbGciOi.token' }),
      object('ConfigMap', 'team', 'kube-root-ca.crt', { 'ca.crt': '-----BEGIN CERTIFICATE-----' }),
    ]);
    const files = volumeFilesOf(m, volume, issued, context);
    expect(files.map((f) => [f.path, text(f.data), f.mode.toString(8)])).toEqual([
      ['token', 'eyJhbGciOi.token', '644'],
      ['ca.crt', '-----BEGIN CERTIFICATE-----', '644'],
      ['namespace', 'team', '644'],
    ]);
    let thrown: unknown;
    try {
      volumeFilesOf(m, volume, objectLookupOf([]), context);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(KubeletError);
    expect((thrown as KubeletError).code).toBe('NotFound');
    expect((thrown as Error).message).toContain('no token of service account "default" has been issued for the pod yet');
  });
});

describe('the services’ variables of a container', () => {
  const services = objectLookupOf([
    object('ServiceEnvironment', 'team', SERVICE_LINKS, { WEB_SERVICE_HOST: '10.96.0.7', SHARED: 'from-links' }),
    object('ServiceEnvironment', 'default', MASTER_SERVICE, {
      KUBERNETES_SERVICE_HOST: '192.0.2.2',
      KUBERNETES_SERVICE_PORT: '6443',
      SHARED: 'from-master',
    }),
  ]);
  const container = (env: unknown[]) =>
    fromApi(apiPod({ volumes: [], containers: [{ name: 'main', image: 'b', env, command: ['echo', '$(KUBERNETES_SERVICE_HOST)'] }] }));

  it('are its namespace’s services and the API server’s, the API server’s winning; the container’s own win over both', () => {
    const m = container([{ name: 'SHARED', value: 'mine' }]);
    const resolved = resolveContainerEnv(m, m.containers[0]!, { ...context, objects: services });
    expect(resolved.env).toEqual({
      SHARED: 'mine',
      WEB_SERVICE_HOST: '10.96.0.7',
      KUBERNETES_SERVICE_HOST: '192.0.2.2',
      KUBERNETES_SERVICE_PORT: '6443',
    });
    expect(resolveContainerEnv(m, { ...m.containers[0]!, env: [] }, { ...context, objects: services }).env['SHARED']).toBe('from-master');
  });

  it('are read by $(VAR) in env and command, as the kubelet expands them', () => {
    const m = container([{ name: 'API', value: 'https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)' }]);
    const resolved = resolveContainerEnv(m, m.containers[0]!, { ...context, objects: services });
    expect(resolved.env['API']).toBe('https://192.0.2.2:6443');
    expect(resolved.command).toEqual(['echo', '192.0.2.2']);
  });

  it('with enableServiceLinks false are the API server’s only; a source that gives none gives none', () => {
    const m = fromApi(apiPod({ volumes: [], enableServiceLinks: false, containers: [{ name: 'main', image: 'b' }] }));
    expect(m.enableServiceLinks).toBe(false);
    expect(serviceEnvironmentRefs(m)).toEqual([{ kind: 'ServiceEnvironment', namespace: 'default', name: MASTER_SERVICE }]);
    expect(resolveContainerEnv(m, m.containers[0]!, { ...context, objects: services }).env).toEqual({
      KUBERNETES_SERVICE_HOST: '192.0.2.2',
      KUBERNETES_SERVICE_PORT: '6443',
      SHARED: 'from-master',
    });
    expect(resolveContainerEnv(m, m.containers[0]!, { ...context, objects: objectLookupOf([]) }).env).toEqual({});
    expect(serviceEnvironmentRefs(fromApi(apiPod({ volumes: [], containers: [{ name: 'main', image: 'b' }] })))).toHaveLength(2);
  });

  it('reads spec.serviceAccountName as the pod’s', () => {
    const m = fromApi(
      apiPod({
        volumes: [],
        serviceAccountName: 'robot',
        containers: [
          { name: 'main', image: 'b', env: [{ name: 'SA', valueFrom: { fieldRef: { fieldPath: 'spec.serviceAccountName' } } }] },
        ],
      }),
    );
    expect(resolveContainerEnv(m, m.containers[0]!, context).env['SA']).toBe('robot');
  });
});
