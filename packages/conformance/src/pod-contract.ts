import {
  KubeletError,
  Labels,
  buildContainerName,
  sandboxHash,
  type ContainerRuntime,
  type ContainerSpec,
  type PortBinding,
  type SandboxSpec,
} from '@kubelet-ts/core';
import { isIPv4 } from 'node:net';
import { podFixture } from './pod-fixture.js';
import type { TestApi } from './test-api.js';

/**
 * Declared by runtimes whose pods have a real network: how to serve and fetch a word over TCP with
 * the runtime's test image (e.g. busybox `httpd` and `wget`).
 */
export interface PodNetworkCapability {
  /** A command that serves `reply` on TCP `port` until stopped. */
  readonly server: (port: number, reply: string) => readonly string[];
  /** A command, run through exec, that prints what is served on 127.0.0.1:`port`. */
  readonly fetch: (port: number) => readonly string[];
  /** A free host port to publish on 127.0.0.1 for the test. */
  readonly hostPort: () => Promise<number>;
}

interface PodContractOptions {
  readonly name: string;
  readonly image: string;
  readonly command: readonly string[];
  readonly podNetwork?: PodNetworkCapability;
  readonly testApi: TestApi;
}

/** The pod half of `runtimeContract`: sandboxes, and containers in them. */
export function podContract(runtime: () => ContainerRuntime, options: PodContractOptions): void {
  const { describe, expect, it } = options.testApi;
  describe('pods', () => {
    const net = options.podNetwork;
    const { run, withNetwork } = podFixture(runtime, options);

    const sandboxSpec = (podId: string, ports: readonly PortBinding[] = []): SandboxSpec => ({
      name: buildContainerName(podId, 'POD'),
      podId,
      hostname: podId,
      ports,
      labels: {
        [Labels.sandbox]: podId,
        [Labels.sandboxHash]: sandboxHash(ports),
        [Labels.node]: 'contract-node',
        [Labels.source]: 'contract',
      },
    });
    const spec = (podId: string, container: string, command = options.command): ContainerSpec => ({
      name: buildContainerName(podId, container),
      podId,
      image: options.image,
      command,
      env: {},
      ports: [],
      mounts: [],
      labels: {
        [Labels.manifestId]: podId,
        [Labels.containerName]: container,
        [Labels.specHash]: 'v1-0123456789abcdef',
        [Labels.source]: 'contract',
        [Labels.node]: 'contract-node',
      },
    });
    const code = (call: Promise<unknown>) =>
      call.then(
        () => undefined,
        (e: unknown) => (e instanceof KubeletError ? e.code : String(e)),
      );

    it('runs a ready sandbox whose labels round-trip, and lists it; foreign ones only when asked', async () => {
      const s = sandboxSpec('pod-a');
      const sandbox = await run(s);
      expect(sandbox).toMatchObject({ name: s.name, state: 'ready' });
      const listed = (await runtime().listSandboxes()).find((x) => x.id === sandbox.id);
      expect(listed?.labels).toMatchObject(s.labels);
      expect(listed?.state).toBe('ready');
      const foreign = await run({ ...sandboxSpec('pod-a-foreign'), labels: { owner: 'someone-else' } });
      expect((await runtime().listSandboxes()).some((x) => x.id === foreign.id)).toBe(false);
      expect((await runtime().listSandboxes({ includeForeign: true })).some((x) => x.id === foreign.id)).toBe(true);
    });

    it("lists a ready sandbox of its own network with the pod's IP (status.podIP), the same by podId, and one apart from another's", async () => {
      const a = await run(sandboxSpec('pod-ip-a'));
      const b = await run(sandboxSpec('pod-ip-b'));
      const all = await runtime().listSandboxes();
      const ipOf = (id: string) => all.find((x) => x.id === id)?.ip;
      expect(isIPv4(ipOf(a.id) ?? '')).toBe(true);
      expect(ipOf(a.id)?.startsWith('127.')).toBe(false);
      expect(ipOf(b.id)).not.toBe(ipOf(a.id));
      expect((await runtime().listSandboxes({ podId: 'pod-ip-a' })).map((x) => x.ip)).toEqual([ipOf(a.id)]);
    });

    it("lists one pod's containers and sandbox with podId, and nothing of another pod or a foreign one", async () => {
      const mine = await run(sandboxSpec('pod-f'));
      const other = await run(sandboxSpec('pod-f-other'));
      const foreign = await run({ ...sandboxSpec('pod-f-foreign'), labels: { owner: 'someone-else' } });
      const a = await runtime().create(spec('pod-f', 'one'), mine.id);
      const b = await runtime().create(spec('pod-f', 'two'), mine.id);
      const c = await runtime().create(spec('pod-f-other', 'one'), other.id);
      const d = await runtime().create({ ...spec('pod-f-foreign', 'one'), labels: { owner: 'someone-else' } }, foreign.id);
      const ids = (listed: readonly { readonly id: string }[]) => listed.map((x) => x.id).sort();
      expect(ids(await runtime().list({ podId: 'pod-f' }))).toEqual([a.id, b.id].sort());
      expect(ids(await runtime().list({ podId: 'pod-f-other' }))).toEqual([c.id]);
      expect(ids(await runtime().listSandboxes({ podId: 'pod-f' }))).toEqual([mine.id]);
      expect(await runtime().list({ podId: 'pod-none' })).toEqual([]);
      expect(await runtime().listSandboxes({ podId: 'pod-none' })).toEqual([]);
      // The whole host's list still has them all (the foreign container only when asked).
      const all = ids(await runtime().list());
      expect([a.id, b.id, c.id].every((id) => all.includes(id))).toBe(true);
      expect(all.includes(d.id)).toBe(false);
    });

    it('creates containers in a sandbox, and refuses an unknown sandbox with NotFound', async () => {
      const sandbox = await run(sandboxSpec('pod-b'));
      const c = await runtime().create(spec('pod-b', 'main'), sandbox.id);
      await runtime().start(c.id);
      expect((await runtime().inspect(c.id)).state).toBe('running');
      expect(await code(runtime().create(spec('pod-b', 'other'), 'f'.repeat(64)))).toBe('NotFound');
    });

    it('removes a sandbox with every container in it, and nothing is left; removing it again succeeds', async () => {
      const sandbox = await run(sandboxSpec('pod-c'));
      const running = await runtime().create(spec('pod-c', 'one'), sandbox.id);
      await runtime().start(running.id);
      const created = await runtime().create(spec('pod-c', 'two'), sandbox.id);
      await runtime().removeSandbox(sandbox.id, { volumes: true });
      const ids = new Set((await runtime().list({ includeForeign: true })).map((c) => c.id));
      expect(ids.has(running.id) || ids.has(created.id)).toBe(false);
      expect((await runtime().listSandboxes({ includeForeign: true })).some((x) => x.id === sandbox.id)).toBe(false);
      await runtime().removeSandbox(sandbox.id, { volumes: true });
    });

    it('sees a stopped sandbox as notready, with its containers stopped; stopping it again succeeds', async () => {
      const sandbox = await run(sandboxSpec('pod-d'));
      const c = await runtime().create(spec('pod-d', 'main'), sandbox.id);
      await runtime().start(c.id);
      await runtime().stopSandbox(sandbox.id);
      expect((await runtime().listSandboxes()).find((x) => x.id === sandbox.id)?.state).toBe('notready');
      expect((await runtime().inspect(c.id)).state).not.toBe('running');
      await runtime().stopSandbox(sandbox.id);
      expect(await code(runtime().stopSandbox('f'.repeat(64)))).toBe('NotFound');
    });

    it("publishes a pod's host port once: a second sandbox claiming it is refused and leaves nothing", async () => {
      const port = net === undefined ? 18_080 : await net.hostPort();
      const ports: PortBinding[] = [{ containerPort: 8080, hostPort: port, protocol: 'TCP' }];
      await run(sandboxSpec('pod-e', ports));
      const second = sandboxSpec('pod-e-two', ports);
      expect(await code(runtime().runSandbox(second))).toBeDefined();
      expect((await runtime().listSandboxes({ includeForeign: true })).some((x) => x.name === second.name)).toBe(false);
    });

    withNetwork('lets a second container reach the first on 127.0.0.1 (through exec)', async (n) => {
      const sandbox = await run(sandboxSpec('pod-f'));
      const server = await runtime().create(spec('pod-f', 'server', n.server(8080, 'pod-local')), sandbox.id);
      await runtime().start(server.id);
      const client = await runtime().create(spec('pod-f', 'client'), sandbox.id);
      await runtime().start(client.id);
      expect(await eventually(async () => (await runtime().exec(client.id, n.fetch(8080), 5000)).output)).toContain('pod-local');
    });

    withNetwork("serves a container's port on the sandbox's published host port (127.0.0.1)", async (n) => {
      const port = await n.hostPort();
      const sandbox = await run(sandboxSpec('pod-g', [{ containerPort: 8080, hostPort: port, protocol: 'TCP' }]));
      const server = await runtime().create(spec('pod-g', 'server', n.server(8080, 'published')), sandbox.id);
      await runtime().start(server.id);
      expect(await eventually(async () => (await fetch(`http://127.0.0.1:${port}/`)).text())).toContain('published');
    });
  });
}

/** The first answer that contains something, retried for up to 10 s (a server needs a moment to listen). */
async function eventually(read: () => Promise<string>): Promise<string> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      const text = await read();
      if (text.trim() !== '' || Date.now() > deadline) return text;
    } catch (error) {
      if (Date.now() > deadline) throw error;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}
