import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { checkedManifest } from '@kubelet-ts/conformance';
import { buildContainerSpec, buildSandboxSpec, type ContainerSummary, type SandboxSummary } from '@kubelet-ts/core';
import { TEST_IMAGES } from '@kubelet-ts/testkit';
import { criFixture, type CriFixture } from './fixture.js';

const NODE = `cri-records-${process.pid}`;

/**
 * What the adapter's lists hand out (ListedRecords): CRI never changes a container's or sandbox's
 * name, labels, image or creation time, so an unchanged one is the same record from list to list,
 * which the agent's quiet pass knows by identity; a change of state makes a new one.
 */
describe('CriRuntime: the records its lists hand out, on a real containerd', () => {
  let f: CriFixture;

  beforeAll(async () => {
    f = await criFixture();
  });

  afterAll(async () => {
    await f?.close();
  });

  it('hands out the same record while a container or sandbox is unchanged, a new one when its state changes, and none once it is gone', async () => {
    const runtime = f.runtime;
    const m = checkedManifest({ id: 'records', containers: [{ name: 'main', image: TEST_IMAGES.busybox, command: ['sleep', '3600'] }] });
    const s = await runtime.runSandbox(buildSandboxSpec(m, { node: NODE, source: 'test' }));
    let c: ContainerSummary | undefined;
    try {
      c = await runtime.create(buildContainerSpec(m, m.containers[0]!, { node: NODE, source: 'test' }), s.id);
      await runtime.start(c.id);
      const id = c.id;
      const container = async (options = {}) => (await runtime.list(options)).find((x) => x.id === id);
      const sandbox = async (options = {}) => (await runtime.listSandboxes(options)).find((x) => x.id === s.id);

      const running = (await container()) as ContainerSummary;
      const ready = (await sandbox()) as SandboxSummary;
      expect(running).toMatchObject({ id, state: 'running', labels: c.labels });
      expect(ready).toMatchObject({ id: s.id, state: 'ready' });
      // Listed again, of the whole host or of its pod only: the very same records.
      expect(await container()).toBe(running);
      expect(await container({ podId: 'records' })).toBe(running);
      expect(await sandbox()).toBe(ready);
      expect(await sandbox({ podId: 'records' })).toBe(ready);

      await runtime.stop(id, 0);
      const exited = (await container()) as ContainerSummary;
      expect(exited).not.toBe(running);
      expect(exited).toEqual({ ...running, state: 'exited' });
      expect(await container()).toBe(exited);

      await runtime.stopSandbox(s.id);
      const notReady = (await sandbox()) as SandboxSummary;
      expect(notReady).not.toBe(ready);
      expect(notReady.state).toBe('notready');
      expect(notReady.ip).toBeUndefined();
      expect(await sandbox()).toBe(notReady);
    } finally {
      await runtime.removeSandbox(s.id, { volumes: true });
    }
    expect((await runtime.list()).some((x) => x.id === c?.id)).toBe(false);
    expect((await runtime.listSandboxes()).some((x) => x.id === s.id)).toBe(false);
  });
});
