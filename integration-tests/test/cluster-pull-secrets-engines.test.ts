import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RegistryServer, removePulledImage, startControlPlane, TEST_IMAGES, type StartedControlPlane } from '@kubelet-ts/testkit';
import { parse as parseYaml } from 'yaml';
import { AgentProcess } from './agent-process.js';
import { AGENT_ENGINES, type AgentEngine } from './agent-engines.js';
import { freePort, nodeFlags, until } from './cluster-helpers.js';
import { kubectlAs, kubectlOk as kubectl } from './kubectl.js';

/**
 * Image pull secrets of API pods (issue 45): a `kubernetes.io/dockerconfigjson` Secret made with
 * `kubectl create secret docker-registry`, named by the corpus's private-registry Pod or by the
 * namespace's default ServiceAccount (which the API server's admission copies into each pod), read
 * with the node's own credentials and given to the engine's pull from the testkit's authenticated
 * registry; without one the pod waits in ErrImagePull with the registry's refusal. On Docker and on
 * containerd, against the real kube-apiserver, read with kubectl.
 */

const REFUSED = /unauthori[sz]ed|authentication required|no basic auth credentials/i;

let cluster: StartedControlPlane;
let registry: RegistryServer;
let dir: string;
const k = (...args: string[]) => kubectl(cluster.kubeconfigPath, ...args);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-e2e-cluster-pull-'));
  [cluster, registry] = await Promise.all([startControlPlane(), RegistryServer.start()]);
}, 240_000);

