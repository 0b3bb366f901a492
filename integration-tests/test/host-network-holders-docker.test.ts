import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkedManifest } from '@kubelet-ts/conformance';
import { Labels } from '@kubelet-ts/core';
import { StaticManifestSource } from '@kubelet-ts/manifest';
import { createKubelet, type Kubelet } from '@kubelet-ts/runner';
import { DockerRuntime } from '@kubelet-ts/runtime-docker';
import { buildTestImages, independentDocker, removeLabelled, TEST_IMAGES } from '@kubelet-ts/testkit';

const NODE = `hostnet-holders-${process.pid}`;
/** What the agent is run with (`--allow-host-network --allow-privileged`). */
const ACCESS = { allowHostNetwork: true, allowPrivileged: true };

async function until(check: () => Promise<boolean>, what: string, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// Issue 48: a host-network pod whose sandbox hash is not the plain host-network one (a shared
// process namespace, a privileged container, hostPID, hostIPC) got a new holder every pass, and
// none was ever removed, because a holder on the host's network was recognised by that one hash.
describe.each([
  ['shareProcessNamespace', { shareProcessNamespace: true }],
  ['a privileged container', { privileged: true }],
  ['hostPID', { hostPID: true }],
])('a host-network pod with %s on a real Docker engine', (what, shape) => {
  const docker = independentDocker();
  const podId = `hostnet-${what.replace(/[^a-z]/gi, '').toLowerCase()}`;
  let source: StaticManifestSource;
  let kubelet: Kubelet;
  let volumes: string;

  const ours = (label: string) => docker.listContainers({ all: true, filters: { label: [`${Labels.node}=${NODE}`, label] } });
  const holders = () => ours(`${Labels.sandbox}=${podId}`);

  beforeAll(async () => {
    await buildTestImages();
    volumes = await mkdtemp(join(tmpdir(), 'kubelet-ts-hostnet-holders-'));
    source = new StaticManifestSource('test', [], ACCESS);
    kubelet = createKubelet({
      runtime: new DockerRuntime({ podInfraImage: TEST_IMAGES.pause, hostIp: '127.0.0.1', volumesRoot: volumes }),
      sources: [source],
      hostname: NODE,
      syncFrequencyMs: 200,
      ...ACCESS,
    });
    await kubelet.start();
  });

  afterAll(async () => {
    await kubelet?.close();
    await removeLabelled(`${Labels.node}=${NODE}`);
    await rm(volumes, { recursive: true, force: true });
  });

  it('keeps one holder across many passes, runs its container in it, and leaves none once deleted', async () => {
    const privileged = 'privileged' in shape;
    source.set([
      checkedManifest(
        {
          id: podId,
          hostNetwork: true,
          ...(privileged ? {} : shape),
          containers: [
            {
              name: 'main',
              image: TEST_IMAGES.busybox,
              command: ['sleep', '3600'],
              ...(privileged ? { securityContext: { privileged: true } } : {}),
            },
          ],
        },
        ACCESS,
      ),
    ]);
    await until(async () => (await holders()).length > 0, 'a holder');
    // Twenty passes at least: each of them made a holder before the fix.
    await new Promise((r) => setTimeout(r, 4_000));
    const seen = await holders();
    expect(seen.map((h) => h.State)).toEqual(['running']);
    expect(seen[0]!.HostConfig.NetworkMode).toBe('host');
    // This VM's root may not hand a privileged container every capability (runc: "unable to apply
    // caps"), so that one's container does not start here; the holders are what this test is about.
    if (!privileged) {
      const containers = (await ours(`${Labels.manifestId}=${podId}`)).filter((c) => c.Labels[Labels.sandbox] === undefined);
      expect(containers.map((c) => c.State)).toEqual(['running']);
    }

    source.set([]);
    await until(async () => (await ours(`${Labels.node}=${NODE}`)).length === 0, 'the pod gone, holder and all');
  }, 60_000);
});
