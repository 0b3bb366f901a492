import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { checkedManifest } from '@kubelet-ts/conformance';
import {
  KubeletError,
  Labels,
  buildContainerSpec,
  buildSandboxSpec,
  type ContainerManifest,
  type ContainerSpec,
  type SandboxSpec,
} from '@kubelet-ts/core';
import { criCgroupParent, criEndpoint, TEST_IMAGES } from '@kubelet-ts/testkit';
import { connectCri } from '../src/cri-client.js';
import type { CriApi } from '../src/index.js';
import { criFixture, eventually, freePort, httpServer, type CriFixture } from './fixture.js';

const NODE = `cri-test-${process.pid}`;
const deadline = () => Date.now() + 30_000;

describe('CriRuntime on a real containerd', () => {
  let f: CriFixture;
  /** A CRI client of the test's own, for what the agent did and for foreign things. */
  let cri: CriApi;
  const sandboxes: string[] = [];

  beforeAll(async () => {
    f = await criFixture();
    cri = connectCri(criEndpoint());
  });

  afterEach(async () => {
    for (const id of sandboxes.splice(0)) await f.runtime.removeSandbox(id, { volumes: true });
  });

  afterAll(async () => {
    cri?.close();
    await f?.close();
  });

  const pod = (m: ContainerManifest) => ({
    sandbox: buildSandboxSpec(m, { node: NODE, source: 'test' }),
    containers: m.containers.map((c) => buildContainerSpec(m, c, { node: NODE, source: 'test' })),
  });
  const run = async (spec: SandboxSpec, runtime = f.runtime) => {
    const s = await runtime.runSandbox(spec);
    sandboxes.push(s.id);
    return s;
  };
  const started = async (spec: ContainerSpec, sandboxId: string, runtime = f.runtime) => {
    const c = await runtime.create(spec, sandboxId);
    await runtime.start(c.id);
    return c;
  };
  const codeOf = (call: Promise<unknown>) =>
    call.then(
      () => undefined,
      (e: unknown) => (e instanceof KubeletError ? e.code : String(e)),
    );

  it("serves a pod's port on 127.0.0.1 of the host, through the sandbox's port mapping", async () => {
    const port = await freePort();
    const m = checkedManifest({
      id: 'web',
      containers: [
        {
          name: 'server',
          image: TEST_IMAGES.busybox,
          command: httpServer(8080, 'from-cri'),
          ports: [{ containerPort: 8080, hostPort: port }],
        },
      ],
    });
    const { sandbox, containers } = pod(m);
    const s = await run(sandbox);
    await started(containers[0]!, s.id);
    expect(await eventually(async () => (await fetch(`http://127.0.0.1:${port}/`)).text())).toContain('from-cri');
    // The mapping is the sandbox's, on the configured host address.
    const { status } = await cri.podSandboxStatus({ podSandboxId: s.id }, deadline());
    expect(status?.labels).toEqual(sandbox.labels);
  });

  it('refuses a host port a process on the host listens on, and leaves no sandbox', async () => {
    const { createServer } = await import('node:net');
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    try {
      const port = (holder.address() as { port: number }).port;
      const m = checkedManifest({
        id: 'taken',
        containers: [{ name: 'main', image: TEST_IMAGES.busybox, ports: [{ containerPort: 80, hostPort: port }] }],
      });
      const error = (await f.runtime.runSandbox(pod(m).sandbox).catch((e: unknown) => e)) as KubeletError;
      expect(error.code).toBe('Conflict');
      expect(error.message).toContain(`127.0.0.1:${port}/tcp`);
      expect((await f.runtime.listSandboxes()).some((s) => s.labels[Labels.sandbox] === 'taken')).toBe(false);
    } finally {
      await new Promise((resolve) => holder.close(resolve));
    }
  });

  it('sets the memory limit and CPU shares, visible in the container and in inspect', async () => {
    const m = checkedManifest({
      id: 'limits',
      containers: [{ name: 'main', image: TEST_IMAGES.busybox, command: ['sleep', '3600'], memory: 48 * 1024 * 1024, cpu: 256 }],
    });
    const { sandbox, containers } = pod(m);
    const s = await run(sandbox);
    const c = await started(containers[0]!, s.id);
    // cgroup v1 (this machine) or v2.
    const read = await f.runtime.exec(
      c.id,
      ['sh', '-c', 'cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max'],
      5000,
    );
    expect(read.output.trim()).toBe(String(48 * 1024 * 1024));
    const details = await f.runtime.inspect(c.id);
    expect(details.spec.memory).toBe(48 * 1024 * 1024);
    expect(details.spec.cpuShares).toBe(containers[0]!.cpuShares);
    expect(details.spec.command).toEqual(['sleep', '3600']);
    expect(details.spec.env).toMatchObject(containers[0]!.env);
  });

  it('mounts the pod volumes as host directories under the root; removing the sandbox with volumes removes them', async () => {
    const m = checkedManifest({
      id: 'vols',
      volumes: [{ name: 'data' }],
      containers: [
        {
          name: 'writer',
          image: TEST_IMAGES.busybox,
          command: ['sh', '-c', 'echo written > /data/file && exec sleep 3600'],
          volumeMounts: [{ name: 'data', mountPath: '/data' }],
        },
        {
          name: 'reader',
          image: TEST_IMAGES.busybox,
          command: ['sleep', '3600'],
          volumeMounts: [{ name: 'data', mountPath: '/data', readOnly: true }],
        },
      ],
    });
    const { sandbox, containers } = pod(m);
    const s = await f.runtime.runSandbox(sandbox);
    await started(containers[0]!, s.id);
    const reader = await started(containers[1]!, s.id);
    expect(await eventually(async () => readFile(join(f.volumesRoot, 'vols', 'data', 'file'), 'utf8'))).toBe('written\n');
    expect((await f.runtime.exec(reader.id, ['cat', '/data/file'], 5000)).output).toBe('written\n');
    expect((await f.runtime.exec(reader.id, ['sh', '-c', 'echo no > /data/other'], 5000)).exitCode).not.toBe(0);
    expect((await f.runtime.inspect(reader.id)).spec.mounts).toEqual([{ volume: 'data', containerPath: '/data', readOnly: true }]);
    await f.runtime.removeSandbox(s.id, { volumes: true });
    expect(await readdir(f.volumesRoot)).toEqual([]);
  });

  it('refuses a volume name that could leave the root', async () => {
    const m = checkedManifest({ id: 'escape', containers: [{ name: 'main', image: TEST_IMAGES.busybox }] });
    const { sandbox, containers } = pod(m);
    const s = await run(sandbox);
    const bad = { ...containers[0]!, mounts: [{ volume: '../../etc', containerPath: '/x', readOnly: false }] };
    expect(await codeOf(f.runtime.create(bad, s.id))).toBe('InvalidManifest');
  });

  it('gives an exited container its start and end times and exit code (what the agent reads back)', async () => {
    const m = checkedManifest({ id: 'exits', containers: [{ name: 'main', image: TEST_IMAGES.busybox, command: ['sh', '-c', 'exit 3'] }] });
    const { sandbox, containers } = pod(m);
    const s = await run(sandbox);
    const c = await started(containers[0]!, s.id);
    let details = await f.runtime.inspect(c.id);
    for (let i = 0; details.state !== 'exited' && i < 50; i++) {
      await new Promise((r) => setTimeout(r, 100));
      details = await f.runtime.inspect(c.id);
    }
    expect(details).toMatchObject({ state: 'exited', exitCode: 3 });
    expect(details.startedAt).toBeGreaterThan(0);
    expect(details.finishedAt).toBeGreaterThanOrEqual(details.startedAt!);
    expect((await f.runtime.list()).find((x) => x.id === c.id)?.state).toBe('exited');
  });

  it('tells a container’s exit only once its list shows it exited (containerd tells it before its CRI plugin records it)', async () => {
    const names = Array.from({ length: 12 }, (_, i) => `c${i}`);
    const m = checkedManifest({
      id: 'quick-exits',
      containers: names.map((name) => ({ name, image: TEST_IMAGES.busybox, command: ['sh', '-c', 'exit 3'] })),
    });
    const { sandbox, containers } = pod(m);
    const s = await run(sandbox);
    const abort = new AbortController();
    const listedOnExit = new Map<string, string | undefined>();
    const made = new Set<string>();
    const watching = (async () => {
      for await (const event of f.runtime.events(abort.signal)) {
        if (event.type !== 'exited' || !made.has(event.containerId)) continue;
        // What the agent does on an exit: list the pod, now.
        const listed = await f.runtime.list({ podId: 'quick-exits' });
        listedOnExit.set(event.containerId, listed.find((c) => c.id === event.containerId)?.state);
        if (listedOnExit.size === names.length) return;
      }
    })();
    await new Promise((r) => setTimeout(r, 200)); // subscribed
    for (const spec of containers) {
      const c = await f.runtime.create(spec, s.id);
      made.add(c.id);
      await f.runtime.start(c.id);
    }
    const deadline = setTimeout(() => abort.abort(), 30_000);
    await watching;
    clearTimeout(deadline);
    abort.abort();
    expect([...listedOnExit.values()]).toEqual(names.map(() => 'exited'));
  });

  it('adopts after a restart: a new CriRuntime lists the pod and adds a container to its sandbox', async () => {
    const port = await freePort();
    const m = checkedManifest({
      id: 'adopt',
      containers: [
        {
          name: 'server',
          image: TEST_IMAGES.busybox,
          command: httpServer(8080, 'adopted'),
          ports: [{ containerPort: 8080, hostPort: port }],
        },
        { name: 'client', image: TEST_IMAGES.busybox, command: ['sleep', '3600'] },
      ],
    });
    const { sandbox, containers } = pod(m);
    const before = f.another();
    const s = await run(sandbox, before);
    const server = await started(containers[0]!, s.id, before);
    before.close();

    const after = f.another();
    const sandboxSeen = (await after.listSandboxes()).find((x) => x.id === s.id);
    expect(sandboxSeen).toMatchObject({ name: sandbox.name, state: 'ready', labels: sandbox.labels });
    const seen = (await after.list()).find((x) => x.id === server.id);
    expect(seen).toMatchObject({ name: containers[0]!.name, state: 'running', image: TEST_IMAGES.busybox, labels: containers[0]!.labels });
    // The sandbox's config comes back from the runtime: the new container shares its namespace.
    const client = await started(containers[1]!, s.id, after);
    expect(
      await eventually(async () => (await after.exec(client.id, ['wget', '-q', '-O', '-', 'http://127.0.0.1:8080/'], 5000)).output),
    ).toContain('adopted');
  });

  it('leaves a sandbox and container made directly through CRI alone (unlabelled: foreign)', async () => {
    const port = await freePort();
    const config = {
      metadata: { name: `foreign-${process.pid}`, uid: `foreign-${process.pid}`, namespace: 'someone-else', attempt: 0 },
      hostname: 'foreign',
      portMappings: [{ protocol: 'TCP' as const, containerPort: 80, hostPort: port, hostIp: '127.0.0.1' }],
      labels: { owner: 'someone-else' },
      linux: { cgroupParent: criCgroupParent() },
    };
    const { podSandboxId } = await cri.runPodSandbox({ config }, deadline());
    try {
      const { containerId } = await cri.createContainer(
        {
          podSandboxId,
          config: {
            metadata: { name: 'theirs', attempt: 0 },
            image: { image: TEST_IMAGES.busybox },
            command: ['sleep', '3600'],
            labels: { owner: 'someone-else' },
          },
          sandboxConfig: config,
        },
        deadline(),
      );
      await cri.startContainer({ containerId }, deadline());

      expect((await f.runtime.list()).some((c) => c.id === containerId)).toBe(false);
      expect((await f.runtime.listSandboxes()).some((s) => s.id === podSandboxId)).toBe(false);
      expect((await f.runtime.list({ includeForeign: true })).some((c) => c.id === containerId)).toBe(true);
      expect((await f.runtime.listSandboxes({ includeForeign: true })).some((s) => s.id === podSandboxId)).toBe(true);

      // Its host port counts: our pod cannot take it.
      const m = checkedManifest({
        id: 'clash',
        containers: [{ name: 'main', image: TEST_IMAGES.busybox, ports: [{ containerPort: 80, hostPort: port }] }],
      });
      const error = (await f.runtime.runSandbox(pod(m).sandbox).catch((e: unknown) => e)) as KubeletError;
      expect(error.code).toBe('Conflict');
      expect(error.message).toContain(config.metadata.name);

      // Our pods come and go; theirs runs on.
      const ours = checkedManifest({ id: 'ours', containers: [{ name: 'main', image: TEST_IMAGES.busybox, command: ['sleep', '3600'] }] });
      const { sandbox, containers } = pod(ours);
      const s = await f.runtime.runSandbox(sandbox);
      await started(containers[0]!, s.id);
      await f.runtime.removeSandbox(s.id, { volumes: true });
      expect((await cri.containerStatus({ containerId }, deadline())).status?.state).toBe('CONTAINER_RUNNING');
      expect((await cri.podSandboxStatus({ podSandboxId }, deadline())).status?.state).toBe('SANDBOX_READY');
    } finally {
      await cri.stopPodSandbox({ podSandboxId }, deadline());
      await cri.removePodSandbox({ podSandboxId }, deadline());
    }
  });

  it('refuses a container in a sandbox it does not have (NotFound, as the contract says), and in one that is not ready', async () => {
    const m = checkedManifest({ id: 'nosandbox', containers: [{ name: 'main', image: TEST_IMAGES.busybox, command: ['sleep', '3600'] }] });
    const { sandbox, containers } = pod(m);
    expect(await codeOf(f.runtime.create(containers[0]!, 'f'.repeat(64)))).toBe('NotFound');
    const s = await run(sandbox);
    await f.runtime.stopSandbox(s.id);
    expect(await codeOf(f.runtime.create(containers[0]!, s.id))).toBe('Conflict');
  });

  it('keeps a container name unique across sandboxes, as the contract (and Docker) does; CRI only within one', async () => {
    const m = checkedManifest({ id: 'twice', containers: [{ name: 'main', image: TEST_IMAGES.busybox, command: ['sleep', '3600'] }] });
    const { sandbox, containers } = pod(m);
    const first = await run(sandbox);
    const second = await run({ ...sandbox, name: `${sandbox.name.slice(0, -8)}00000000` });
    await f.runtime.create(containers[0]!, first.id);
    const error = (await f.runtime.create(containers[0]!, second.id).catch((e: unknown) => e)) as KubeletError;
    expect(error.code).toBe('Conflict');
    expect(error.message).toContain(containers[0]!.name);
  });

  it("checks a new container's name against its own pod's containers only, not the whole host's list", async () => {
    // The whole list on every create cost containerd and the agent a decode of every container on
    // the host (bench §9); a name the agent makes carries its pod's id, so the pod's list is enough.
    const asked: unknown[] = [];
    const listing: CriApi = {
      ...cri,
      listContainers: (request, until) => (asked.push(request), cri.listContainers(request, until)),
      close: () => undefined, // the test's own client, closed by the test
    };
    const runtime = f.another({ cri: listing });
    const m = checkedManifest({ id: 'named', containers: [{ name: 'main', image: TEST_IMAGES.busybox, command: ['sleep', '3600'] }] });
    const { sandbox, containers } = pod(m);
    const made = await run(sandbox);
    asked.length = 0;
    await runtime.create(containers[0]!, made.id);
    expect(asked).toEqual([{ filter: { labelSelector: { [Labels.manifestId]: 'named' } } }]);
    // And the name is still refused when that pod has it.
    const error = (await runtime.create(containers[0]!, made.id).catch((e: unknown) => e)) as KubeletError;
    expect(error.code).toBe('Conflict');
  });

  it("lists no sandbox to run one, but its own pod's when the run fails (a taken name); every sandbox for published ports", async () => {
    // The whole list at every pod start cost containerd and the agent a decode of every sandbox on
    // the host (bench §9); the pod's own list cost a call a pod start, for a name containerd reserves itself.
    const asked: unknown[] = [];
    const listing: CriApi = {
      ...cri,
      listPodSandbox: (request, until) => (asked.push(request), cri.listPodSandbox(request, until)),
      close: () => undefined, // the test's own client, closed by the test
    };
    const runtime = f.another({ cri: listing });
    const plain = pod(checkedManifest({ id: 'quiet', containers: [{ name: 'main', image: TEST_IMAGES.busybox }] })).sandbox;
    const first = await run(plain, runtime);
    expect(asked).toEqual([]);
    // And the name is still refused when that pod has it, naming the sandbox that has it.
    const taken = (await runtime.runSandbox(plain).catch((e: unknown) => e)) as KubeletError;
    expect(taken.code).toBe('Conflict');
    expect(taken.message).toContain(`the name is taken by sandbox ${first.id}`);
    expect(asked).toEqual([{ filter: { labelSelector: { [Labels.sandbox]: 'quiet' } } }]);
    asked.length = 0;
    const port = await freePort();
    const published = checkedManifest({
      id: 'published',
      containers: [{ name: 'main', image: TEST_IMAGES.busybox, ports: [{ containerPort: 80, hostPort: port }] }],
    });
    await run(pod(published).sandbox, runtime);
    expect(asked[0]).toEqual({});
  });

  it('sees a sandbox whose holder process died as notready, and creates nothing in it', async () => {
    const m = checkedManifest({ id: 'holder', containers: [{ name: 'main', image: TEST_IMAGES.busybox, command: ['sleep', '3600'] }] });
    const { sandbox, containers } = pod(m);
    const s = await run(sandbox);
    // What an OOM kill or a crash of the pause process does, done with containerd's own tool.
    const socket = criEndpoint().replace(/^unix:\/\//, '');
    await promisify(execFile)('ctr', ['--address', socket, '--namespace', 'k8s.io', 'tasks', 'kill', '--signal', 'SIGKILL', s.id]);
    expect(
      await eventually(async () => ((await f.runtime.listSandboxes()).find((x) => x.id === s.id)?.state === 'notready' ? 'notready' : '')),
    ).toBe('notready');
    expect(await codeOf(f.runtime.create(containers[0]!, s.id))).toBe('Conflict');
  });

  it('answers an exec that outlives its deadline with Timeout', async () => {
    const m = checkedManifest({ id: 'slow', containers: [{ name: 'main', image: TEST_IMAGES.busybox, command: ['sleep', '3600'] }] });
    const { sandbox, containers } = pod(m);
    const s = await run(sandbox);
    const c = await started(containers[0]!, s.id);
    const began = Date.now();
    const error = (await f.runtime.exec(c.id, ['sleep', '10'], 500).catch((e: unknown) => e)) as KubeletError;
    expect(error.code).toBe('Timeout');
    expect(Date.now() - began).toBeLessThan(3000);
  });

  it('answers Unavailable, naming the socket and how to start containerd, when nothing listens', async () => {
    const nowhere = f.another({ endpoint: 'unix:///tmp/kubelet-ts-no-cri.sock' });
    const error = (await nowhere.list().catch((e: unknown) => e)) as KubeletError;
    expect(error.code).toBe('Unavailable');
    expect(error.message).toContain('/tmp/kubelet-ts-no-cri.sock');
    expect(error.message).toContain('scripts/containerd.sh start');
  });

  it('closes its channel: a call after close fails instead of reconnecting', async () => {
    const closed = f.another();
    await closed.version();
    closed.close();
    await expect(closed.version()).rejects.toBeInstanceOf(KubeletError);
  });
});