afterAll(async () => {
  await cluster?.stop();
  await registry?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe.each(AGENT_ENGINES)('image pull secrets of API pods, on $name', (engine: AgentEngine) => {
  const short = engine.name.split(' ')[0]!.toLowerCase();
  const kind = short === 'docker' ? ('docker' as const) : ('containerd' as const);
  const node = `pull-${short}-${process.pid}`;
  const ns = `pull-${short}`;
  let agent: AgentProcess | undefined;
  // One image per pod: no pull lets another pod run an image it could not pull itself.
  const images: Record<'corpus' | 'account' | 'none', string> = { corpus: '', account: '', none: '' };
  const kn = (...args: string[]) => k('-n', ns, ...args);
  const apply = async (name: string, object: unknown) => {
    const file = join(dir, `${ns}-${name}.json`);
    await writeFile(file, JSON.stringify(object));
    await k('apply', '-f', file);
  };
  const stateOf = async (name: string) =>
    (
      JSON.parse(await kn('get', 'pod', name, '-o', 'json')) as {
        status: { containerStatuses?: Array<{ state: { running?: unknown; waiting?: { reason?: string; message?: string } } }> };
      }
    ).status.containerStatuses?.[0]?.state;

  beforeAll(async () => {
    const prepared = await engine.prepare();
    for (const which of ['corpus', 'account', 'none'] as const)
      images[which] = await registry.push(TEST_IMAGES.busybox, `cluster-pull/${short}-${which}:1`);
    agent = new AgentProcess([
      ...prepared.flags,
      ...nodeFlags(await cluster.nodeKubeconfig(node), node, await freePort()),
      // kubectl logs reaches the node as the API server's client certificate: trusted.
      '--client-ca-file',
      cluster.ca.certFile,
      // A failed pull says ErrImagePull until the next pass meets its back-off (ImagePullBackOff):
      // passes 10 s apart, as the kubelet's pod worker retries a failed sync (workerBackOffPeriod).
      '--sync-frequency',
      '10s',
    ]);
    await agent.serverUrl();
    await until('the node Ready', async () =>
      (await k('get', 'node', node, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')) === 'True' ? true : undefined,
    );
    await k('create', 'namespace', ns);
    await until('the namespace’s default service account', async () =>
      (await kubectlAs(cluster.kubeconfigPath, '-n', ns, 'get', 'serviceaccount', 'default')).code === 0 ? true : undefined,
    );
    await kn(
      'create',
      'secret',
      'docker-registry',
      'regcred',
      `--docker-server=${registry.host}`,
      `--docker-username=${registry.username}`,
      `--docker-password=${registry.password}`,
    );
    // The corpus's Pod as written (its one container, its imagePullSecrets: regcred), on this node, its image in the registry.
    const corpus = parseYaml(await readFile(new URL('./fixtures/corpus/049-website-private-reg-pod.yaml', import.meta.url), 'utf8')) as {
      metadata: Record<string, unknown>;
      spec: { containers: Array<Record<string, unknown>> } & Record<string, unknown>;
    };
    const sleeping = (image: string) => ({ image, command: ['sh', '-c', 'echo pulled-and-running; exec sleep 3600'] });
    await apply('private-reg', {
      ...corpus,
      metadata: { ...corpus.metadata, namespace: ns },
      spec: {
        ...corpus.spec,
        nodeName: node,
        automountServiceAccountToken: false,
        terminationGracePeriodSeconds: 1,
        containers: corpus.spec.containers.map((c) => ({ ...c, ...sleeping(images.corpus) })),
      },
    });
    const plain = (name: string, image: string) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: ns },
      spec: {
        nodeName: node,
        automountServiceAccountToken: false,
        terminationGracePeriodSeconds: 1,
        containers: [{ name: 'main', ...sleeping(image) }],
      },
    });
    await apply('none', plain('none', images.none));
  }, 180_000);

  afterAll(async () => {
    await agent?.stop();
    await k('delete', 'namespace', ns, '--ignore-not-found', '--wait=false').catch(() => undefined);
    await k('delete', 'node', node, '--ignore-not-found').catch(() => undefined);
    await engine.cleanUp(node);
    for (const image of Object.values(images)) if (image !== '') await removePulledImage(kind, image);
  });

  it('runs the corpus’s private-registry pod with its pull secret from the API', async () => {
    await until('private-reg running', async () => ((await stateOf('private-reg'))?.running === undefined ? undefined : true), 90_000);
    expect(await kn('logs', 'private-reg')).toBe('pulled-and-running\n');
  }, 120_000);

  it('shows ErrImagePull with the registry’s refusal for a pod without one; never a password in a status or the agent’s log', async () => {
    const seen = new Set<string>();
    const waiting = await until(
      'none waiting in ErrImagePull',
      async () => {
        const w = (await stateOf('none'))?.waiting;
        if (w?.reason !== undefined) seen.add(`${w.reason}: ${w.message}`);
        return w?.reason === 'ErrImagePull' ? w : undefined;
      },
      60_000,
    ).catch((error: Error) => {
      throw new Error(`${error.message}; seen ${[...seen].join(' | ')}`);
    });
    expect(waiting.message).toMatch(REFUSED);
    const pods = await kn('get', 'pods', '-o', 'json');
    const said = agent!.lines.map((l) => JSON.stringify(l)).join('\n');
    for (const text of [registry.password, Buffer.from(`${registry.username}:${registry.password}`).toString('base64')]) {
      expect(pods.includes(text)).toBe(false);
      expect(said.includes(text)).toBe(false);
    }
  }, 90_000);

  it('pulls with the namespace’s default ServiceAccount’s pull secrets, which the API server copies into the pod', async () => {
    await kn('patch', 'serviceaccount', 'default', '-p', JSON.stringify({ imagePullSecrets: [{ name: 'regcred' }] }));
    await apply('account', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'account', namespace: ns },
      spec: {
        nodeName: node,
        automountServiceAccountToken: false,
        terminationGracePeriodSeconds: 1,
        containers: [{ name: 'main', image: images.account, command: ['sleep', '3600'] }],
      },
    });
    expect(await kn('get', 'pod', 'account', '-o', 'jsonpath={.spec.imagePullSecrets[*].name}')).toBe('regcred');
    await until('account running', async () => ((await stateOf('account'))?.running === undefined ? undefined : true), 90_000);
  }, 120_000);
});
