import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Labels } from '@kubelet-ts/core';
import { assertPodman, podmanHost, RegistryServer, removePodmanLabelled, removePulledImage, TEST_IMAGES } from '@kubelet-ts/testkit';
import { AGENT_ENGINES, type AgentEngine } from './agent-engines.js';
import { AgentProcess } from './agent-process.js';

/** Podman through the Docker adapter, as cli-podman runs it; the other suites on AGENT_ENGINES do not run there. */
const PODMAN: AgentEngine = {
  name: 'Podman',
  async prepare() {
    await assertPodman();
    return {
      flags: ['--runtime', 'docker', '--docker-host', podmanHost(), '--pod-infra-image', TEST_IMAGES.pause],
      busybox: TEST_IMAGES.busybox,
      etcd: TEST_IMAGES.etcd,
    };
  },
  async cleanUp(node) {
    // Podman refuses to remove a pod's holder while a container that joined it is there: those go first.
    await removePodmanLabelled(`${Labels.node}=${node}`);
    await removePodmanLabelled(`${Labels.node}=${node}`);
  },
  labelled: () => Promise.reject(new Error('not used here')),
};
const ENGINES = [AGENT_ENGINES[0]!, PODMAN, AGENT_ENGINES[1]!].map((engine) => ({
  engine,
  kind: engine.name === 'Docker' ? ('docker' as const) : engine.name === 'Podman' ? ('podman' as const) : ('containerd' as const),
}));
const REFUSED = /unauthori[sz]ed|authentication required|no basic auth credentials/i;

/**
 * Image pull secrets without an API server (issue 45): a pod of a file source whose image is in a
 * registry that wants a password (the testkit's RegistryServer) runs on each engine with the Secret
 * its imagePullSecrets names beside it, and waits in ErrImagePull, with the registry's refusal,
 * without one and with a wrong one. Each pod pulls an image of its own, so that no pull's image
 * lets another pod run; what the pulls added to the engine is removed, and the registry.
 */
