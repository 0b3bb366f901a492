import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkedManifest } from '@kubelet-ts/conformance';
import { Labels, type KubeletEvent } from '@kubelet-ts/core';
import { StaticManifestSource } from '@kubelet-ts/manifest';
import { createKubelet, type Kubelet } from '@kubelet-ts/runner';
import { DockerRuntime } from '@kubelet-ts/runtime-docker';
import { buildTestImages, independentDocker, removeLabelled, TEST_IMAGES, type TestImages } from '@kubelet-ts/testkit';

const NODE = `lifecycle-${process.pid}`;

async function until(check: () => boolean | Promise<boolean>, what: string, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('container lifecycle on a real Docker engine', () => {
  const docker = independentDocker();
  const events: KubeletEvent[] = [];
  let images: TestImages;
  let volumes: string;
  let source: StaticManifestSource;
  let kubelet: Kubelet;

  const slot = async (podId: string) =>
    (await docker.listContainers({ all: true, filters: { label: [`${Labels.node}=${NODE}`, `${Labels.manifestId}=${podId}`] } })).sort(
      (a, b) => a.Created - b.Created,
    );
  const ofType = (type: string, podId: string) => events.filter((e) => e.type === type && e.podId === podId);

  beforeAll(async () => {
    images = await buildTestImages();
    volumes = await mkdtemp(join(tmpdir(), 'kubelet-ts-lifecycle-'));
    source = new StaticManifestSource('test', []);
    kubelet = createKubelet({
      runtime: new DockerRuntime({ podInfraImage: images.pause, hostIp: '127.0.0.1', volumesRoot: volumes }),
      sources: [source],
      hostname: NODE,
      syncFrequencyMs: 500,
      // The kubelet's 10 s → 300 s, shortened so the test sees three restarts in seconds.
      crashBackOff: { initialMs: 1_000, maxMs: 4_000 },
      events: { emit: (e) => events.push(e) },
    });
    await kubelet.start();
  });

  afterAll(async () => {
    await kubelet.close();
    await removeLabelled(`${Labels.node}=${NODE}`);
    await rm(volumes, { recursive: true, force: true });
  });

  const crasher = checkedManifest({
    id: 'crasher',
    containers: [{ name: 'main', image: TEST_IMAGES.busybox, command: ['sh', '-c', 'exit 3'] }],
  });
  const sick = checkedManifest({
    id: 'sick',
    containers: [
      {
        name: 'main',
        image: TEST_IMAGES.busybox,
        // Healthy for a second, then the probe file goes.
        command: ['sh', '-c', 'trap "exit 0" TERM; touch /tmp/healthy; sleep 1; rm /tmp/healthy; while true; do sleep 1; done'],
        livenessProbe: { exec: { command: ['cat', '/tmp/healthy'] }, initialDelaySeconds: 0, periodSeconds: 1, failureThreshold: 2 },
      },
    ],
  });
  const stubborn = checkedManifest({
    id: 'stubborn',
    terminationGracePeriodSeconds: 2,
    // busybox sleep as PID 1 ignores SIGTERM: only the kill at the end of the grace period stops it.
    containers: [{ name: 'main', image: TEST_IMAGES.busybox, command: ['sleep', '3600'] }],
  });

  it('restarts a crashing container at once, then with growing delays, and keeps one exited container', async () => {
    source.set([crasher]);
    await until(() => ofType('ContainerRestarted', 'crasher').length >= 3, 'three restarts', 30_000);
    const starts = ofType('ContainerStarted', 'crasher').map((e) => e.time);
    const gaps = starts.slice(1, 4).map((t, i) => t - starts[i]!);
    // The first crash restarted at once, then 1 s, 2 s of back-off, plus the time to notice the exit.
    expect(gaps[0]).toBeGreaterThanOrEqual(0);
    expect(gaps[1]).toBeGreaterThanOrEqual(1_000);
    expect(gaps[2]).toBeGreaterThanOrEqual(2_000);
    for (const [i, gap] of gaps.entries()) expect(gap).toBeLessThan([0, 1_000, 2_000][i]! + 2_000);
    await until(async () => (await slot('crasher')).length <= 2, 'garbage collected');
    const left = await slot('crasher');
    expect(left.filter((c) => c.State === 'exited').length).toBeGreaterThanOrEqual(1);
    expect(left.length).toBeLessThanOrEqual(2);
    expect(ofType('ContainerExited', 'crasher')[0]?.message).toContain('exited with code 3');
    source.set([]);
    await until(async () => (await slot('crasher')).length === 0, 'crasher removed');
  });

  it('kills and restarts a container whose exec liveness probe fails', async () => {
    source.set([sick]);
    await until(() => ofType('ContainerKilled', 'sick').length === 1, 'the kill', 20_000);
    expect(ofType('ProbeFailed', 'sick').length).toBeGreaterThanOrEqual(2);
    expect(ofType('ProbeFailed', 'sick')[0]?.message).toContain('cat');
    await until(() => ofType('ContainerRestarted', 'sick').length === 1, 'the restart', 20_000);
    const running = (await slot('sick')).filter((c) => c.State === 'running');
    expect(running).toHaveLength(1);
    expect(running[0]?.Labels[Labels.restartCount]).toBe('1');
    source.set([]);
    await until(async () => (await slot('sick')).length === 0, 'sick removed');
  });

  it('gives a container that ignores SIGTERM its grace period, then kills it', async () => {
    source.set([stubborn]);
    await until(() => ofType('ContainerStarted', 'stubborn').length === 1, 'started');
    const asked = Date.now();
    source.set([]);
    await until(() => ofType('ContainerStopped', 'stubborn').length === 1, 'stopped', 20_000);
    const took = Date.now() - asked;
    expect(took).toBeGreaterThanOrEqual(1_900);
    expect(took).toBeLessThan(8_000);
    await until(async () => (await slot('stubborn')).length === 0, 'stubborn removed');
  });
});
