import { describe, expect, it } from '@jest/globals';
import { toV1Pod, validateV1Pod } from '../src/index.js';

/**
 * A Pod as an API server gives it, with the `kube-api-access-*` volume its ServiceAccount admission
 * adds, read by a source that asks that API server for tokens (`serviceAccountTokens`): the token
 * projection, the account, `enableServiceLinks`, and back to v1 as it came.
 */
const apiPod = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'caller', namespace: 'team', uid: '6a1e0e7c-0000-4000-8000-000000000001' },
  spec: {
    serviceAccountName: 'robot',
    serviceAccount: 'robot',
    automountServiceAccountToken: true,
    enableServiceLinks: false,
    containers: [
      {
        name: 'main',
        image: 'busybox',
        volumeMounts: [{ name: 'kube-api-access-x1', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', readOnly: true }],
      },
    ],
    volumes: [
      {
        name: 'kube-api-access-x1',
        projected: {
          defaultMode: 420,
          sources: [
            { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
            { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
            { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
          ],
        },
      },
    ],
  },
};

describe('a v1 Pod with a service-account token, from a source backed by an API server', () => {
  it('is read with its token projection, its account and its service links', () => {
    const r = validateV1Pod(apiPod, { serviceAccountTokens: true });
    if (!r.ok) throw new Error(JSON.stringify(r.errors));
    expect(r.manifest.serviceAccountName).toBe('robot');
    expect(r.manifest.enableServiceLinks).toBe(false);
    expect(r.manifest.volumes[0]?.files?.sources[0]).toEqual({ serviceAccountToken: { expirationSeconds: 3607, path: 'token' } });
    expect(r.manifest.volumes[0]?.files?.defaultMode).toBe(0o644);
  });

  it('is refused from any other source, at the token’s field', () => {
    const r = validateV1Pod(apiPod, {});
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.errors).toEqual([
      { path: 'spec.volumes[0].projected.sources[0].serviceAccountToken', message: expect.stringContaining('issued by an API server') },
    ]);
  });

  it('goes back to v1 as it came: the token a projection (even alone), the account and links kept', () => {
    const r = validateV1Pod(apiPod, { serviceAccountTokens: true });
    if (!r.ok) throw new Error(JSON.stringify(r.errors));
    const back = toV1Pod(r.manifest) as unknown as { spec: Record<string, unknown> & { volumes: Array<Record<string, unknown>> } };
    expect(back.spec['serviceAccountName']).toBe('robot');
    expect(back.spec['enableServiceLinks']).toBe(false);
    expect(back.spec.volumes[0]).toMatchObject({ name: 'kube-api-access-x1', projected: { defaultMode: 420 } });
    const alone = validateV1Pod(
      {
        ...apiPod,
        spec: {
          ...apiPod.spec,
          volumes: [{ name: 'kube-api-access-x1', projected: { sources: [{ serviceAccountToken: { audience: 'vault', path: 't' } }] } }],
        },
      },
      { serviceAccountTokens: true },
    );
    if (!alone.ok) throw new Error(JSON.stringify(alone.errors));
    const aloneBack = toV1Pod(alone.manifest) as unknown as { spec: { volumes: unknown[] } };
    expect(aloneBack.spec.volumes[0]).toEqual({
      name: 'kube-api-access-x1',
      projected: { sources: [{ serviceAccountToken: { audience: 'vault', expirationSeconds: 3600, path: 't' } }] },
    });
    // And what goes back reads again to the same manifest.
    const again = validateV1Pod(aloneBack, { serviceAccountTokens: true });
    expect(again.ok && again.manifest).toEqual(alone.manifest);
  });
});
