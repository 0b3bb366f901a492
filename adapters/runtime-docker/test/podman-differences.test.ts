import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeletError, Labels, buildContainerName, sandboxHash, silentLogger, type Logger, type SandboxSpec } from '@kubelet-ts/core';
import { assertPodman, independentPodman, podmanHost, TEST_IMAGES } from '@kubelet-ts/testkit';
import { DockerRuntime, type DockerApi } from '../src/index.js';
import { engineKindOf, familiarImageName } from '../src/engine-kind.js';

// What the two engines answer to GET /version (Debian's docker.io 20.10 and podman 4.3.1).
const DOCKER_VERSION = {
  Version: '20.10.24+dfsg1',
  Platform: { Name: '' },
  Components: [{ Name: 'Engine' }, { Name: 'containerd' }, { Name: 'runc' }, { Name: 'docker-init' }],
};
const PODMAN_VERSION = {
  Version: '4.3.1',
  Platform: { Name: 'linux/amd64/debian-12' },
  Components: [{ Name: 'Podman Engine' }, { Name: 'Conmon' }, { Name: 'OCI Runtime (runc)' }],
};

describe('the Docker adapter tells Podman from Docker', () => {
  it('by the components GET /version names', () => {
    expect(engineKindOf(DOCKER_VERSION)).toBe('docker');
    expect(engineKindOf(PODMAN_VERSION)).toBe('podman');
    expect(engineKindOf({ Platform: { Name: 'Docker Engine - Community' } })).toBe('docker');
    expect(engineKindOf({})).toBe('docker');
  });

  it("shows Podman's full image names as Docker does", () => {
    expect(familiarImageName('docker.io/kubelet-ts-test/busybox:1')).toBe('kubelet-ts-test/busybox:1');
    expect(familiarImageName('docker.io/library/busybox:1.36')).toBe('busybox:1.36');
    expect(familiarImageName('docker.io/library/team/tool:1')).toBe('library/team/tool:1');
    expect(familiarImageName('registry.k8s.io/pause:3.10')).toBe('registry.k8s.io/pause:3.10');
    expect(familiarImageName('localhost/kubelet-ts/x:1')).toBe('localhost/kubelet-ts/x:1');
    expect(familiarImageName('busybox@sha256:' + 'a'.repeat(64))).toBe('busybox@sha256:' + 'a'.repeat(64));
  });
});

describe('a sandbox whose start fails, on an engine that answers as scripted', () => {
  /** An engine on which every start fails the way a bad pause image does (the runtime cannot exec it). */
  const engine = (version: object, removed: string[]): DockerApi =>
    ({
      version: async () => version,
      getImage: () => ({ inspect: async () => ({}) }),
      createContainer: async () => ({ id: 'c'.repeat(64) }),
      getContainer: (id: string) => ({
        start: async () => {
          throw Object.assign(new Error('(HTTP code 500) server error'), {
            statusCode: 500,
            json: {
              message: 'runc: runc create failed: unable to start container process: exec: "sleep": executable file not found in $PATH',
            },
          });
        },
        remove: async () => {
          removed.push(id);
        },
      }),
    }) as unknown as DockerApi;

  const spec: SandboxSpec = {
    name: 'POD--web--12345678',
    podId: 'web',
    hostname: 'web',
    ports: [{ containerPort: 80, hostPort: 18080, protocol: 'TCP' }],
    labels: { [Labels.sandbox]: 'web' },
  };

  const warnings = () => {
    const seen: Array<{ fields: object; message: string }> = [];
    const logger: Logger = { ...silentLogger, warn: (fields, message) => seen.push({ fields, message }), child: () => logger };
    return { logger, seen };
  };

  it('on Podman: leaves nothing, and says the host ports stay bound until the service restarts', async () => {
    const removed: string[] = [];
    const { logger, seen } = warnings();
    const runtime = new DockerRuntime({ docker: engine(PODMAN_VERSION, removed), podInfraImage: 'pause', logger });
    await expect(runtime.runSandbox(spec)).rejects.toMatchObject({ code: 'Internal' });
    expect(removed).toEqual(['c'.repeat(64)]);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.message).toMatch(/keeps its host ports bound until the Podman service restarts/);
    expect(seen[0]!.fields).toMatchObject({ podId: 'web', hostPorts: [18080] });
  });

  it('on Docker, or without host ports, or when the port itself was taken: no such warning', async () => {
    const cases = [
      { version: DOCKER_VERSION, sandbox: spec },
      { version: PODMAN_VERSION, sandbox: { ...spec, ports: [] } },
    ];
    for (const { version, sandbox } of cases) {
      const { logger, seen } = warnings();
      const runtime = new DockerRuntime({ docker: engine(version, []), podInfraImage: 'pause', logger });
      await expect(runtime.runSandbox(sandbox)).rejects.toBeDefined();
      expect(seen).toEqual([]);
    }
    const taken = engine(PODMAN_VERSION, []);
    const failing = taken.getContainer;
    taken.getContainer = (id) => ({
      ...failing(id),
      start: async () => {
        throw Object.assign(new Error('(HTTP code 500) server error'), {
          statusCode: 500,
          json: { message: 'cannot listen on the TCP port: listen tcp4 127.0.0.1:18080: bind: address already in use' },
        });
      },
    });
    const { logger, seen } = warnings();
    await expect(new DockerRuntime({ docker: taken, podInfraImage: 'pause', logger }).runSandbox(spec)).rejects.toMatchObject({
      code: 'Conflict',
    });
    expect(seen).toEqual([]);
  });
});

