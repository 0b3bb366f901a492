import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { checkedManifest } from '@kubelet-ts/conformance';
import { Labels } from '@kubelet-ts/core';
import { StaticManifestSource } from '@kubelet-ts/manifest';
import { createKubelet, type Kubelet } from '@kubelet-ts/runner';
import { DockerRuntime } from '@kubelet-ts/runtime-docker';
import { buildTestImages, independentDocker, removeLabelled, TEST_IMAGES, type TestImages } from '@kubelet-ts/testkit';

const NODE = `events-${process.pid}`;

async function until(check: () => Promise<boolean>, what: string, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Issue 14: the agent hears a kill from the engine's event stream, not at its next relist. */
describe('runtime events on a real Docker engine', () => {
  const docker = independentDocker();
  let images: TestImages;
  let kubelet: Kubelet | undefined;
  const source = new StaticManifestSource('test', []);
  const running = async () =>
    docker.listContainers({ filters: { label: [`${Labels.node}=${NODE}`, `${Labels.manifestId}=web`], status: ['running'] } });

  beforeAll(async () => {
    images = await buildTestImages();
    kubelet = createKubelet({
      runtime: new DockerRuntime({ podInfraImage: images.pause, hostIp: '127.0.0.1' }),
      sources: [source],
      hostname: NODE,
      // A minute: only the event stream can explain a replacement within 2 s.
      syncFrequencyMs: 60_000,
    });
    await kubelet.start();
  });

  afterAll(async () => {
    await kubelet?.close();
    await removeLabelled(`${Labels.node}=${NODE}`);
  });

  it('replaces a container killed with `docker kill` within 2 s while the sync period is 60 s', async () => {
    source.set([checkedManifest({ id: 'web', containers: [{ name: 'main', image: TEST_IMAGES.busybox, command: ['sleep', '3600'] }] })]);
    await until(async () => (await running()).length === 1, 'the container', 30_000);
    const [first] = await running();
    const killedAt = Date.now();
    await docker.getContainer(first!.Id).kill();
    await until(async () => (await running()).some((c) => c.Id !== first!.Id), 'the replacement', 2_000);
    const tookMs = Date.now() - killedAt;
    expect(tookMs).toBeLessThan(2_000);
    const [replacement] = await running();
    expect(replacement!.Labels[Labels.restartCount]).toBe('1');
  }, 40_000);
});
