import { afterEach, beforeEach } from '@jest/globals';
import { Labels, buildContainerName, type ContainerSpec, type ExecResult, type Probe } from '@kubelet-ts/core';
import { MemoryRuntime } from '@kubelet-ts/runtime-memory';
import { ManualClock } from '@kubelet-ts/conformance';
import { PlanExecutor } from '../src/executor.js';
import type { HttpCheckOptions, NetworkCheck } from '../src/network-check.js';
import { Prober, type ProberOptions, type ProbeTarget } from '../src/prober.js';
import { RecordingEventSink } from './helpers.js';

export const T0 = 1_000_000;
export const EXEC: Probe = {
  exec: { command: ['cat', '/tmp/healthy'] },
  initialDelaySeconds: 5,
  periodSeconds: 10,
  timeoutSeconds: 1,
  failureThreshold: 3,
};
export const HTTP: Probe = {
  httpGet: { path: '/healthz', port: 80 },
  initialDelaySeconds: 0,
  periodSeconds: 10,
  timeoutSeconds: 1,
  failureThreshold: 3,
};
export const TCP: Probe = { tcpSocket: { port: 6379 }, initialDelaySeconds: 0, periodSeconds: 10, timeoutSeconds: 1, failureThreshold: 2 };

export const ok = (): ExecResult => ({ exitCode: 0, output: '' });
export const sick = (): ExecResult => ({ exitCode: 1, output: 'cat: /tmp/healthy: No such file or directory\n' });

export type Answer = { ok: boolean; detail: string } | 'hang';

/** A NetworkCheck answering what the test says, and recording what it was asked. */
export class FakeNetwork implements NetworkCheck {
  readonly calls: Array<{
    kind: 'http' | 'tcp' | 'grpc';
    host: string;
    port: number;
    path?: string;
    service?: string;
    timeoutMs: number;
    options?: HttpCheckOptions;
  }> = [];
  answer: Answer = { ok: true, detail: 'status 200' };

  http(host: string, port: number, path: string, timeoutMs: number, options?: HttpCheckOptions): Promise<{ ok: boolean; detail: string }> {
    this.calls.push({ kind: 'http', host, port, path, timeoutMs, ...(options === undefined ? {} : { options }) });
    return this.reply();
  }

  tcp(host: string, port: number, timeoutMs: number): Promise<{ ok: boolean; detail: string }> {
    this.calls.push({ kind: 'tcp', host, port, timeoutMs });
    return this.reply();
  }

  grpc(host: string, port: number, service: string, timeoutMs: number): Promise<{ ok: boolean; detail: string }> {
    this.calls.push({ kind: 'grpc', host, port, service, timeoutMs });
    return this.reply();
  }

  private reply(): Promise<{ ok: boolean; detail: string }> {
    const answer = this.answer;
    return answer === 'hang' ? new Promise(() => {}) : Promise.resolve(answer);
  }
}

/**
 * The prober tests' shared setup: a virtual clock at T0, an in-memory runtime, recorded events, a
 * scripted network, and what the agent does with an unhealthy result (`killed`). Call it inside
 * a `describe`; its fields are new for each test.
 */
export function proberFixture() {
  const graces = new Map<string, number>();
  /** Each pod's sandbox, made with its first container. */
  const sandboxes = new Map<string, string>();
  const f = {
    clock: undefined as unknown as ManualClock,
    runtime: undefined as unknown as MemoryRuntime,
    events: undefined as unknown as RecordingEventSink,
    network: undefined as unknown as FakeNetwork,
    killed: [] as ProbeTarget[],
    opened: [] as Prober[],

    prober(options: Partial<ProberOptions> = {}): Prober {
      const p: Prober = new Prober({
        runtime: f.runtime,
        clock: f.clock,
        events: f.events,
        network: f.network,
        inbox: { post: (m) => m.type === 'container-unhealthy' && void f.act(p, m.target) },
        ...options,
      });
      f.opened.push(p);
      return p;
    },

    /**
     * What the agent does with an unhealthy result: the next pass plans a kill, and the pod's worker
     * (the executor) carries it out. `killed` records the targets whose kill succeeded.
     */
    async act(p: Prober, t: ProbeTarget): Promise<void> {
      const detail = p.unhealthy().get(t.id);
      if (detail === undefined) return;
      const graceSeconds = graces.get(t.id) ?? 30;
      const kill = { type: 'kill', podId: t.podId, container: t.container, reason: 'unhealthy', id: t.id, graceSeconds, detail } as const;
      const result = await new PlanExecutor({ runtime: f.runtime, events: f.events, clock: f.clock }).executePod({
        podId: t.podId,
        actions: [kill],
      });
      if (result.failures === 0) f.killed.push(t);
    },

    /** Creates and starts a container of pod `podId` (in the pod's sandbox) on the memory runtime; returns its id. */
    async running(podId = 'cache', container = 'redis'): Promise<string> {
      await f.runtime.images.pull('redis:7');
      let sandbox = sandboxes.get(podId);
      if (sandbox === undefined) {
        sandbox = (
          await f.runtime.runSandbox({
            name: buildContainerName(podId, 'POD'),
            podId,
            hostname: podId,
            ports: [],
            labels: { [Labels.sandbox]: podId },
          })
        ).id;
        sandboxes.set(podId, sandbox);
      }
      const spec: ContainerSpec = {
        name: `${container}--${podId}--${Math.random().toString(16).slice(2, 10).padEnd(8, '0')}`,
        podId,
        image: 'redis:7',
        env: {},
        ports: [],
        mounts: [],
        labels: { [Labels.manifestId]: podId, [Labels.containerName]: container },
      };
      const created = await f.runtime.create(spec, sandbox);
      await f.runtime.start(created.id);
      return created.id;
    },

    /** `graceSeconds`: what the manifest gives the kill (the plan carries it). */
    target(
      id: string,
      probe: Partial<Probe> = {},
      { graceSeconds, ...extra }: Partial<ProbeTarget> & { graceSeconds?: number } = {},
    ): ProbeTarget {
      if (graceSeconds !== undefined) graces.set(id, graceSeconds);
      const c = f.runtime.snapshot().find((s) => s.id === id);
      if (c?.startedAt === undefined) throw new Error(`container ${id} has not started`);
      const container = c.labels[Labels.containerName] ?? '';
      const podId = c.labels[Labels.manifestId] ?? '';
      const { exec: _, ...timing } = EXEC;
      const handler = probe.httpGet !== undefined || probe.tcpSocket !== undefined || probe.grpc !== undefined ? {} : { exec: EXEC.exec };
      return { podId, container, id, startedAt: c.startedAt, probe: { ...timing, ...handler, ...probe } as ProbeTarget['probe'], ...extra };
    },

    /** The times (ms after T0) at which `exec` was called on `id`. */
    execTimes: (id: string) => f.runtime.calls.filter((c) => c.op === 'exec' && c.target === id).map((c) => c.time - T0),
    stateOf: (id: string) => f.runtime.snapshot().find((s) => s.id === id)?.state,
  };
  beforeEach(() => {
    f.clock = new ManualClock(T0);
    f.runtime = new MemoryRuntime({ clock: f.clock, pullable: 'any' });
    f.events = new RecordingEventSink();
    f.network = new FakeNetwork();
    f.killed = [];
    f.opened = [];
    graces.clear();
    sandboxes.clear();
  });
  afterEach(async () => {
    // close() waits for probes under way, which run on the virtual clock: let it move meanwhile.
    const closing = Promise.all(f.opened.map((p) => p.close()));
    await f.clock.advance(60_000);
    await closing;
  });
  return f;
}
