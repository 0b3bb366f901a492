import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdir, mkdtemp, rm, stat, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validateManifest, type ContainerManifest, type HostPathType } from '@kubelet-ts/core';
import { agentFixture } from './agent-fixture.js';
import { ScriptedSource } from './helpers.js';

let root: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'kubelet-ts-host-path-hook-'));
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

function hostPathPod(id: string, path: string, type: HostPathType): ContainerManifest {
  const result = validateManifest(
    {
      id,
      volumes: [{ name: 'data', hostPath: { path, type } }],
      containers: [{ name: 'web', image: 'app:1', volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
    },
    { allowHostMounts: true },
  );
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return result.manifest;
}

/** The check touches the real file system: wait (in real time, at most 5 s) for what the pass does, not for a few turns. */
async function until(done: () => boolean): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!done() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
}

describe('the agent checks hostPath volumes before it creates a container', () => {
  const f = agentFixture();

  it('fails the create of a container whose Directory is missing, naming volume and path, then creates it once the directory exists', async () => {
    const path = join(root, 'wanted');
    const a = new ScriptedSource('a');
    const k = f.kubelet([a], { allowHostMounts: true });
    await k.start();
    a.push([hostPathPod('needs-dir', path, 'Directory')]);
    await until(() => f.events.ofType('ContainerFailed').length > 0);

    expect(f.of('needs-dir')).toEqual([]);
    expect(f.runtime.calls.some((c) => c.op === 'create')).toBe(false);
    const failed = f.events.ofType('ContainerFailed');
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ podId: 'needs-dir', container: 'web', reason: 'NotFound' });
    expect(failed[0]?.message).toContain('volume "data"');
    expect(failed[0]?.message).toContain(path);

    await mkdir(path);
    await f.clock.advance(10_000); // a refused create waits out its back-off (issue 27)
    expect(await k.sync()).toMatchObject({ failures: 0 });
    expect(f.one('needs-dir').state).toBe('running');
    const [created] = f.of('needs-dir');
    expect((await f.runtime.inspect(created!.id)).spec.mounts).toEqual([
      { volume: 'data', containerPath: '/data', readOnly: false, hostPath: path, hostPathType: 'Directory' },
    ]);
  });

  it("refuses a 2014 HOST mount whose path is a link to the host's root, and creates nothing (issue 27)", async () => {
    const link = join(root, 'root-link');
    await symlink('/', link);
    const result = validateManifest(
      {
        id: 'sneaky',
        volumes: [{ name: 'data' }],
        containers: [{ name: 'web', image: 'app:1', volumeMounts: [{ name: 'data', mountPath: link, mountType: 'HOST' }] }],
      },
      { allowHostMounts: true },
    );
    if (!result.ok) throw new Error(JSON.stringify(result.errors));
    const a = new ScriptedSource('a');
    const k = f.kubelet([a], { allowHostMounts: true });
    await k.start();
    a.push([result.manifest]);
    await until(() => f.events.ofType('ContainerFailed').length > 0);
    expect(f.runtime.calls.some((c) => c.op === 'create')).toBe(false);
    const failed = f.events.ofType('ContainerFailed');
    expect(failed[0]).toMatchObject({ podId: 'sneaky', container: 'web', reason: 'InvalidManifest' });
    expect(failed[0]?.message).toContain(`hostPath ${link} leads to the host's root directory`);
  });

  it('makes the directory of a DirectoryOrCreate volume, and the container runs', async () => {
    const path = join(root, 'made', 'here');
    const a = new ScriptedSource('a');
    const k = f.kubelet([a], { allowHostMounts: true });
    await k.start();
    a.push([hostPathPod('makes-dir', path, 'DirectoryOrCreate')]);
    await until(() => f.of('makes-dir').some((c) => c.state === 'running'));
    expect(f.one('makes-dir').state).toBe('running');
    expect((await stat(path)).isDirectory()).toBe(true);
  });
});
