import {
  Labels,
  identityOf,
  validateManifest,
  type ContainerManifest,
  type ContainerRuntime,
  type ContainerSummary,
  type ManifestSource,
} from '@kubelet-ts/core';
import { StaticManifestSource } from '@kubelet-ts/manifest';
import { resolveTestApi, type TestApiOption } from './test-api.js';

/** The slice of an agent the scenarios drive; `createKubelet` from `@kubelet-ts/runner` fits. */
export interface ScenarioAgent {
  start(): Promise<void>;
  sync(): Promise<{ readonly failures: number; readonly error?: Error }>;
  close(): Promise<void>;
}

/** What `runnerScenarios` takes: how to make the runtime and the agent under test, and an image and command that run until stopped. */
export interface RunnerScenarioOptions extends TestApiOption {
  readonly makeRuntime: () => ContainerRuntime | Promise<ContainerRuntime>;
  readonly makeAgent: (parts: { runtime: ContainerRuntime; sources: ManifestSource[]; hostname: string }) => ScenarioAgent;
  /** An image the runtime has whose `command` runs until stopped, and stops promptly on SIGTERM. */
  readonly image: string;
  readonly command: readonly string[];
}

/**
 * The agent's main scenarios, run against a runtime: the same rules must hold on the in-memory
 * runtime and on a real engine, which is what proves the fake behaves like the engine.
 */
export function runnerScenarios(name: string, options: RunnerScenarioOptions): void {
  const { afterAll, beforeAll, describe, expect, it } = resolveTestApi(options.testApi, `runnerScenarios('${name}')`);
  describe(`runner scenarios: ${name}`, () => {
    const node = `scenario-${name}-${process.pid}`.toLowerCase();
    let runtime: ContainerRuntime;
    const foreign: string[] = [];
    const foreignSandboxes: string[] = [];

    const pod = (id: string, containers: Array<{ name: string; env?: string }>): ContainerManifest => {
      const r = validateManifest({
        id,
        containers: containers.map((c) => ({
          name: c.name,
          image: options.image,
          command: options.command,
          env: [{ name: 'VERSION', value: c.env ?? '1' }],
        })),
      });
      if (!r.ok) throw new Error(JSON.stringify(r.errors));
      return r.manifest;
    };

    /** Our containers on this node, by "pod/container". */
    const ours = async (): Promise<Map<string, ContainerSummary>> => {
      const out = new Map<string, ContainerSummary>();
      for (const c of await runtime.list()) {
        const id = identityOf(c.labels);
        if (id?.node === node) out.set(`${id.podId}/${id.container}`, c);
      }
      return out;
    };

    /** Runs `body` with a started agent on one source, then closes it. */
    const withAgent = async (source: StaticManifestSource, body: (agent: ScenarioAgent) => Promise<void>) => {
      const agent = options.makeAgent({ runtime, sources: [source], hostname: node });
      await agent.start();
      try {
        await body(agent);
      } finally {
        await agent.close();
      }
    };

    const converge = async (agent: ScenarioAgent) => {
      const result = await agent.sync();
      expect(result.error).toBeUndefined();
      expect(result.failures).toBe(0);
    };

    beforeAll(async () => {
      runtime = await options.makeRuntime();
    });

    afterAll(async () => {
      if (runtime === undefined) return; // it never started: nothing was made
      for (const c of await runtime.list({ includeForeign: true })) {
        if (identityOf(c.labels)?.node === node || foreign.includes(c.id)) await runtime.remove(c.id, { force: true });
      }
      for (const s of await runtime.listSandboxes({ includeForeign: true })) {
        if (s.labels[Labels.node] === node || foreignSandboxes.includes(s.id)) await runtime.removeSandbox(s.id, { volumes: true });
      }
    });

    it('creates what is desired, changes only what changed, removes what is no longer desired', async () => {
      const source = new StaticManifestSource('scenario', [pod('web', [{ name: 'app' }, { name: 'side' }])]);
      await withAgent(source, async (agent) => {
        await converge(agent);
        const first = await ours();
        expect([...first.keys()].sort()).toEqual(['web/app', 'web/side']);
        expect([...first.values()].every((c) => c.state === 'running')).toBe(true);
        expect(first.get('web/app')?.labels[Labels.source]).toBe('scenario');

        source.set([pod('web', [{ name: 'app', env: '2' }, { name: 'side' }])]);
        await converge(agent);
        const second = await ours();
        expect(second.get('web/app')?.id).not.toBe(first.get('web/app')?.id);
        expect(second.get('web/side')?.id).toBe(first.get('web/side')?.id);
        expect(second.size).toBe(2);

        source.set([]);
        await converge(agent);
        expect((await ours()).size).toBe(0);
      });
    });

    it('adopts what a previous agent started: no restart, no duplicate', async () => {
      const manifests = [pod('adopt', [{ name: 'app' }])];
      await withAgent(new StaticManifestSource('scenario', manifests), converge);
      const before = await ours();
      await withAgent(new StaticManifestSource('scenario', manifests), converge);
      const after = await ours();
      expect(after.size).toBe(1);
      expect(after.get('adopt/app')?.id).toBe(before.get('adopt/app')?.id);
      expect((await runtime.inspect(after.get('adopt/app')!.id)).startedAt).toBe(
        (await runtime.inspect(before.get('adopt/app')!.id)).startedAt,
      );
      await withAgent(new StaticManifestSource('scenario', []), converge);
    });

    it("never touches a foreign container or another node's", async () => {
      const spec = (suffix: string, labels: Record<string, string>) => ({
        name: `scenario-${suffix}-${process.pid}`,
        podId: labels[Labels.manifestId] ?? 'foreign',
        image: options.image,
        command: options.command,
        env: {},
        ports: [],
        mounts: [],
        labels,
      });
      // In a sandbox of their own, as any client of a CRI runtime makes them (it has no other kind).
      const holder = await runtime.runSandbox({
        name: `scenario-foreign-pod-${process.pid}`,
        podId: 'foreign',
        hostname: 'foreign',
        ports: [],
        labels: { owner: 'someone-else' },
      });
      foreignSandboxes.push(holder.id);
      const mine = await runtime.create(spec('foreign', { owner: 'someone-else' }), holder.id);
      foreign.push(mine.id);
      await runtime.start(mine.id);
      const other = await runtime.create(
        spec('other-node', { [Labels.manifestId]: 'x', [Labels.containerName]: 'y', [Labels.node]: `${node}-elsewhere` }),
        holder.id,
      );
      foreign.push(other.id);
      await runtime.start(other.id);

      await withAgent(new StaticManifestSource('scenario', []), converge);
      const all = await runtime.list({ includeForeign: true });
      expect(all.find((c) => c.id === mine.id)?.state).toBe('running');
      expect(all.find((c) => c.id === other.id)?.state).toBe('running');
    });
  });
}
