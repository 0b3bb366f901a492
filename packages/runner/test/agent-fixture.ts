import { afterEach, beforeEach } from '@jest/globals';
import {
  Labels,
  buildContainerSpec,
  buildSandboxSpec,
  type ContainerManifest,
  type ContainerSpec,
  type ContainerSummary,
  type ManifestSource,
} from '@kubelet-ts/core';
import { MemoryRuntime } from '@kubelet-ts/runtime-memory';
import { ManualClock } from '@kubelet-ts/conformance';
import { Kubelet, type KubeletOptions } from '../src/kubelet.js';
import type { PassResult } from '../src/sync-loop.js';
import { RecordingEventSink } from './helpers.js';

export const HOST = 'node-a';
export const SYNC_MS = 10_000;

/**
 * The agent tests' shared setup: a virtual clock at 1,000,000, an in-memory runtime that pulls
 * anything, recorded events, and agents closed after each test. Call it inside a `describe`; its
 * fields are new for each test (a test that swaps the runtime assigns `f.runtime`).
 */
export function agentFixture() {
  const f = {
    clock: undefined as unknown as ManualClock,
    runtime: undefined as unknown as MemoryRuntime,
    events: undefined as unknown as RecordingEventSink,
    opened: [] as Kubelet[],

    kubelet(sources: readonly ManifestSource[], options: Partial<KubeletOptions> = {}): Kubelet {
      const k = new Kubelet({
        runtime: f.runtime,
        sources,
        clock: f.clock,
        events: f.events,
        hostname: HOST,
        syncFrequencyMs: SYNC_MS,
        ...options,
      });
      f.opened.push(k);
      return k;
    },

    /** Resolves with the next 'pass' event. */
    nextPass(k: Kubelet): Promise<PassResult> {
      return new Promise((resolve) => k.once('pass', resolve));
    },

    ours: (node = HOST) => f.runtime.snapshot().filter((c) => c.labels[Labels.node] === node),
    of: (podId: string, node = HOST) => f.ours(node).filter((c) => c.labels[Labels.manifestId] === podId),
    one(podId: string, container = 'web'): ContainerSummary {
      const found = f.of(podId).filter((c) => c.labels[Labels.containerName] === container);
      if (found.length !== 1) throw new Error(`expected one ${container} container of ${podId}, found ${found.length}`);
      return found[0] as ContainerSummary;
    },

    /** Makes a sandbox and containers for `m` as if an agent on `node` had created them, and starts them. */
    async preexisting(m: ContainerManifest, node = HOST, source = 'b'): Promise<string[]> {
      const ids: string[] = [];
      const sandbox = await f.runtime.runSandbox(buildSandboxSpec(m, { node, source }));
      for (const c of m.containers) {
        f.runtime.addImage(c.image);
        const created = await f.runtime.create(buildContainerSpec(m, c, { node, source }), sandbox.id);
        await f.runtime.start(created.id);
        ids.push(created.id);
      }
      return ids;
    },

    /**
     * Makes and starts a container someone else runs (with `labels`, by default none), in a sandbox
     * of its own that carries none of our labels.
     */
    async foreign(name: string, labels: Record<string, string> = {}): Promise<string> {
      f.runtime.addImage('busybox:1');
      const sandbox = await f.runtime.runSandbox({ name: `${name}-holder`, podId: name, hostname: name, ports: [], labels: {} });
      const spec: ContainerSpec = { name, podId: name, image: 'busybox:1', env: {}, ports: [], mounts: [], labels };
      const created = await f.runtime.create(spec, sandbox.id);
      await f.runtime.start(created.id);
      return created.id;
    },
  };
  beforeEach(() => {
    f.clock = new ManualClock(1_000_000);
    f.runtime = new MemoryRuntime({ clock: f.clock, pullable: 'any' });
    f.events = new RecordingEventSink();
    f.opened = [];
  });
  afterEach(async () => {
    await Promise.all(f.opened.map((k) => k.close()));
  });
  return f;
}
