import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { Labels, type ContainerSpec, type ExecResult, type Probe } from '@kubelet-ts/core';
import { ManualClock, MemoryRuntime } from '@kubelet-ts/runtime-memory';
import { socketNetworkCheck, type NetworkCheck } from '../src/network-check.js';
import { PlanExecutor } from '../src/executor.js';
import { LivenessProber, type LivenessProberOptions, type ProbeTarget } from '../src/prober.js';
import { RecordingEventSink, RecordingLogger, settle } from './helpers.js';

const T0 = 1_000_000;
const EXEC: Probe = { exec: { command: ['cat', '/tmp/healthy'] }, initialDelaySeconds: 5, periodSeconds: 10, timeoutSeconds: 1, failureThreshold: 3 };
const HTTP: Probe = { httpGet: { path: '/healthz', port: 80 }, initialDelaySeconds: 0, periodSeconds: 10, timeoutSeconds: 1, failureThreshold: 3 };
const TCP: Probe = { tcpSocket: { port: 6379 }, initialDelaySeconds: 0, periodSeconds: 10, timeoutSeconds: 1, failureThreshold: 2 };

const ok = (): ExecResult => ({ exitCode: 0, output: '' });
const sick = (): ExecResult => ({ exitCode: 1, output: 'cat: /tmp/healthy: No such file or directory\n' });

type Answer = { ok: boolean; detail: string } | 'hang';

/** A NetworkCheck answering what the test says, and recording what it was asked. */
class FakeNetwork implements NetworkCheck {
  readonly calls: Array<{ kind: 'http' | 'tcp'; host: string; port: number; path?: string; timeoutMs: number }> = [];
  answer: Answer = { ok: true, detail: 'status 200' };

  http(host: string, port: number, path: string, timeoutMs: number): Promise<{ ok: boolean; detail: string }> {
    this.calls.push({ kind: 'http', host, port, path, timeoutMs });
    return this.reply();
  }

  tcp(host: string, port: number, timeoutMs: number): Promise<{ ok: boolean; detail: string }> {
    this.calls.push({ kind: 'tcp', host, port, timeoutMs });
    return this.reply();
  }

  private reply(): Promise<{ ok: boolean; detail: string }> {
    const answer = this.answer;
    return answer === 'hang' ? new Promise(() => {}) : Promise.resolve(answer);
  }
}

