import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkedManifest } from '@kubelet-ts/conformance';
import {
  Labels,
  buildContainerSpec,
  buildSandboxSpec,
  isManagedSandbox,
  type ContainerManifest,
  type KubeletError,
} from '@kubelet-ts/core';
import { buildTestImages, freePort, independentDocker, removeLabelled, type TestImages } from '@kubelet-ts/testkit';
import { DockerRuntime } from '../src/index.js';

const NODE = `docker-test-${process.pid}`;

describe('DockerRuntime on a real engine', () => {
  let images: TestImages;
  let runtime: DockerRuntime;
  let volumesRoot: string;
  const docker = independentDocker();

  beforeAll(async () => {
    images = await buildTestImages();
    volumesRoot = await mkdtemp(join(tmpdir(), 'kubelet-ts-volumes-'));
    runtime = new DockerRuntime({ podInfraImage: images.pause, hostIp: '127.0.0.1', volumesRoot });
  });

  afterAll(async () => {
    await removeLabelled(`${Labels.node}=${NODE}`);
    await rm(volumesRoot, { recursive: true, force: true });
  });

  const specs = (m: ContainerManifest) => m.containers.map((c) => buildContainerSpec(m, c, { node: NODE, source: 'test' }));

  const sandboxOf = (m: ContainerManifest) => runtime.runSandbox(buildSandboxSpec(m, { node: NODE, source: 'test' }));

  it("puts a pod's containers in its sandbox's network namespace: the sandbox publishes the ports, is named and labelled as the agent's", async () => {
    const port = await freePort();
    const m = checkedManifest({
      id: 'netns',
      containers: [
        {
          name: 'server',
          image: images.busybox,
          command: ['sh', '-c', 'mkdir -p /www && echo pod-local > /www/index.html && exec httpd -f -p 8080 -h /www'],
          ports: [{ containerPort: 8080, hostPort: port }],
        },
        { name: 'client', image: images.busybox, command: ['sleep', '3600'] },
      ],
    });
    const sandbox = await sandboxOf(m);
    const ids: string[] = [];
    for (const s of specs(m)) {
      const c = await runtime.create(s, sandbox.id);
      await runtime.start(c.id);
      ids.push(c.id);
    }
    const listed = (await runtime.listSandboxes()).find((x) => x.id === sandbox.id);
    expect(listed).toMatchObject({ state: 'ready', name: sandbox.name, labels: { [Labels.sandbox]: 'netns', [Labels.node]: NODE } });
    expect(isManagedSandbox(listed!, NODE)).toBe(true);
    const holder = await docker.getContainer(sandbox.id).inspect();
    expect(holder.Config.Hostname).toBe('netns');
    expect(holder.Config.Image).toBe(images.pause);
    for (const id of ids) expect((await docker.getContainer(id).inspect()).HostConfig.NetworkMode).toBe(`container:${sandbox.id}`);
    // The holder is not one of "ours" in list(): the planner sees it as a sandbox only.
    expect((await runtime.list()).some((c) => c.id === sandbox.id)).toBe(false);
    // The server answers the other container on localhost, and the host on the sandbox's port.
    const exec = await runtime.exec(
      ids[1]!,
      ['sh', '-c', 'for i in $(seq 1 25); do wget -q -O - http://localhost:8080/ && exit 0; sleep 0.2; done; exit 1'],
      10_000,
    );
    expect(exec).toMatchObject({ exitCode: 0, output: expect.stringContaining('pod-local') });
    expect(await (await fetch(`http://127.0.0.1:${port}/`)).text()).toContain('pod-local');

    await runtime.removeSandbox(sandbox.id, { volumes: true });
    expect(await docker.listContainers({ all: true, filters: { label: [`${Labels.node}=${NODE}`] } })).toEqual([]);
  });

  it('makes one host directory per pod volume under the root, and removes them with the sandbox of a pod that is gone', async () => {
    const m = checkedManifest({
      id: 'vols',
      volumes: [{ name: 'data' }],
      containers: [
        {
          name: 'main',
          image: images.busybox,
          command: ['sleep', '3600'],
          volumeMounts: [{ name: 'data', mountPath: '/data', readOnly: true }],
        },
      ],
    });
    const sandbox = await sandboxOf(m);
    const c = await runtime.create(specs(m)[0]!, sandbox.id);
    expect(await readdir(join(volumesRoot, 'vols'))).toEqual(['data']);
    const info = await docker.getContainer(c.id).inspect();
    expect(info.HostConfig.Binds).toEqual([`${join(volumesRoot, 'vols', 'data')}:/data:ro`]);
    // A sandbox replaced (the pod stays) keeps the volumes; the pod gone takes them (issue 17: a new
    // pod with the same id read the old pod's files).
    await runtime.removeSandbox(sandbox.id, { volumes: false });
    expect(await readdir(join(volumesRoot, 'vols'))).toEqual(['data']);
    const again = await sandboxOf(m);
    await runtime.removeSandbox(again.id, { volumes: true });
    expect(await readdir(volumesRoot)).not.toContain('vols');
  });

  it('binds a HOST mount (2014 mountType: HOST) at its host path, making no pod volume directory for it', async () => {
    const host = await mkdtemp(join(tmpdir(), 'kubelet-ts-hostmount-'));
    try {
      const m = checkedManifest({ id: 'hostmount', containers: [{ name: 'main', image: images.busybox, command: ['sleep', '3600'] }] });
      const sandbox = await sandboxOf(m);
      const spec = { ...specs(m)[0]!, mounts: [{ volume: 'host', containerPath: host, readOnly: true, hostPath: host }] };
      const c = await runtime.create(spec, sandbox.id);
      expect((await docker.getContainer(c.id).inspect()).HostConfig.Binds).toEqual([`${host}:${host}:ro`]);
      expect(await readdir(volumesRoot)).not.toContain('hostmount');
      await runtime.removeSandbox(sandbox.id, { volumes: true });
      expect(await readdir(host)).toEqual([]);
    } finally {
      await rm(host, { recursive: true, force: true });
    }
  });

  it('leaves nothing behind when a sandbox cannot start (its host port is taken)', async () => {
    const port = await freePort();
    const ports = (id: string) =>
      checkedManifest({ id, containers: [{ name: 'main', image: images.busybox, ports: [{ containerPort: 80, hostPort: port }] }] });
    await sandboxOf(ports('first'));
    await expect(sandboxOf(ports('second'))).rejects.toBeInstanceOf(Error);
    expect(await docker.listContainers({ all: true, filters: { label: [`${Labels.sandbox}=second`] } })).toEqual([]);
  });

  it('shows a sandbox whose holder stopped (as after an engine restart) as notready, and never starts it again', async () => {
    const m = checkedManifest({ id: 'held', containers: [{ name: 'main', image: images.busybox, command: ['sleep', '3600'] }] });
    const sandbox = await sandboxOf(m);
    const c = await runtime.create(specs(m)[0]!, sandbox.id);
    await docker.getContainer(sandbox.id).stop({ t: 0 });
    expect((await runtime.listSandboxes()).find((x) => x.id === sandbox.id)?.state).toBe('notready');
    await expect(runtime.start(c.id)).rejects.toBeInstanceOf(Error);
    expect((await docker.getContainer(sandbox.id).inspect()).State.Running).toBe(false);
  });

  it('never lists a holder on the host network as a sandbox, whatever its labels and name say', async () => {
    const m = checkedManifest({ id: 'hostnet', containers: [{ name: 'main', image: images.busybox }] });
    const spec = buildSandboxSpec(m, { node: NODE, source: 'test' });
    const forged = await docker.createContainer({
      name: spec.name,
      Image: images.pause,
      Labels: { ...spec.labels },
      HostConfig: { NetworkMode: 'host' },
    });
    await docker.getContainer(forged.id).start();
    expect((await runtime.listSandboxes()).some((x) => x.id === forged.id)).toBe(false);
    await expect(runtime.create(specs(m)[0]!, 'f'.repeat(64))).rejects.toMatchObject({ code: 'NotFound' });
  });

  it('gives one-shot figures of a running container: CPU time, memory in use and its limit', async () => {
    const m = checkedManifest({
      id: 'figures',
      containers: [{ name: 'main', image: images.busybox, command: ['sleep', '3600'], memory: 64 * 1024 * 1024 }],
    });
    const sandbox = await sandboxOf(m);
    const c = await runtime.create(specs(m)[0]!, sandbox.id);
    await runtime.start(c.id);
    const stats = await runtime.stats(c.id);
    expect(stats.memory.limitBytes).toBe(64 * 1024 * 1024);
    expect(stats.memory.usageBytes).toBeGreaterThan(0);
    expect(stats.cpu.usageNanoseconds).toBeGreaterThanOrEqual(0);
    expect(Math.abs(stats.timestamp - Date.now())).toBeLessThan(60_000);
    await expect(runtime.stats('f'.repeat(64))).rejects.toMatchObject({ code: 'NotFound' });
    await runtime.removeSandbox(sandbox.id);
  });

  it('still fails the start of a container whose own problem is not the namespace', async () => {
    const m = checkedManifest({ id: 'badcmd', containers: [{ name: 'main', image: images.busybox, command: ['/no/such/binary'] }] });
    const sandbox = await sandboxOf(m);
    const c = await runtime.create(specs(m)[0]!, sandbox.id);
    await expect(runtime.start(c.id)).rejects.toThrow(/no such file|not found|executable/i);
    await runtime.removeSandbox(sandbox.id);
  });

  it('refuses a volume name that could leave the root', async () => {
    const m = checkedManifest({ id: 'escape', containers: [{ name: 'main', image: images.busybox }] });
    const sandbox = await sandboxOf(m);
    const [spec] = specs(m);
    const bad = { ...spec!, mounts: [{ volume: '../../etc', containerPath: '/x', readOnly: false }] };
    await expect(runtime.create(bad, sandbox.id)).rejects.toMatchObject({ code: 'InvalidManifest' });
    await runtime.removeSandbox(sandbox.id);
  });

  it('fails a pull with no registry as a clear error, not a hang', async () => {
    const error = (await runtime.images.pull('kubelet-ts.invalid/nothing:1').catch((e: unknown) => e)) as KubeletError;
    expect(['NotFound', 'Unavailable']).toContain(error.code);
    expect(error.message).toContain('pull kubelet-ts.invalid/nothing:1');
  });

  it('answers Unavailable, naming the socket and how to start an engine, when none listens', async () => {
    const nowhere = new DockerRuntime({ host: 'unix:///tmp/kubelet-ts-no-engine.sock' });
    const error = (await nowhere.list().catch((e: unknown) => e)) as KubeletError;
    expect(error.code).toBe('Unavailable');
    expect(error.message).toContain('/tmp/kubelet-ts-no-engine.sock');
    expect(error.message).toContain('dockerd');
  });
});
