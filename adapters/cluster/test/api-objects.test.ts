import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { MASTER_SERVICE, type ObjectRef, serviceAccountTokenName, silentLogger, SERVICE_LINKS } from '@kubelet-ts/core';
import { startControlPlane, type StartedControlPlane } from '@kubelet-ts/testkit';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { ApiObjects } from '../src/api-objects.js';

/**
 * What `ApiObjects` reads for the node's pods beyond ConfigMaps and Secrets, against a real API
 * server: tokens by TokenRequest, bound to their pod and asked for again only at 80 % of their
 * life (the clock moved by the test); a token that cannot be issued yet (its service account
 * missing) given once it can; the services' variables from one list.
 */
describe('tokens and service variables from the API', () => {
  let cluster: StartedControlPlane;
  let admin: KubeConfig;
  let core: CoreV1Api;
  const ns = 'objects-tokens';
  let uid = '';

  beforeAll(async () => {
    cluster = await startControlPlane();
    admin = new KubeConfig();
    admin.loadFromString(cluster.kubeconfig);
    core = admin.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: ns } } });
    await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'robot' } } });
    const pod = await core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name: 'holder' },
        spec: { serviceAccountName: 'robot', automountServiceAccountToken: false, containers: [{ name: 'main', image: 'busybox' }] },
      },
    });
    uid = pod.metadata!.uid!;
    await core.createNamespacedService({ namespace: ns, body: { metadata: { name: 'web' }, spec: { ports: [{ port: 80 }] } } });
  }, 180_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  /** ApiObjects on a moved clock, with a promise of its next `changed`. */
  const reader = (now: { ms: number }) => {
    let wake: () => void = () => undefined;
    const objects = new ApiObjects({
      kubeConfig: admin,
      logger: silentLogger,
      refreshMs: 60_000,
      now: () => now.ms,
      changed: () => wake(),
    });
    const changed = () => new Promise<void>((resolve) => (wake = resolve));
    return { objects, changed };
  };
  const tokenRef = (serviceAccount: string, seconds = 600): ObjectRef => ({
    kind: 'ServiceAccountToken',
    namespace: ns,
    name: serviceAccountTokenName(uid, { audience: 'api', expirationSeconds: seconds }),
    token: { serviceAccount, audience: 'api', expirationSeconds: seconds, pod: { name: 'holder', uid } },
  });
  const tokenOf = (objects: ApiObjects) => {
    const t = objects.current().find((o) => o.kind === 'ServiceAccountToken')?.data['token'];
    return t === undefined ? undefined : Buffer.from(t).toString('utf8');
  };

  it('asks for a token bound to the pod, and again only at 80 % of its life', async () => {
    const now = { ms: Date.now() };
    const { objects, changed } = reader(now);
    try {
      const first = changed();
      objects.use([tokenRef('robot')]);
      await first;
      const token = tokenOf(objects)!;
      expect(token.split('.')).toHaveLength(3);
      const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as {
        aud: string[];
        exp: number;
        iat: number;
        'kubernetes.io': { pod: { name: string; uid: string }; serviceaccount: { name: string } };
      };
      expect(claims.aud).toEqual(['api']);
      expect(claims.exp - claims.iat).toBe(600);
      expect(claims['kubernetes.io'].pod).toEqual({ name: 'holder', uid });
      expect(claims['kubernetes.io'].serviceaccount.name).toBe('robot');
      // At 79 % of its life, a pass keeps it.
      now.ms = claims.iat * 1000 + 474_000;
      const pass = (objects as unknown as { refresh(): Promise<void> }).refresh.bind(objects);
      await pass();
      expect(tokenOf(objects)).toBe(token);
      const kept = token;
      // Past 80 %: a new one.
      now.ms += 600_000;
      const renewed = changed();
      await pass();
      await renewed;
      expect(tokenOf(objects)).not.toBe(kept);
    } finally {
      objects.close();
    }
  }, 60_000);

  it('gives no token while the service account is missing, and one once it exists', async () => {
    const now = { ms: Date.now() };
    const { objects, changed } = reader(now);
    // The pod's account must exist when the pod is made (the ServiceAccount admission), so it goes after.
    await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'later' } } });
    const pod = await core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name: 'later-holder' },
        spec: { serviceAccountName: 'later', automountServiceAccountToken: false, containers: [{ name: 'main', image: 'busybox' }] },
      },
    });
    await core.deleteNamespacedServiceAccount({ namespace: ns, name: 'later' });
    const ref: ObjectRef = {
      ...tokenRef('later'),
      name: serviceAccountTokenName(pod.metadata!.uid!, { audience: 'api', expirationSeconds: 600 }),
      token: { serviceAccount: 'later', audience: 'api', expirationSeconds: 600, pod: { name: 'later-holder', uid: pod.metadata!.uid! } },
    };
    try {
      const first = changed();
      objects.use([ref]);
      await first;
      expect(tokenOf(objects)).toBeUndefined();
      await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'later' } } });
      const issued = changed();
      await (objects as unknown as { refresh(): Promise<void> }).refresh();
      await issued;
      expect(tokenOf(objects)).toMatch(/^ey/);
    } finally {
      objects.close();
    }
  }, 60_000);

  it('gives the services’ variables of the namespace and the API server’s, watched', async () => {
    const { objects, changed } = reader({ ms: Date.now() });
    try {
      const first = changed();
      objects.use([
        { kind: 'ServiceEnvironment', namespace: ns, name: SERVICE_LINKS },
        { kind: 'ServiceEnvironment', namespace: 'default', name: MASTER_SERVICE },
      ]);
      await first;
      const web = await core.readNamespacedService({ namespace: ns, name: 'web' });
      const text = (name: string) =>
        Object.fromEntries(
          Object.entries(objects.current().find((o) => o.name === name)?.data ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('utf8')]),
        );
      expect(text(SERVICE_LINKS)).toMatchObject({ WEB_SERVICE_HOST: web.spec!.clusterIP, WEB_SERVICE_PORT: '80' });
      // No pod-facing address given: the kubernetes Service's ClusterIP, as the kubelet gives it.
      const kubernetes = await core.readNamespacedService({ namespace: 'default', name: 'kubernetes' });
      expect(text(MASTER_SERVICE)).toMatchObject({ KUBERNETES_SERVICE_HOST: kubernetes.spec!.clusterIP, KUBERNETES_SERVICE_PORT: '443' });
      // Watched, not listed again: a Service made now reaches the variables without a pass of the timer (60 s here).
      const added = changed();
      await core.createNamespacedService({ namespace: ns, body: { metadata: { name: 'later-web' }, spec: { ports: [{ port: 8080 }] } } });
      await added;
      const later = await core.readNamespacedService({ namespace: ns, name: 'later-web' });
      expect(text(SERVICE_LINKS)).toMatchObject({ LATER_WEB_SERVICE_HOST: later.spec!.clusterIP, LATER_WEB_SERVICE_PORT: '8080' });
    } finally {
      objects.close();
    }
  }, 60_000);
});