describe('LivenessProber', () => {
  let clock: ManualClock;
  let runtime: MemoryRuntime;
  let events: RecordingEventSink;
  let network: FakeNetwork;
  let killed: ProbeTarget[];
  let opened: LivenessProber[];
  let graces: Map<string, number>;

  beforeEach(() => {
    clock = new ManualClock(T0);
    runtime = new MemoryRuntime({ clock, pullable: 'any' });
    events = new RecordingEventSink();
    network = new FakeNetwork();
    killed = [];
    opened = [];
    graces = new Map();
  });

  afterEach(async () => {
    // close() waits for probes under way, which run on the virtual clock: let it move meanwhile.
    const closing = Promise.all(opened.map((p) => p.close()));
    await clock.advance(60_000);
    await closing;
  });

  function prober(options: Partial<LivenessProberOptions> = {}): LivenessProber {
    const p: LivenessProber = new LivenessProber({ runtime, clock, events, network, onUnhealthy: (t) => void act(p, t), ...options });
    opened.push(p);
    return p;
  }

  /**
   * What the agent does with an unhealthy result: the next pass plans a kill, and the pod's worker
   * (the executor) carries it out. `killed` records the targets whose kill succeeded.
   */
  async function act(p: LivenessProber, t: ProbeTarget): Promise<void> {
    const detail = p.unhealthy().get(t.id);
    if (detail === undefined) return;
    const graceSeconds = graces.get(t.id) ?? 30;
    const kill = { type: 'kill', podId: t.podId, container: t.container, reason: 'unhealthy', id: t.id, graceSeconds, detail } as const;
    const result = await new PlanExecutor({ runtime, events, clock }).executePod({ podId: t.podId, actions: [kill] });
    if (result.failures === 0) killed.push(t);
  }

  /** Creates and starts a container of pod `podId` on the memory runtime; returns its id. */
  async function running(podId = 'cache', container = 'redis'): Promise<string> {
    await runtime.pull('redis:7');
    const spec: ContainerSpec = {
      name: `${container}--${podId}--${Math.random().toString(16).slice(2, 10).padEnd(8, '0')}`,
      podId,
      image: 'redis:7',
      env: {},
      ports: [],
      podPorts: [],
      mounts: [],
      labels: { [Labels.manifestId]: podId, [Labels.containerName]: container },
    };
    const created = await runtime.create(spec);
    await runtime.start(created.id);
    return created.id;
  }

  /** `graceSeconds`: what the manifest gives the kill (the plan carries it). */
  function target(id: string, probe: Partial<Probe> = {}, { graceSeconds, ...extra }: Partial<ProbeTarget> & { graceSeconds?: number } = {}): ProbeTarget {
    if (graceSeconds !== undefined) graces.set(id, graceSeconds);
    const c = runtime.snapshot().find((s) => s.id === id);
    if (c?.startedAt === undefined) throw new Error(`container ${id} has not started`);
    const container = c.labels[Labels.containerName] ?? '';
    const podId = c.labels[Labels.manifestId] ?? '';
    const { exec: _, ...timing } = EXEC;
    const handler = probe.httpGet !== undefined || probe.tcpSocket !== undefined ? {} : { exec: EXEC.exec };
    return { podId, container, id, startedAt: c.startedAt, probe: { ...timing, ...handler, ...probe }, ...extra };
  }

  /** The times (ms after T0) at which `exec` was called on `id`. */
  const execTimes = (id: string) => runtime.calls.filter((c) => c.op === 'exec' && c.target === id).map((c) => c.time - T0);
  const stateOf = (id: string) => runtime.snapshot().find((s) => s.id === id)?.state;

  describe('timing', () => {
    it('runs the first probe no earlier than startedAt + initialDelaySeconds', async () => {
      const id = await running();
      const p = prober();
      p.update([target(id)]);
      await clock.advance(4_999);
      expect(execTimes(id)).toEqual([]);
      await clock.advance(1);
      expect(execTimes(id)).toEqual([5_000]);
    });

    it('probes at once when the initial delay is already past', async () => {
      const id = await running();
      await clock.advance(60_000);
      const p = prober();
      p.update([target(id)]);
      await clock.advance(0);
      expect(execTimes(id)).toEqual([60_000]);
    });

    it('probes every periodSeconds, counted from when the previous probe finished', async () => {
      const id = await running();
      runtime.onExec(id, ok, 400);
      const p = prober();
      p.update([target(id)]);
      await clock.advance(5_000 + 400 + 9_999);
      expect(execTimes(id)).toEqual([5_000]);
      await clock.advance(1);
      expect(execTimes(id)).toEqual([5_000, 15_400]);
      await clock.advance(10_400);
      expect(execTimes(id)).toEqual([5_000, 15_400, 25_800]);
      expect(p.state(id)).toEqual({ failures: 0, lastResult: 'success', lastDetail: 'exited with code 0' });
    });
  });

  describe('failures', () => {
    it('records a container as unhealthy after failureThreshold consecutive failures, once; the kill follows', async () => {
      const id = await running('cache', 'redis');
      runtime.onExec(id, sick);
      const p = prober();
      const t = target(id, {}, { graceSeconds: 7 });
      p.update([t]);

      await clock.advance(15_000);
      expect(events.ofType('ProbeFailed')).toHaveLength(2);
      expect(stateOf(id)).toBe('running');
      expect(p.state(id)).toMatchObject({ failures: 2, lastResult: 'failure' });

      await clock.advance(10_000);
      const failed = events.ofType('ProbeFailed');
      expect(failed).toHaveLength(3);
      failed.forEach((e, i) => {
        expect(e).toMatchObject({ podId: 'cache', container: 'redis', reason: 'Liveness', time: T0 + 5_000 + i * 10_000 });
        expect(e.message).toContain('exec ["cat","/tmp/healthy"]');
        expect(e.message).toContain(`(${i + 1}/3)`);
        expect(e.message).toContain('exited with code 1: cat: /tmp/healthy: No such file or directory');
      });
      const [kill, ...moreKills] = events.ofType('ContainerKilled');
      expect(moreKills).toEqual([]);
      expect(kill).toMatchObject({ podId: 'cache', container: 'redis', reason: 'Liveness', time: T0 + 25_000 });
      expect(kill?.message).toMatch(/^liveness probe failed 3 times: exited with code 1: .*; killing it \(restart policy decides what next\)$/);
      expect(events.types()).toEqual(['ProbeFailed', 'ProbeFailed', 'ProbeFailed', 'ContainerKilled']);
      expect(stateOf(id)).toBe('exited');
      expect(killed).toEqual([t]);

      // Dead to the prober: no more probes, even when the agent hands the same container back.
      p.update([t]);
      await clock.advance(100_000);
      expect(execTimes(id)).toHaveLength(3);
      expect(runtime.callCount('stop')).toBe(1);
      expect(killed).toHaveLength(1);
      expect(events.events).toHaveLength(4);
    });

    it('the kill stops the container with the grace period, and is done only when the stop is', async () => {
      const id = await running();
      runtime.onExec(id, sick);
      runtime.hangOnStop(id);
      const p = prober();
      p.update([target(id, { failureThreshold: 1 }, { graceSeconds: 7 })]);
      await clock.advance(5_000);
      expect(events.types()).toEqual(['ProbeFailed', 'ContainerKilled']);
      await clock.advance(6_999);
      expect(stateOf(id)).toBe('running');
      expect(killed).toHaveLength(0);
      await clock.advance(1);
      expect(runtime.snapshot().find((s) => s.id === id)).toMatchObject({ state: 'exited', exitCode: 137 });
      expect(killed).toHaveLength(1);
    });

    it('resets the consecutive-failure count on a success', async () => {
      const id = await running();
      const answers = [sick, sick, ok, sick, sick, sick];
      runtime.onExec(id, () => (answers.shift() ?? ok)());
      const p = prober();
      p.update([target(id)]);

      await clock.advance(35_000); // probes at 5, 15, 25, 35 s: fail, fail, success, fail
      expect(p.state(id)).toMatchObject({ failures: 1, lastResult: 'failure' });
      await clock.advance(10_000);
      expect(p.state(id)).toMatchObject({ failures: 2 });
      expect(events.ofType('ProbeFailed').map((e) => e.message.match(/\((\d\/3)\)/)?.[1])).toEqual(['1/3', '2/3', '1/3', '2/3']);
      expect(events.ofType('ContainerKilled')).toEqual([]);
      expect(stateOf(id)).toBe('running');

      await clock.advance(10_000);
      expect(events.ofType('ContainerKilled')).toHaveLength(1);
      expect(stateOf(id)).toBe('exited');
    });

    it('counts an exec that outlasts timeoutSeconds as a failure', async () => {
      const id = await running();
      runtime.onExec(id, ok, 2_500); // would succeed, but too late
      const p = prober();
      p.update([target(id, { timeoutSeconds: 2 })]);
      await clock.advance(5_000 + 2_000);
      expect(p.state(id)).toEqual({ failures: 1, lastResult: 'failure', lastDetail: 'timed out after 2 s' });
      expect(events.ofType('ProbeFailed')[0]?.message).toContain('(1/3): timed out after 2 s');
      // The next period counts from the timeout, when the probe finished.
      await clock.advance(10_000);
      expect(execTimes(id)).toEqual([5_000, 17_000]);
    });

    it('counts a check that never answers as a failure, and starts no second one while the first hangs', async () => {
      const id = await running();
      network.answer = 'hang';
      const p = prober();
      p.update([target(id, TCP, { hostPort: 16379 })]);
      await clock.advance(0);
      expect(network.calls).toHaveLength(1);
      await clock.advance(2_000); // timeoutSeconds 1 + the prober's 1 s of slack
      expect(p.state(id)).toMatchObject({ failures: 1, lastDetail: 'no answer within 1 s' });
      await clock.advance(10_000);
      expect(network.calls).toHaveLength(1);
      expect(p.state(id)).toMatchObject({ failures: 2 });
      expect(events.ofType('ContainerKilled')).toHaveLength(1);
    });

    it('does not count a probe the runtime could not run (Unavailable), and keeps probing', async () => {
      const id = await running();
      runtime.onExec(id, sick);
      const logger = new RecordingLogger();
      const p = prober({ logger });
      p.update([target(id)]);
      runtime.failNext('exec', 'Unavailable');
      await clock.advance(5_000);
      expect(execTimes(id)).toEqual([5_000]);
      expect(p.state(id)).toEqual({ failures: 0 });
      expect(events.events).toEqual([]);
      expect(logger.lines.some((l) => l.level === 'warn' && l.message.includes('Unavailable'))).toBe(true);
      await clock.advance(10_000);
      expect(p.state(id)).toMatchObject({ failures: 1 });
    });

    it('keeps the result after a kill that fails, so the next pass kills again', async () => {
      const id = await running();
      runtime.onExec(id, sick);
      const p = prober();
      const t = target(id, { failureThreshold: 1 });
      p.update([t]);
      runtime.failNext('stop', 'Unavailable');
      await clock.advance(5_000);
      expect(events.types()).toEqual(['ProbeFailed', 'ContainerKilled', 'ContainerFailed']);
      expect(events.ofType('ContainerFailed')[0]).toMatchObject({ reason: 'Unavailable', container: 'redis' });
      expect(stateOf(id)).toBe('running');
      expect(killed).toEqual([]);
      expect(p.unhealthy().get(id)).toMatch(/^failed 1 times: exited with code 1/);
      await act(p, t); // the next pass
      expect(stateOf(id)).toBe('exited');
      expect(killed).toHaveLength(1);
      // Once the container is no longer running the agent stops handing it over, and the result goes.
      p.update([]);
      expect(p.unhealthy().size).toBe(0);
    });
  });

  describe('network probes', () => {
    it('httpGet: a failing answer (500) is a failure, a passing one (302) a success; it dials host:hostPort/path', async () => {
      const id = await running('web', 'nginx');
      const p = prober({ host: '10.0.0.5' });
      p.update([target(id, HTTP, { hostPort: 8080 })]);
      network.answer = { ok: false, detail: 'status 500' };
      await clock.advance(0);
      expect(network.calls).toEqual([{ kind: 'http', host: '10.0.0.5', port: 8080, path: '/healthz', timeoutMs: 1_000 }]);
      expect(p.state(id)).toEqual({ failures: 1, lastResult: 'failure', lastDetail: 'status 500' });
      expect(events.ofType('ProbeFailed')[0]?.message).toBe('liveness probe httpGet http://10.0.0.5:8080/healthz failed (1/3): status 500');

      network.answer = { ok: true, detail: 'status 302' };
      await clock.advance(10_000);
      expect(p.state(id)).toEqual({ failures: 0, lastResult: 'success', lastDetail: 'status 302' });
      expect(execTimes(id)).toEqual([]);
    });

    it('tcpSocket: a refused connection is a failure', async () => {
      const id = await running();
      network.answer = { ok: false, detail: 'connection refused' };
      const p = prober();
      p.update([target(id, TCP, { hostPort: 16379 })]);
      await clock.advance(0);
      expect(network.calls[0]).toMatchObject({ kind: 'tcp', host: '127.0.0.1', port: 16379 });
      expect(events.ofType('ProbeFailed')[0]?.message).toBe('liveness probe tcpSocket 127.0.0.1:16379 failed (1/2): connection refused');
      await clock.advance(10_000);
      expect(events.types()).toEqual(['ProbeFailed', 'ProbeFailed', 'ContainerKilled']);
      expect(stateOf(id)).toBe('exited');
    });
  });

  describe('update', () => {
    it('keeps counters and schedule when given the same targets again', async () => {
      const id = await running();
      runtime.onExec(id, sick);
      const p = prober();
      p.update([target(id)]);
      await clock.advance(20_000); // failures at 5 and 15 s
      expect(p.state(id)).toMatchObject({ failures: 2 });
      p.update([target(id)]);
      p.update([target(id)]);
      await settle();
      expect(execTimes(id)).toEqual([5_000, 15_000]);
      expect(p.state(id)).toMatchObject({ failures: 2 });
      expect(clock.pending).toBe(1);
      await clock.advance(5_000);
      expect(execTimes(id)).toEqual([5_000, 15_000, 25_000]);
      expect(events.ofType('ContainerKilled')).toHaveLength(1);
    });

    it('starts a restarted container (a new id) fresh and stops probing the old one', async () => {
      const first = await running();
      runtime.onExec(first, sick);
      const p = prober();
      p.update([target(first)]);
      await clock.advance(20_000);
      expect(p.state(first)).toMatchObject({ failures: 2 });

      runtime.exit(first, 1);
      const second = await running();
      runtime.onExec(second, sick);
      p.update([target(second)]);
      expect(p.state(first)).toBeUndefined();
      expect(p.state(second)).toEqual({ failures: 0 });
      await clock.advance(4_999);
      expect(execTimes(second)).toEqual([]); // its own initial delay, from its own start
      await clock.advance(1);
      expect(p.state(second)).toMatchObject({ failures: 1 });
      expect(events.ofType('ContainerKilled')).toEqual([]);
      await clock.advance(20_000);
      expect(events.ofType('ContainerKilled')).toHaveLength(1);
      expect(execTimes(first)).toEqual([5_000, 15_000]);
    });

    it('starts fresh when the same id comes back with a new startedAt (started again)', async () => {
      const id = await running();
      runtime.onExec(id, sick);
      const p = prober();
      p.update([target(id)]);
      await clock.advance(15_000);
      expect(p.state(id)).toMatchObject({ failures: 2 });
      await clock.advance(1_000);
      runtime.exit(id, 1);
      await runtime.start(id);
      p.update([target(id)]);
      expect(p.state(id)).toEqual({ failures: 0 });
      await clock.advance(5_000);
      expect(execTimes(id)).toEqual([5_000, 15_000, 21_000]);
      expect(p.state(id)).toMatchObject({ failures: 1 });
    });

    it('stops probing a target that is no longer given', async () => {
      const a = await running('a', 'web');
      const b = await running('b', 'web');
      const p = prober();
      p.update([target(a), target(b)]);
      expect(clock.pending).toBe(2);
      p.update([target(b)]);
      expect(clock.pending).toBe(1);
      expect(p.state(a)).toBeUndefined();
      await clock.advance(100_000);
      expect(execTimes(a)).toEqual([]);
      expect(execTimes(b).length).toBeGreaterThan(5);
    });

    it('never runs two probes of one container at once, even across a restart of the same id', async () => {
      const id = await running();
      runtime.onExec(id, ok, 800);
      let active = 0;
      let most = 0;
      const exec = runtime.exec.bind(runtime);
      runtime.exec = async (...args) => {
        active += 1;
        most = Math.max(most, active);
        try {
          return await exec(...args);
        } finally {
          active -= 1;
        }
      };
      const p = prober();
      p.update([target(id, { initialDelaySeconds: 0, periodSeconds: 1 })]);
      await clock.advance(100); // the first probe is under way until 800
      // The same container, seen as started again: its fresh schedule wants a probe now.
      const restarted = { ...target(id, { initialDelaySeconds: 0, periodSeconds: 1 }), startedAt: T0 + 100 };
      p.update([restarted]);
      await clock.advance(5_000);
      expect(most).toBe(1);
      expect(execTimes(id).slice(0, 2)).toEqual([0, 800]);
    });
  });

  describe('the container going away', () => {
    it('drops a container that stopped meanwhile (Conflict from exec) without an event or a kill', async () => {
      const id = await running();
      runtime.onExec(id, sick);
      const p = prober();
      p.update([target(id)]);
      await clock.advance(5_000);
      expect(events.ofType('ProbeFailed')).toHaveLength(1);
      runtime.exit(id, 0);
      await clock.advance(10_000);
      expect(execTimes(id)).toEqual([5_000, 15_000]);
      expect(events.events).toHaveLength(1);
      expect(runtime.callCount('stop')).toBe(0);
      expect(clock.pending).toBe(0);
      await clock.advance(100_000);
      expect(execTimes(id)).toHaveLength(2);
      expect(killed).toEqual([]);
    });

    it('drops a container that was removed meanwhile (NotFound from exec)', async () => {
      const id = await running();
      const p = prober();
      p.update([target(id)]);
      await runtime.remove(id, { force: true });
      await clock.advance(5_000);
      expect(execTimes(id)).toEqual([5_000]);
      expect(events.events).toEqual([]);
      expect(clock.pending).toBe(0);
    });
  });

  describe('close', () => {
    it('leaves no timer behind, and nothing is probed afterwards', async () => {
      const a = await running('a', 'web');
      const b = await running('b', 'web');
      const p = prober();
      p.update([target(a), target(b)]);
      await clock.advance(5_000);
      expect(runtime.callCount('exec')).toBe(2);
      await p.close();
      await p.close();
      expect(clock.pending).toBe(0);
      p.update([target(a), target(b)]);
      expect(clock.pending).toBe(0);
      await clock.advance(100_000);
      expect(runtime.callCount('exec')).toBe(2);
    });

    it('waits for a probe under way and drops its result', async () => {
      const id = await running();
      runtime.onExec(id, sick, 500);
      const p = prober();
      p.update([target(id, { failureThreshold: 1 })]);
      await clock.advance(5_100);
      let closed = false;
      const closing = p.close().then(() => {
        closed = true;
      });
      await settle();
      expect(closed).toBe(false);
      await clock.advance(400);
      await closing;
      expect(clock.pending).toBe(0);
      expect(events.events).toEqual([]);
      expect(stateOf(id)).toBe('running');
    });
  });
});

