import { describe, expect, it } from '@jest/globals';
import type { Probe } from '@kubelet-ts/core';
import { proberFixture, T0, HTTP, TCP, ok, sick } from './prober-fixture.js';
import { RecordingLogger } from './helpers.js';

describe('Prober (liveness): timing and failures', () => {
  const f = proberFixture();
  const { prober, act, running, target, execTimes, stateOf } = f;

  describe('timing', () => {
    it('runs the first probe no earlier than startedAt + initialDelaySeconds', async () => {
      const id = await running();
      const p = prober();
      p.update([target(id)]);
      await f.clock.advance(4_999);
      expect(execTimes(id)).toEqual([]);
      await f.clock.advance(1);
      expect(execTimes(id)).toEqual([5_000]);
    });

    it('probes at once when the initial delay is already past', async () => {
      const id = await running();
      await f.clock.advance(60_000);
      const p = prober();
      p.update([target(id)]);
      await f.clock.advance(0);
      expect(execTimes(id)).toEqual([60_000]);
    });

    it('probes every periodSeconds, counted from when the previous probe finished', async () => {
      const id = await running();
      f.runtime.onExec(id, ok, 400);
      const p = prober();
      p.update([target(id)]);
      await f.clock.advance(5_000 + 400 + 9_999);
      expect(execTimes(id)).toEqual([5_000]);
      await f.clock.advance(1);
      expect(execTimes(id)).toEqual([5_000, 15_400]);
      await f.clock.advance(10_400);
      expect(execTimes(id)).toEqual([5_000, 15_400, 25_800]);
      expect(p.state(id)).toEqual({ failures: 0, lastResult: 'success', lastDetail: 'exited with code 0' });
    });
  });

  describe('failures', () => {
    it('records a container as unhealthy after failureThreshold consecutive failures, once; the kill follows', async () => {
      const id = await running('cache', 'redis');
      f.runtime.onExec(id, sick);
      const p = prober();
      const t = target(id, {}, { graceSeconds: 7 });
      p.update([t]);

      await f.clock.advance(15_000);
      expect(f.events.ofType('ProbeFailed')).toHaveLength(2);
      expect(stateOf(id)).toBe('running');
      expect(p.state(id)).toMatchObject({ failures: 2, lastResult: 'failure' });

      await f.clock.advance(10_000);
      const failed = f.events.ofType('ProbeFailed');
      expect(failed).toHaveLength(3);
      failed.forEach((e, i) => {
        expect(e).toMatchObject({ podId: 'cache', container: 'redis', reason: 'Liveness', time: T0 + 5_000 + i * 10_000 });
        expect(e.message).toContain('exec ["cat","/tmp/healthy"]');
        expect(e.message).toContain(`(${i + 1}/3)`);
        expect(e.message).toContain('exited with code 1: cat: /tmp/healthy: No such file or directory');
      });
      const [kill, ...moreKills] = f.events.ofType('ContainerKilled');
      expect(moreKills).toEqual([]);
      expect(kill).toMatchObject({ podId: 'cache', container: 'redis', reason: 'Liveness', time: T0 + 25_000 });
      expect(kill?.message).toMatch(
        /^liveness probe failed 3 times: exited with code 1: .*; killing it \(restart policy decides what next\)$/,
      );
      expect(f.events.types()).toEqual(['ProbeFailed', 'ProbeFailed', 'ProbeFailed', 'ContainerKilled']);
      expect(stateOf(id)).toBe('exited');
      expect(f.killed).toEqual([t]);

      // Dead to the prober: no more probes, even when the agent hands the same container back.
      p.update([t]);
      await f.clock.advance(100_000);
      expect(execTimes(id)).toHaveLength(3);
      expect(f.runtime.callCount('stop')).toBe(1);
      expect(f.killed).toHaveLength(1);
      expect(f.events.events).toHaveLength(4);
    });

    it('the kill stops the container with the grace period, and is done only when the stop is', async () => {
      const id = await running();
      f.runtime.onExec(id, sick);
      f.runtime.hangOnStop(id);
      const p = prober();
      p.update([target(id, { failureThreshold: 1 }, { graceSeconds: 7 })]);
      await f.clock.advance(5_000);
      expect(f.events.types()).toEqual(['ProbeFailed', 'ContainerKilled']);
      await f.clock.advance(6_999);
      expect(stateOf(id)).toBe('running');
      expect(f.killed).toHaveLength(0);
      await f.clock.advance(1);
      expect(f.runtime.snapshot().find((s) => s.id === id)).toMatchObject({ state: 'exited', exitCode: 137 });
      expect(f.killed).toHaveLength(1);
    });

    it('resets the consecutive-failure count on a success', async () => {
      const id = await running();
      const answers = [sick, sick, ok, sick, sick, sick];
      f.runtime.onExec(id, () => (answers.shift() ?? ok)());
      const p = prober();
      p.update([target(id)]);

      await f.clock.advance(35_000); // probes at 5, 15, 25, 35 s: fail, fail, success, fail
      expect(p.state(id)).toMatchObject({ failures: 1, lastResult: 'failure' });
      await f.clock.advance(10_000);
      expect(p.state(id)).toMatchObject({ failures: 2 });
      expect(f.events.ofType('ProbeFailed').map((e) => e.message.match(/\((\d\/3)\)/)?.[1])).toEqual(['1/3', '2/3', '1/3', '2/3']);
      expect(f.events.ofType('ContainerKilled')).toEqual([]);
      expect(stateOf(id)).toBe('running');

      await f.clock.advance(10_000);
      expect(f.events.ofType('ContainerKilled')).toHaveLength(1);
      expect(stateOf(id)).toBe('exited');
    });

    it('counts an exec that outlasts timeoutSeconds as a failure', async () => {
      const id = await running();
      f.runtime.onExec(id, ok, 2_500); // would succeed, but too late
      const p = prober();
      p.update([target(id, { timeoutSeconds: 2 })]);
      await f.clock.advance(5_000 + 2_000);
      expect(p.state(id)).toEqual({ failures: 1, lastResult: 'failure', lastDetail: 'timed out after 2 s' });
      expect(f.events.ofType('ProbeFailed')[0]?.message).toContain('(1/3): timed out after 2 s');
      // The next period counts from the timeout, when the probe finished.
      await f.clock.advance(10_000);
      expect(execTimes(id)).toEqual([5_000, 17_000]);
    });

    it('counts a check that never answers as a failure, and starts no second one while the first hangs', async () => {
      const id = await running();
      f.network.answer = 'hang';
      const p = prober();
      p.update([target(id, TCP, { hostPort: 16379 })]);
      await f.clock.advance(0);
      expect(f.network.calls).toHaveLength(1);
      await f.clock.advance(2_000); // timeoutSeconds 1 + the prober's 1 s of slack
      expect(p.state(id)).toMatchObject({ failures: 1, lastDetail: 'no answer within 1 s' });
      await f.clock.advance(10_000);
      expect(f.network.calls).toHaveLength(1);
      expect(p.state(id)).toMatchObject({ failures: 2 });
      expect(f.events.ofType('ContainerKilled')).toHaveLength(1);
    });

    it('does not count a probe the runtime could not run (Unavailable), and keeps probing', async () => {
      const id = await running();
      f.runtime.onExec(id, sick);
      const logger = new RecordingLogger();
      const p = prober({ logger });
      p.update([target(id)]);
      f.runtime.failNext('exec', 'Unavailable');
      await f.clock.advance(5_000);
      expect(execTimes(id)).toEqual([5_000]);
      expect(p.state(id)).toEqual({ failures: 0 });
      expect(f.events.events).toEqual([]);
      expect(logger.entries.some((l) => l.level === 'warn' && l.message.includes('Unavailable'))).toBe(true);
      await f.clock.advance(10_000);
      expect(p.state(id)).toMatchObject({ failures: 1 });
    });

    it('keeps the result after a kill that fails, so the next pass kills again', async () => {
      const id = await running();
      f.runtime.onExec(id, sick);
      const p = prober();
      const t = target(id, { failureThreshold: 1 });
      p.update([t]);
      f.runtime.failNext('stop', 'Unavailable');
      await f.clock.advance(5_000);
      expect(f.events.types()).toEqual(['ProbeFailed', 'ContainerKilled', 'ContainerFailed']);
      expect(f.events.ofType('ContainerFailed')[0]).toMatchObject({ reason: 'Unavailable', container: 'redis' });
      expect(stateOf(id)).toBe('running');
      expect(f.killed).toEqual([]);
      expect(p.unhealthy().get(id)).toMatch(/^liveness probe failed 1 times: exited with code 1/);
      await act(p, t); // the next pass
      expect(stateOf(id)).toBe('exited');
      expect(f.killed).toHaveLength(1);
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
      f.network.answer = { ok: false, detail: 'status 500' };
      await f.clock.advance(0);
      expect(f.network.calls).toEqual([{ kind: 'http', host: '10.0.0.5', port: 8080, path: '/healthz', timeoutMs: 1_000 }]);
      expect(p.state(id)).toEqual({ failures: 1, lastResult: 'failure', lastDetail: 'status 500' });
      expect(f.events.ofType('ProbeFailed')[0]?.message).toBe(
        'liveness probe httpGet http://10.0.0.5:8080/healthz failed (1/3): status 500',
      );

      f.network.answer = { ok: true, detail: 'status 302' };
      await f.clock.advance(10_000);
      expect(p.state(id)).toEqual({ failures: 0, lastResult: 'success', lastDetail: 'status 302' });
      expect(execTimes(id)).toEqual([]);
    });

    it('grpc: a service that is not SERVING is a failure; it asks the service on host:port', async () => {
      const id = await running('etcd', 'etcd');
      const GRPC: Probe = {
        grpc: { port: 2379, service: 'readiness' },
        initialDelaySeconds: 0,
        periodSeconds: 10,
        timeoutSeconds: 2,
        failureThreshold: 3,
      };
      const p = prober();
      p.update([target(id, GRPC, { host: '10.88.0.9', hostPort: 2379 })]);
      f.network.answer = { ok: false, detail: 'service unhealthy (responded with "NOT_SERVING")' };
      await f.clock.advance(0);
      expect(f.network.calls).toEqual([{ kind: 'grpc', host: '10.88.0.9', port: 2379, service: 'readiness', timeoutMs: 2_000 }]);
      expect(f.events.ofType('ProbeFailed')[0]?.message).toBe(
        'liveness probe grpc 10.88.0.9:2379 service "readiness" failed (1/3): service unhealthy (responded with "NOT_SERVING")',
      );
      f.network.answer = { ok: true, detail: 'service healthy' };
      await f.clock.advance(10_000);
      expect(p.state(id)).toEqual({ failures: 0, lastResult: 'success', lastDetail: 'service healthy' });
    });

    it('grpc: a network check without gRPC (an embedder’s, written before) is the prober’s error, never a verdict', async () => {
      const id = await running('etcd', 'etcd');
      const network = { http: f.network.http.bind(f.network), tcp: f.network.tcp.bind(f.network) };
      const p = prober({ network });
      p.update([target(id, { grpc: { port: 2379 }, initialDelaySeconds: 0, periodSeconds: 10, timeoutSeconds: 1, failureThreshold: 1 })]);
      await f.clock.advance(0);
      await f.clock.advance(10_000);
      expect(p.state(id)?.failures ?? 0).toBe(0);
      expect(f.events.ofType('ProbeFailed')).toEqual([]);
      expect(f.killed).toEqual([]);
    });

    it('tcpSocket: a refused connection is a failure', async () => {
      const id = await running();
      f.network.answer = { ok: false, detail: 'connection refused' };
      const p = prober();
      p.update([target(id, TCP, { hostPort: 16379 })]);
      await f.clock.advance(0);
      expect(f.network.calls[0]).toMatchObject({ kind: 'tcp', host: '127.0.0.1', port: 16379 });
      expect(f.events.ofType('ProbeFailed')[0]?.message).toBe('liveness probe tcpSocket 127.0.0.1:16379 failed (1/2): connection refused');
      await f.clock.advance(10_000);
      expect(f.events.types()).toEqual(['ProbeFailed', 'ProbeFailed', 'ContainerKilled']);
      expect(stateOf(id)).toBe('exited');
    });
  });
});
