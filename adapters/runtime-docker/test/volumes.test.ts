import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdir, mkdtemp, readdir, realpath, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Labels,
  buildContainerSpec,
  buildSandboxSpec,
  validateManifest,
  type ContainerManifest,
  type ContainerSpec,
} from '@kubelet-ts/core';
import { buildTestImages, independentDocker, removeLabelled, type TestImages } from '@kubelet-ts/testkit';
import { DockerRuntime } from '../src/index.js';

const NODE = `volumes-test-${process.pid}`;

describe('DockerRuntime volumes on a real engine', () => {
  const docker = independentDocker();
  let images: TestImages;
  let base: string;
  let root: string;
  let outside: string;
  let runtime: DockerRuntime;
  /**
   * The containers of these tests live in one sandbox, of a pod of its own: a test can then tell
   * that a refused create left no namespace of its pod behind.
   */
  let sandboxId: string;

  beforeAll(async () => {
    images = await buildTestImages();
    base = await realpath(await mkdtemp(join(tmpdir(), 'kubelet-ts-volumes-engine-')));
    root = join(base, 'root');
    outside = join(base, 'outside');
    await mkdir(outside);
    runtime = new DockerRuntime({ podInfraImage: images.pause, hostIp: '127.0.0.1', volumesRoot: root });
    sandboxId = (await runtime.runSandbox(buildSandboxSpec(manifest('volumes-tests', []), { node: NODE, source: 'test' }))).id;
  });

  afterAll(async () => {
    await removeLabelled(`${Labels.node}=${NODE}`);
    await rm(base, { recursive: true, force: true });
  });

  const manifest = (podId: string, containers: unknown[]): ContainerManifest => {
    const r = validateManifest({ id: podId, volumes: [{ name: 'data' }], containers });
    if (!r.ok) throw new Error(JSON.stringify(r.errors));
    return r.manifest;
  };

  const spec = (podId: string): ContainerSpec => {
    const m = manifest(podId, [
      {
        name: 'main',
        image: images.busybox,
        command: ['sh', '-c', 'echo written > /data/file'],
        volumeMounts: [{ name: 'data', mountPath: '/data' }],
      },
    ]);
    return buildContainerSpec(m, m.containers[0]!, { node: NODE, source: 'test' });
  };

  const created = async (podId: string) =>
    docker.listContainers({ all: true, filters: { label: [`${Labels.node}=${NODE}`, `${Labels.manifestId}=${podId}`] } });

  it('mounts the directory under the root, where the container writes', async () => {
    const c = await runtime.create(spec('writes'), sandboxId);
    await runtime.start(c.id);
    await docker.getContainer(c.id).wait();
    expect((await docker.getContainer(c.id).inspect()).HostConfig.Binds).toEqual([`${join(root, 'writes', 'data')}:/data:rw`]);
    expect(await readdir(join(root, 'writes', 'data'))).toEqual(['file']);
    await runtime.remove(c.id, { force: true });
  });

  it('creates no container (and no pod namespace) when a link is planted in the root, and mounts nothing outside it', async () => {
    await mkdir(root, { recursive: true });
    await symlink(outside, join(root, 'planted'));
    const error = await runtime.create(spec('planted'), sandboxId).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'Conflict', message: expect.stringContaining(`${join(root, 'planted')} is a symbolic link`) });
    expect(await created('planted')).toEqual([]);
    expect(await docker.listContainers({ all: true, filters: { label: [`${Labels.sandbox}=planted`] } })).toEqual([]);
    expect(await readdir(outside)).toEqual([]);
  });

  it('refuses a mount whose names could leave the root before the engine is asked', async () => {
    for (const [podId, volume] of [
      ['..', 'data'],
      ['escape', '../../outside'],
      ['escape', '/etc'],
    ] as const) {
      const bad = { ...spec('escape'), podId, mounts: [{ volume, containerPath: '/x', readOnly: false }] };
      await expect(runtime.create(bad, sandboxId)).rejects.toMatchObject({ code: 'InvalidManifest' });
    }
    expect(await created('escape')).toEqual([]);
    expect(await readdir(outside)).toEqual([]);
  });
});
