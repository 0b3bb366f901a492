import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkedManifest } from '@kubelet-ts/conformance';
import { Labels, buildContainerSpec, type ContainerManifest, type KubeletError } from '@kubelet-ts/core';
import { buildTestImages, independentDocker, removeLabelled, type TestImages } from '@kubelet-ts/testkit';
import { DockerRuntime, InfraLabels, type DockerApi } from '../src/index.js';

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

  it('puts the containers of a pod in one network namespace, held by an infrastructure container with the ports', async () => {
    const m = checkedManifest({
      id: 'netns',
      containers: [
        { name: 'server', image: images.busybox, command: ['sh', '-c', 'mkdir -p /www && echo pod-local > /www/index.html && exec httpd -f -p 8080 -h /www'], ports: [{ containerPort: 8080 }] },
        { name: 'client', image: images.busybox, command: ['sleep', '3600'] },
      ],
    });
    const ids: string[] = [];
    for (const s of specs(m)) {
      const c = await runtime.create(s);
      await runtime.start(c.id);
      ids.push(c.id);
    }
    const infra = await docker.listContainers({ all: true, filters: { label: [`${InfraLabels.pod}=netns`, `${Labels.node}=${NODE}`] } });
    expect(infra).toHaveLength(1);
    for (const id of ids) expect((await docker.getContainer(id).inspect()).HostConfig.NetworkMode).toBe(`container:${infra[0]!.Id}`);
    // httpd may still be starting: the loop waits for it to listen, for at most 5 s.
    // The infrastructure container is not one of "ours" in list(): the planner never sees it.
    expect((await runtime.list()).some((c) => c.id === infra[0]!.Id)).toBe(false);

    const exec = await docker.getContainer(ids[1]!).exec({ Cmd: ['sh', '-c', 'for i in $(seq 1 25); do wget -q -O - http://localhost:8080/ && exit 0; sleep 0.2; done; exit 1'], AttachStdout: true, AttachStderr: true });
    await exec.start({});
    let inspect = await exec.inspect();
    for (let i = 0; inspect.Running && i < 50; i++) {
      await new Promise((r) => setTimeout(r, 100));
      inspect = await exec.inspect();
    }
    expect(inspect.ExitCode).toBe(0);

    // Removing the last container of the pod removes its namespace too.
    for (const id of ids) await runtime.remove(id, { force: true });
    expect(await docker.listContainers({ all: true, filters: { label: [`${InfraLabels.pod}=netns`] } })).toEqual([]);
  });

  it('makes one host directory per pod volume under the root, read-only when asked', async () => {
    const m = checkedManifest({
      id: 'vols',
      volumes: [{ name: 'data' }],
      containers: [{ name: 'main', image: images.busybox, command: ['sleep', '3600'], volumeMounts: [{ name: 'data', mountPath: '/data', readOnly: true }] }],
    });
    const [spec] = specs(m);
    const c = await runtime.create(spec!);
    expect(await readdir(join(volumesRoot, 'vols'))).toEqual(['data']);
    const info = await docker.getContainer(c.id).inspect();
    expect(info.HostConfig.Binds).toEqual([`${join(volumesRoot, 'vols', 'data')}:/data:ro`]);
    await runtime.remove(c.id, { force: true });
  });

  it('leaves no pod namespace behind when the container cannot be created', async () => {
    const m = checkedManifest({ id: 'noimage', containers: [{ name: 'main', image: 'kubelet-ts.invalid/none:1' }] });
    await expect(runtime.create(specs(m)[0]!)).rejects.toMatchObject({ code: 'NotFound' });
    expect(await docker.listContainers({ all: true, filters: { label: [`${InfraLabels.pod}=noimage`] } })).toEqual([]);
  });

  it('starts the pod namespace again when a created container is started after it stopped (as after an engine restart)', async () => {
    const m = checkedManifest({ id: 'held', containers: [{ name: 'main', image: images.busybox, command: ['sleep', '3600'] }] });
    const c = await runtime.create(specs(m)[0]!);
    const [infra] = await docker.listContainers({ all: true, filters: { label: [`${InfraLabels.pod}=held`, `${Labels.node}=${NODE}`] } });
    await docker.getContainer(infra!.Id).stop({ t: 0 });
    await runtime.start(c.id);
    expect((await docker.getContainer(c.id).inspect()).State.Running).toBe(true);
    expect((await docker.getContainer(infra!.Id).inspect()).State.Running).toBe(true);
    await runtime.remove(c.id, { force: true });
  });

  it('replaces a pod namespace the engine can no longer start, and the pod runs in the new one', async () => {
    // The engine refuses to start one container, as it did after a restart mid-start ("task already exists").
    const refused = new Set<string>();
    const real = independentDocker();
    const docker = new Proxy(real, {
      get(target, key) {
        if (key !== 'getContainer') return Reflect.get(target, key, target) as unknown;
        return (id: string) => {
          const handle = target.getContainer(id);
          if (!refused.has(id)) return handle;
          return Object.assign(Object.create(handle) as object, {
            start: () => Promise.reject(Object.assign(new Error('(HTTP code 500) server error - task already exists'), { statusCode: 500 })),
          });
        };
      },
    }) as unknown as DockerApi;
    const refusing = new DockerRuntime({ docker, podInfraImage: images.pause, hostIp: '127.0.0.1', volumesRoot });
    const m = checkedManifest({ id: 'phoenix', containers: [{ name: 'main', image: images.busybox, command: ['sleep', '3600'] }] });
    const first = await refusing.create(specs(m)[0]!);
    const [old] = await docker.listContainers({ all: true, filters: { label: [`${InfraLabels.pod}=phoenix`, `${Labels.node}=${NODE}`] } });
    await real.getContainer(old!.Id).stop({ t: 0 });
    await real.getContainer(first.id).remove({ force: true });
    refused.add(old!.Id);

    const second = await refusing.create(specs(m)[0]!);
    await refusing.start(second.id);
    const infra = await docker.listContainers({ all: true, filters: { label: [`${InfraLabels.pod}=phoenix`, `${Labels.node}=${NODE}`] } });
    expect(infra.map((c) => c.Id)).not.toContain(old!.Id);
    expect(infra).toHaveLength(1);
    const inspect = await real.getContainer(second.id).inspect();
    expect(inspect.State.Running).toBe(true);
    expect(inspect.HostConfig.NetworkMode).toBe(`container:${infra[0]!.Id}`);
    await refusing.remove(second.id, { force: true });
  });

  it('still fails the start of a container whose own problem is not the namespace', async () => {
    const m = checkedManifest({ id: 'badcmd', containers: [{ name: 'main', image: images.busybox, command: ['/no/such/binary'] }] });
    const c = await runtime.create(specs(m)[0]!);
    await expect(runtime.start(c.id)).rejects.toThrow(/no such file|not found|executable/i);
    await runtime.remove(c.id, { force: true });
  });

  it('refuses a volume name that could leave the root', async () => {
    const m = checkedManifest({ id: 'escape', containers: [{ name: 'main', image: images.busybox }] });
    const [spec] = specs(m);
    const bad = { ...spec!, mounts: [{ volume: '../../etc', containerPath: '/x', readOnly: false }] };
    await expect(runtime.create(bad)).rejects.toMatchObject({ code: 'InvalidManifest' });
  });

  it('recreates the namespace when the pod ports change', async () => {
    const one = checkedManifest({ id: 'ports', containers: [{ name: 'main', image: images.busybox, command: ['sleep', '3600'], ports: [{ containerPort: 80, hostPort: 18081 }] }] });
    const two = checkedManifest({ id: 'ports', containers: [{ name: 'main', image: images.busybox, command: ['sleep', '3600'], ports: [{ containerPort: 80, hostPort: 18082 }] }] });
    const a = await runtime.create(specs(one)[0]!);
    await runtime.start(a.id);
    await runtime.remove(a.id, { force: true });
    const b = await runtime.create(specs(two)[0]!);
    await runtime.start(b.id);
    const infra = await docker.listContainers({ all: true, filters: { label: [`${InfraLabels.pod}=ports`, `${Labels.node}=${NODE}`] } });
    expect(infra).toHaveLength(1);
    expect(infra[0]!.Ports.map((p) => p.PublicPort)).toEqual([18082]);
    await runtime.remove(b.id, { force: true });
  });

  it('fails a pull with no registry as a clear error, not a hang', async () => {
    const error = (await runtime.pull('kubelet-ts.invalid/nothing:1').catch((e: unknown) => e)) as KubeletError;
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
