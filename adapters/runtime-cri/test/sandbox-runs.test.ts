import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { checkedManifest } from '@kubelet-ts/conformance';
import { KubeletError, buildContainerSpec, buildSandboxSpec, type ContainerManifest } from '@kubelet-ts/core';
import { criEndpoint, TEST_IMAGES } from '@kubelet-ts/testkit';
import { connectCri } from '../src/cri-client.js';
import type { CriApi, CriRuntime } from '../src/index.js';
import { criFixture, eventually, type CriFixture } from './fixture.js';

const NODE = `cri-runs-${process.pid}`;
const deadline = () => Date.now() + 30_000;

/**
 * The calls a new pod's start makes on a real containerd: a sandbox just run gives its containers
 * the config it was run with (RecentSandboxes), until it is stopped, listed not ready, or its pause
 * process's exit is seen; and what containerd does with a container whose sandbox died since.
 */
describe('CriRuntime: a sandbox just run, on a real containerd', () => {
  let f: CriFixture;
  let cri: CriApi;
  const made: Array<{ runtime: CriRuntime; id: string }> = [];

  beforeAll(async () => {
    f = await criFixture();
    cri = connectCri(criEndpoint());
  });

  afterEach(async () => {
    for (const { runtime, id } of made.splice(0)) await runtime.removeSandbox(id, { volumes: true });
  });

  afterAll(async () => {
    cri?.close();
    await f?.close();
  });

  /** A runtime on the test's own client that records the calls that matter here. */
  const recording = () => {
    const calls: string[] = [];
    const ran: unknown[] = [];
    const given: unknown[] = [];
    const client: CriApi = {
      ...cri,
      runPodSandbox: (request, until) => (calls.push('RunPodSandbox'), ran.push(request.config), cri.runPodSandbox(request, until)),
      podSandboxStatus: (request, until) => (calls.push(`PodSandboxStatus ${request.podSandboxId}`), cri.podSandboxStatus(request, until)),
      containerStatus: (request, until) => (calls.push(`ContainerStatus ${request.containerId}`), cri.containerStatus(request, until)),
      createContainer: (request, until) => (
        calls.push('CreateContainer'), given.push(request.sandboxConfig), cri.createContainer(request, until)
      ),
      close: () => undefined, // the test's own client, closed by the test
    };
    return { runtime: f.another({ cri: client }), calls, ran, given };
  };
  const pod = (id: string) => {
    const m: ContainerManifest = checkedManifest({
      id,
      containers: [{ name: 'main', image: TEST_IMAGES.busybox, command: ['sleep', '3600'] }],
    });
    return {
      sandbox: buildSandboxSpec(m, { node: NODE, source: 'test' }),
      container: buildContainerSpec(m, m.containers[0]!, { node: NODE, source: 'test' }),
    };
  };
  const run = async (runtime: CriRuntime, id: string) => {
    const { sandbox, container } = pod(id);
    const s = await runtime.runSandbox(sandbox);
    made.push({ runtime, id: s.id });
    return { s, container };
  };
  /** What an OOM kill or a crash of the pause process does, done with containerd's own tool. */
  const killHolder = (sandboxId: string) =>
    promisify(execFile)('ctr', [
      '--address',
      criEndpoint().replace(/^unix:\/\//, ''),
      '--namespace',
      'k8s.io',
      'tasks',
      'kill',
      '--signal',
      'SIGKILL',
      sandboxId,
    ]);
  /** containerd's own word that the sandbox is not ready, asked past the runtime (which would learn it). */
  const notReady = async (sandboxId: string) =>
    expect(
      await eventually(async () =>
        (await cri.podSandboxStatus({ podSandboxId: sandboxId }, deadline())).status?.state === 'SANDBOX_NOTREADY' ? 'yes' : '',
      ),
    ).toBe('yes');
  const codeOf = (call: Promise<unknown>) =>
    call.then(
      () => undefined,
      (e: unknown) => (e instanceof KubeletError ? e.code : String(e)),
    );

  it("makes a new pod's container with the config its sandbox was run with, asking no status", async () => {
    const { runtime, calls, ran, given } = recording();
    const { s, container } = await run(runtime, 'fresh');
    const c = await runtime.create(container, s.id);
    await runtime.start(c.id);
    expect(calls).toEqual(['RunPodSandbox', 'CreateContainer']);
    expect(given).toEqual(ran);
    expect((await cri.containerStatus({ containerId: c.id }, deadline())).status?.state).toBe('CONTAINER_RUNNING');
  });

  it('asks the status again once the sandbox is stopped through it, or listed not ready', async () => {
    const { runtime, calls } = recording();
    const stopped = await run(runtime, 'stopped');
    await runtime.stopSandbox(stopped.s.id);
    expect(await codeOf(runtime.create(stopped.container, stopped.s.id))).toBe('Conflict');
    expect(calls).toContain(`PodSandboxStatus ${stopped.s.id}`);

    const died = await run(runtime, 'died');
    await killHolder(died.s.id);
    expect(
      await eventually(async () => ((await runtime.listSandboxes()).find((x) => x.id === died.s.id)?.state === 'notready' ? 'yes' : '')),
    ).toBe('yes');
    expect(await codeOf(runtime.create(died.container, died.s.id))).toBe('Conflict');
    expect(calls).toContain(`PodSandboxStatus ${died.s.id}`);
  });

  it("asks the status again once containerd's events tell its pause process exited", async () => {
    const { runtime, calls } = recording();
    const abort = new AbortController();
    const reading = (async () => {
      for await (const _ of runtime.events(abort.signal));
    })().catch(() => undefined);
    try {
      const { s, container } = await run(runtime, 'evented');
      await killHolder(s.id);
      // The exit of an id the runtime has not seen is looked up once (ContainerStatus): a sandbox has none.
      expect(await eventually(async () => (calls.includes(`ContainerStatus ${s.id}`) ? 'yes' : ''))).toBe('yes');
      // containerd's CRI store says so a moment after its event.
      await notReady(s.id);
      expect(await codeOf(runtime.create(container, s.id))).toBe('Conflict');
      expect(calls).toContain(`PodSandboxStatus ${s.id}`);
    } finally {
      abort.abort();
      await reading;
    }
  });

  it('a container made in a sandbox that died since it ran (the runtime not told) is refused by containerd, and never runs', async () => {
    const { runtime } = recording();
    const { s, container } = await run(runtime, 'unseen');
    await killHolder(s.id);
    await notReady(s.id);
    const made = await runtime.create(container, s.id).then(
      async (c) => ({ id: c.id, start: await codeOf(runtime.start(c.id)) }),
      (e: unknown) => ({ id: undefined, start: e instanceof KubeletError ? e.code : String(e) }),
    );
    expect(made.start).not.toBeUndefined();
    if (made.id !== undefined)
      expect((await cri.containerStatus({ containerId: made.id }, deadline())).status?.state).not.toBe('CONTAINER_RUNNING');
  });
});
