import type { ContainerSpec, ContainerSummary } from '@kubelet-ts/core';
import { createKubelet, type Kubelet } from '@kubelet-ts/runner';
import { MemoryRuntime } from '@kubelet-ts/runtime-memory';
import { EtcdManifestSource } from '@kubelet-ts/source-etcd';
import { CONTAINERS_PER_POD, GENERATION, type FleetAnswer, type FleetAsk } from './fleet-protocol.js';

/**
 * One process of the fleet (`fleet.ts`): the hosts `from` to `to` - 1, each its own in-memory
 * engine and its own etcd source (its own etcd3 client, gRPC channel and watch stream). It answers
 * its parent's asks over IPC; times are `process.hrtime` (CLOCK_MONOTONIC, the same clock in every
 * process of this machine), so the parent's send time and a child's convergence time subtract.
 */

/**
 * A host's in-memory engine that says when a rollout's containers have all started, without
 * anyone polling it: `create` notes the generation a container was made for, `start` counts the
 * distinct containers of that generation now running, and the last one settles `converged(g)`.
 */
class RolloutWatch extends MemoryRuntime {
  private readonly generationOf = new Map<string, string>();
  private readonly started = new Map<string, Set<string>>();
  private readonly waiting = new Map<string, (at: bigint) => void>();
  private readonly reached = new Map<string, bigint>();

  override async create(spec: ContainerSpec, sandboxId: string): Promise<ContainerSummary> {
    const created = await super.create(spec, sandboxId);
    const generation = spec.env[GENERATION];
    if (generation !== undefined) this.generationOf.set(created.id, generation);
    return created;
  }

  override async start(id: string): Promise<void> {
    await super.start(id);
    const generation = this.generationOf.get(id);
    if (generation === undefined) return;
    const names = this.started.get(generation) ?? new Set<string>();
    this.started.set(generation, names);
    names.add(id);
    if (names.size === CONTAINERS_PER_POD && !this.reached.has(generation)) {
      const at = process.hrtime.bigint();
      this.reached.set(generation, at);
      this.waiting.get(generation)?.(at);
    }
  }

  /** When every container of `generation` was running (at once if it already is). */
  converged(generation: string): Promise<bigint> {
    const at = this.reached.get(generation);
    if (at !== undefined) return Promise.resolve(at);
    return new Promise((resolve) => this.waiting.set(generation, resolve));
  }
}

interface Host {
  readonly runtime: RolloutWatch;
  readonly kubelet: Kubelet;
}

const hosts: Host[] = [];
let before = { rss: 0, heap: 0 };

function memoryNow(): { rss: number; heap: number } {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  gc?.();
  const m = process.memoryUsage();
  return { rss: m.rss, heap: m.heapUsed };
}

/** In batches, so that 1,000 starts or closes do not all wait on one another. */
async function inBatches<T>(items: readonly T[], size: number, work: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(work));
}

/** Times of every host's convergence to `generation`, from `sent`, in ms; hosts not there by `timeoutMs` are left out. */
async function convergence(generation: string, sent: bigint, timeoutMs: number): Promise<number[]> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => (timer = setTimeout(resolve, timeoutMs, undefined)));
  const times = await Promise.all(hosts.map((h) => Promise.race([h.runtime.converged(generation), timeout])));
  clearTimeout(timer); // else the process would wait for it
  return times.filter((t): t is bigint => t !== undefined).map((t) => Number(t - sent) / 1e6);
}

async function answer(ask: FleetAsk): Promise<FleetAnswer> {
  switch (ask.type) {
    case 'start': {
      before = memoryNow();
      for (let i = ask.from; i < ask.to; i++) {
        const name = `host-${i}`;
        const runtime = new RolloutWatch({ pullable: 'any', callLogSize: 100 });
        const source = new EtcdManifestSource({ endpoints: [ask.endpoint], hostname: name });
        // No resource sampling (issue 24, since this scenario was first measured): each agent would read
        // this host's /proc every 10 s, 0.06 ms of the shared loop a second an agent (1,000 idle agents:
        // 10.3 % of a core with it, 3.9 % without), where a real agent reads its own host on its own CPU.
        const kubelet = createKubelet({ runtime, sources: [source], hostname: name, housekeeping: { intervalMs: 0 } });
        hosts.push({ runtime, kubelet });
      }
      await inBatches(hosts, 50, (h) => h.kubelet.start());
      return { type: 'started' };
    }
    case 'converge':
      return { type: 'converged', times: await convergence(ask.generation, ask.sent, ask.timeoutMs) };
    case 'memory': {
      const now = memoryNow();
      return { type: 'memory', rss: now.rss - before.rss, heap: now.heap - before.heap };
    }
    case 'close':
      await inBatches(hosts, 100, (h) => h.kubelet.close());
      return { type: 'closed' };
  }
}

process.on('message', (ask: FleetAsk) => {
  answer(ask).then(
    (a) => process.send?.(a),
    (error: unknown) =>
      process.send?.({ type: 'failed', message: error instanceof Error ? (error.stack ?? error.message) : String(error) }),
  );
});
// The parent gone (it ended or was killed): nothing here outlives it.
process.on('disconnect', () => process.exit(0));