describe('on the real Podman service', () => {
  let runtime: DockerRuntime;
  let volumesRoot: string;
  const sandboxes: string[] = [];

  beforeAll(async () => {
    await assertPodman();
    volumesRoot = await mkdtemp(join(tmpdir(), 'kubelet-ts-podman-volumes-'));
    runtime = new DockerRuntime({ host: podmanHost(), podInfraImage: TEST_IMAGES.pause, hostIp: '127.0.0.1', volumesRoot });
  });

  afterAll(async () => {
    for (const id of sandboxes) await runtime.removeSandbox(id, { volumes: true });
    await rm(volumesRoot, { recursive: true, force: true });
  });

  it('never brings a stopped sandbox back by starting a container in it, which Podman itself does', async () => {
    const podId = `revive-${process.pid}`;
    const sandbox = await runtime.runSandbox({
      name: buildContainerName(podId, 'POD'),
      podId,
      hostname: podId,
      ports: [],
      labels: { [Labels.sandbox]: podId, [Labels.sandboxHash]: sandboxHash([]), [Labels.node]: 'podman-node', [Labels.source]: 'test' },
    });
    sandboxes.push(sandbox.id);
    const container = await runtime.create(
      {
        name: buildContainerName(podId, 'main'),
        podId,
        image: TEST_IMAGES.busybox,
        command: ['sleep', '3600'],
        env: {},
        ports: [],
        mounts: [],
        labels: { [Labels.manifestId]: podId, [Labels.containerName]: 'main', [Labels.node]: 'podman-node' },
      },
      sandbox.id,
    );
    await runtime.stopSandbox(sandbox.id);
    const refused = await runtime.start(container.id).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(KubeletError);
    expect((refused as KubeletError).code).toBe('Conflict');
    expect((await runtime.listSandboxes()).find((s) => s.id === sandbox.id)?.state).toBe('notready');
    // The difference itself: Podman's own start of it starts the sandbox too (once it has cleaned
    // the stopped sandbox up: until then runc finds its id taken, and Podman answers 500).
    const deadline = Date.now() + 10_000;
    for (;;) {
      const failed = await independentPodman()
        .getContainer(container.id)
        .start()
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      if (failed === undefined) break;
      if (Date.now() > deadline) throw failed;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect((await runtime.listSandboxes()).find((s) => s.id === sandbox.id)?.state).toBe('ready');
  });
});
