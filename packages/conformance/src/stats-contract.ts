import { statfs } from 'node:fs/promises';
import {
  KubeletError,
  Labels,
  buildContainerName,
  type ContainerRuntime,
  type ContainerSpec,
  type ContainerStatsSource,
} from '@kubelet-ts/core';
import type { TestApi } from './test-api.js';

/** Declared by runtimes that report what containers and pods use (`capabilities.stats`). */
export interface StatsCapability {
  /**
   * For a runtime whose containers run no real code (memory): makes the container report `use`
   * (CPU time so far, memory held), as the contract's busy container would. Default: nothing — the
   * contract's container burns a core and holds HELD_BYTES for real.
   */
  readonly simulate?: (
    runtime: ContainerRuntime,
    containerId: string,
    use: { readonly cpuNs: number; readonly memoryBytes: number },
  ) => void;
  /** Whether a ready sandbox reports its network interface (default true). */
  readonly network?: boolean;
  /** Whether it names its image store on this host (`imageFs`; default true: an engine on this host). */
  readonly imageFs?: boolean;
}

interface StatsContractOptions {
  readonly name: string;
  readonly image: string;
  readonly stats?: StatsCapability;
  readonly testApi: TestApi;
}

const MIB = 1024 * 1024;
/** What the busy container holds: dd's buffer, filled from /dev/zero, kept while dd waits on a pipe nobody reads. */
const HELD_BYTES = 40 * MIB;
/** It burns a core besides (busybox sh's empty loop). */
const BUSY = ['sh', '-c', `dd if=/dev/zero bs=${HELD_BYTES / MIB}M count=1 2>/dev/null | sleep 3600 & while :; do :; done`];
const WAIT_MS = 15_000;
/** How far an engine's time of a figure may be from the moments around the call (its own clock). */
const CLOCK_SLACK_MS = 2_000;

/**
 * The stats part of `runtimeContract`, for runtimes that declare `stats`; for the others its checks
 * are left out. `create` makes a container in the contract's sandbox and removes it after the test.
 */
export function statsContract(
  runtime: () => ContainerRuntime,
  create: (spec: ContainerSpec) => Promise<{ readonly id: string }>,
  sandboxId: () => string,
  options: StatsContractOptions,
): void {
  const { describe, expect, it } = options.testApi;
  describe('stats', () => {
    const capability = options.stats;

    const busy = async (r: ContainerRuntime): Promise<string> => {
      const podId = `stats-${process.pid}`;
      const { id } = await create({
        name: `${buildContainerName(podId, 'busy')}-${Date.now().toString(36)}`,
        podId,
        image: options.image,
        command: BUSY,
        env: {},
        ports: [],
        mounts: [],
        labels: {
          [Labels.manifestId]: podId,
          [Labels.containerName]: 'busy',
          [Labels.specHash]: 'v1-stats',
          [Labels.source]: 'contract',
          [Labels.node]: 'contract-node',
        },
      });
      await r.start(id);
      capability?.simulate?.(r, id, { cpuNs: 0, memoryBytes: HELD_BYTES });
      return id;
    };

    const withStats = (title: string, body: (r: ContainerRuntime, source: ContainerStatsSource) => Promise<void>) =>
      capability === undefined
        ? undefined // not declared: the check below holds the runtime to that, and these are left out
        : it(title, async () => {
            const r = runtime();
            const source = r.capabilities.stats;
            if (source === undefined) throw new Error(`${options.name} is said to report stats, but declares no capabilities.stats`);
            await body(r, source);
          }, 60_000);

    it('declares the stats capability exactly when it reports figures, with stats(id) and sample(request)', () => {
      const declared = runtime().capabilities.stats;
      expect(declared !== undefined).toBe(capability !== undefined);
      if (declared !== undefined) {
        expect(typeof declared.stats).toBe('function');
        expect(typeof declared.sample).toBe('function');
      }
    });

    withStats('reports a busy container: its CPU time grows about a core, its working set holds what it filled', async (r, source) => {
      const id = await busy(r);
      // The engine needs a moment to have the dd buffer filled and counted.
      const deadline = performance.now() + WAIT_MS;
      let first = await source.stats(id);
      while (first.memory.workingSetBytes < HELD_BYTES && performance.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        first = await source.stats(id);
      }
      expect(first.memory.workingSetBytes).toBeGreaterThanOrEqual(HELD_BYTES);
      expect(first.memory.workingSetBytes).toBeLessThanOrEqual(first.memory.usageBytes);
      expect(first.memory.workingSetBytes).toBeLessThan(HELD_BYTES + 20 * MIB);
      const before = Date.now();
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      capability?.simulate?.(r, id, { cpuNs: first.cpu.usageNanoseconds + 1e9, memoryBytes: HELD_BYTES });
      const second = await source.stats(id);
      const after = Date.now();
      expect(second.timestamp).toBeGreaterThanOrEqual(before - CLOCK_SLACK_MS);
      expect(second.timestamp).toBeLessThanOrEqual(after + CLOCK_SLACK_MS);
      // A loop that never sleeps: at least a fifth of a core on a loaded machine, at most one core.
      const cores = (second.cpu.usageNanoseconds - first.cpu.usageNanoseconds) / ((second.timestamp - first.timestamp) * 1e6);
      expect(cores).toBeGreaterThan(0.2);
      expect(cores).toBeLessThan(1.5);
    });

    withStats('samples many at once: a gone container or sandbox is left out; a ready sandbox reports its network', async (r, source) => {
      const id = await busy(r);
      const gone = 'f'.repeat(64);
      const sample = await source.sample({ containers: [id, gone], sandboxes: [sandboxId(), gone] });
      expect([...sample.containers.keys()]).toEqual([id]);
      expect(sample.containers.get(id)!.cpu.usageNanoseconds).toBeGreaterThanOrEqual(0);
      expect([...sample.sandboxes.keys()]).toEqual([sandboxId()]);
      const network = sample.sandboxes.get(sandboxId())!.network;
      if (capability?.network === false) return;
      expect(typeof network?.name).toBe('string');
      for (const figure of [network!.rxBytes, network!.txBytes, network!.rxErrors, network!.txErrors])
        expect(figure).toBeGreaterThanOrEqual(0);
    });

    withStats("names its image store, a directory of this host's file systems, and what the images take there", async (r, source) => {
      expect(source.imageFs !== undefined).toBe(capability?.imageFs !== false);
      if (source.imageFs === undefined) return;
      await busy(r); // an image pulled
      const store = await source.imageFs();
      expect(typeof store.mountpoint).toBe('string');
      const fs = await statfs(store.mountpoint);
      expect(fs.blocks).toBeGreaterThan(0);
      for (const figure of [store.usedBytes, store.inodesUsed]) if (figure !== undefined) expect(figure).toBeGreaterThanOrEqual(0);
      if (capability?.simulate === undefined) expect(store.usedBytes).toBeGreaterThan(0);
    });

    withStats('answers NotFound for an unknown container', async (_r, source) => {
      const error = await source.stats('f'.repeat(64)).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(KubeletError);
      expect((error as KubeletError).code).toBe('NotFound');
    });
  });
}