describe('socketNetworkCheck', () => {
  let server: Server | undefined;

  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => (server === undefined ? resolve(undefined) : server.close(resolve)));
  });

  it('judges http by status, tcp by connecting, over real sockets on 127.0.0.1', async () => {
    const statuses: Record<string, number> = { '/ok': 200, '/moved': 302, '/broken': 500 };
    server = createHttpServer((req, res) => {
      if (req.url === '/silent') return; // never answers
      res.writeHead(statuses[req.url ?? ''] ?? 404, { Location: '/ok' }).end();
    });
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    const open = (server.address() as AddressInfo).port;
    const closed = await freePort();

    const net = socketNetworkCheck;
    await expect(net.http('127.0.0.1', open, '/ok', 1_000)).resolves.toEqual({ ok: true, detail: 'status 200' });
    await expect(net.http('127.0.0.1', open, '/moved', 1_000)).resolves.toEqual({ ok: true, detail: 'status 302' });
    await expect(net.http('127.0.0.1', open, '/broken', 1_000)).resolves.toEqual({ ok: false, detail: 'status 500' });
    await expect(net.http('127.0.0.1', open, '/silent', 150)).resolves.toEqual({ ok: false, detail: 'no answer within 150 ms' });
    await expect(net.http('127.0.0.1', closed, '/ok', 1_000)).resolves.toEqual({ ok: false, detail: 'connection refused' });
    await expect(net.tcp('127.0.0.1', open, 1_000)).resolves.toEqual({ ok: true, detail: 'connected' });
    await expect(net.tcp('127.0.0.1', closed, 1_000)).resolves.toEqual({ ok: false, detail: 'connection refused' });
  });
});

/** A port that nothing listens on: bound once by the system, then released. */
async function freePort(): Promise<number> {
  const s = createNetServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as AddressInfo;
  await new Promise((resolve) => s.close(resolve));
  return port;
}