describe.each(ENGINES)('image pull secrets on $engine.name, through the agent', ({ engine, kind }) => {
  const node = `e2e-pull-${kind}-${process.pid}`;
  let registry: RegistryServer;
  let dir: string;
  let volumes: string;
  let agent: AgentProcess | undefined;
  let url: string;
  const images: Record<'good' | 'none' | 'wrong', string> = { good: '', none: '', wrong: '' };
  type Waiting = { reason?: string; message?: string };
  type Listed = {
    items: Array<{ metadata: { name: string }; status: { containerStatuses?: Array<{ state: Record<string, Waiting> }> } }>;
  };
  const stateOf = async (name: string) =>
    ((await (await fetch(`${url}/pods`)).json()) as Listed).items.find((p) => p.metadata.name === name)?.status.containerStatuses?.[0]
      ?.state;
  /** What `name`'s container waits on, as /pods says it, sampled until it is `reason` (ErrImagePull lasts until the next pass). */
  const waitingUntil = async (name: string, reason: string, ms = 60_000): Promise<{ seen: string[]; waiting: Waiting }> => {
    const seen = new Set<string>();
    const deadline = Date.now() + ms;
    for (;;) {
      const waiting = (await stateOf(name))?.['waiting'];
      if (waiting?.reason !== undefined) seen.add(waiting.reason);
      if (waiting?.reason === reason) return { seen: [...seen], waiting };
      if (Date.now() > deadline) throw new Error(`${name} never waited in ${reason}; seen ${[...seen].join(', ')}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const pod = (name: string, image: string, pullSecrets?: string[]) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: {
      ...(pullSecrets === undefined ? {} : { imagePullSecrets: pullSecrets.map((s) => ({ name: s })) }),
      containers: [{ name: 'main', image, command: ['sh', '-c', 'echo pulled-and-running; exec sleep 3600'] }],
    },
  });
  const secret = (name: string, config: string) => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name },
    type: 'kubernetes.io/dockerconfigjson',
    data: { '.dockerconfigjson': Buffer.from(config).toString('base64') },
  });

  beforeAll(async () => {
    const prepared = await engine.prepare();
    registry = await RegistryServer.start();
    for (const which of ['good', 'none', 'wrong'] as const) images[which] = await registry.push(TEST_IMAGES.busybox, `pull/${which}:1`);
    dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-e2e-pull-'));
    volumes = await mkdtemp(join(tmpdir(), 'kubelet-ts-e2e-pull-volumes-'));
    const documents = [
      secret('regcred', registry.dockerConfigJson()),
      pod('good', images.good, ['regcred']),
      pod('none', images.none),
      // A secret the source does not give is passed over, as the kubelet passes over it; the wrong one is tried.
      secret('wrongcred', registry.dockerConfigJson(registry.username, 'not-the-password')),
      pod('wrong', images.wrong, ['absent', 'wrongcred']),
    ];
    await writeFile(join(dir, 'pods.yaml'), documents.map((d) => JSON.stringify(d)).join('\n---\n'));
    agent = new AgentProcess([
      ...prepared.flags,
      '--config',
      dir,
      '--hostname-override',
      node,
      '--host-ip',
      '127.0.0.1',
      '--volumes-root',
      volumes,
      // Passes 5 s apart: a failed pull says ErrImagePull until the next pass meets its back-off.
      '--sync-frequency',
      '5s',
      '--file-check-frequency',
      '1s',
    ]);
    url = await agent.serverUrl();
  }, 120_000);

  afterAll(async () => {
    await agent?.stop();
    await engine.cleanUp(node);
    for (const image of Object.values(images)) if (image !== '') await removePulledImage(kind, image);
    await registry?.stop();
    await rm(dir, { recursive: true, force: true });
    await rm(volumes, { recursive: true, force: true });
  });

  it('runs the pod whose pull secret is beside it, pulled from the registry with it', async () => {
    await agent!.until(() => agent!.events('ContainerStarted', 'good').length > 0, 'the good pod to start', 60_000);
    // /pods reads the agent's cache, which the next relist brings up to date.
    const deadline = Date.now() + 20_000;
    while ((await stateOf('good'))?.['running'] === undefined && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    expect(await stateOf('good')).toEqual({ running: expect.anything() });
    expect(agent!.events('ImagePulled', 'good').map((e) => e.msg)).toEqual([`pulled ${images.good}`]);
  });

  it('shows ErrImagePull with the registry’s refusal for a pod without a pull secret, then ImagePullBackOff', async () => {
    const { seen, waiting } = await waitingUntil('none', 'ErrImagePull');
    expect(waiting.message).toMatch(REFUSED);
    expect(seen).not.toContain('ImagePullBackOff');
    const backOff = await waitingUntil('none', 'ImagePullBackOff');
    expect(backOff.waiting.message).toMatch(new RegExp(`^Back-off pulling image "${images.none}" until \\S+Z: NotFound: `));
    expect(agent!.events('ContainerStarted', 'none')).toEqual([]);
    // ErrImagePull lasts 10 s after each failure (the kubelet's pod-worker back-off), the first
    // back-off 10 s too: ImagePullBackOff shows in the second failure's 20 s back-off.
  }, 60_000);

  it('shows ErrImagePull with the registry’s refusal for a wrong pull secret, says the missing one, and never shows a password', async () => {
    const { waiting } = await waitingUntil('wrong', 'ErrImagePull');
    expect(waiting.message).toMatch(REFUSED);
    expect(waiting.message).toContain('(with Secret default/wrongcred');
    await agent!.until(
      () => agent!.events('ImagePullFailed', 'wrong').some((e) => e['reason'] === 'FailedToRetrieveImagePullSecret'),
      'the missing pull secret to be said',
    );
    const said = agent!.lines.map((l) => JSON.stringify(l)).join('\n') + agent!.stderr.join('');
    const pods = await (await fetch(`${url}/pods`)).text();
    for (const secretText of [
      registry.password,
      'not-the-password',
      Buffer.from(`${registry.username}:${registry.password}`).toString('base64'),
    ]) {
      expect(said.includes(secretText)).toBe(false);
      expect(pods.includes(secretText)).toBe(false);
    }
    expect(agent!.events('ContainerStarted', 'wrong')).toEqual([]);
  });
});
