import { describe, expect, it } from '@jest/globals';
import type { ExecResult, Probe } from '@kubelet-ts/core';
import { proberFixture, ok, sick } from './prober-fixture.js';

/** Exec probes told apart by their command: `startup`, `live`, `ready`; each answers from its own script. */
const probe = (command: string, timing: Partial<Probe> = {}): Partial<Probe> => ({
  exec: { command: [command] },
  initialDelaySeconds: 0,
  periodSeconds: 10,
  ...timing,
});

describe('Prober: startup and readiness probes', () => {
  const f = proberFixture();
  const { prober, running, target } = f;

  /** The probes run, as `<id>/<command>`, in order. */
  const probesRun: string[] = [];
  const runsOf = (id: string, command: string) => probesRun.filter((c) => c === `${id}/${command}`).length;

  /** Scripts what each probe command answers, in turn; past its script a command answers `after`. */
  function script(id: string, answers: Record<string, Array<() => ExecResult>>, after: () => ExecResult = ok): void {
    probesRun.splice(0);
    f.runtime.onExec(id, (_c, command) => {
      probesRun.push(`${id}/${command[0]}`);
      return (answers[command[0]!]?.shift() ?? after)();
    });
  }

  it('holds liveness and readiness until the startup probe succeeds once, then runs them and never the startup probe again', async () => {
    const id = await running('web', 'app');
    script(id, { startup: [sick, sick] });
    const p = prober();
    p.update([
      target(id, probe('startup', { failureThreshold: 5 }), { kind: 'startup' }),
      target(id, probe('live', { initialDelaySeconds: 5 }), { kind: 'liveness' }),
      target(id, probe('ready'), { kind: 'readiness' }),
    ]);
    await f.clock.advance(19_999); // startup probes at 0 and 10 s fail
    expect(probesRun).toEqual([`${id}/startup`, `${id}/startup`]);
    expect(p.verdict(id)).toEqual({ started: false, ready: false });
    expect(f.events.ofType('ProbeFailed').map((e) => e.reason)).toEqual(['Startup', 'Startup']);

    await f.clock.advance(1); // 20 s: startup succeeds; liveness (initial delay long past) and readiness begin at once
    expect(probesRun.slice(2)).toEqual([`${id}/startup`, `${id}/live`, `${id}/ready`]);
    expect(p.verdict(id)).toEqual({ started: true, ready: true });
    expect(p.state(id, 'startup')).toEqual({ failures: 0, lastResult: 'success', lastDetail: 'exited with code 0' });

    await f.clock.advance(30_000);
    expect(runsOf(id, 'startup')).toBe(3);
    expect(runsOf(id, 'live')).toBe(4);
    expect(runsOf(id, 'ready')).toBe(4);
    expect(p.unhealthy().size).toBe(0);
  });

  it('records a container whose startup probe fails failureThreshold times as unhealthy; the kill follows as for liveness', async () => {
    const id = await running('web', 'app');
    script(id, {}, sick);
    const p = prober();
    const startup = target(id, probe('startup', { failureThreshold: 3 }), { kind: 'startup' });
    p.update([startup, target(id, probe('live'), { kind: 'liveness' }), target(id, probe('ready'), { kind: 'readiness' })]);
    await f.clock.advance(19_999);
    expect(p.unhealthy().size).toBe(0);
    await f.clock.advance(1);
    expect(p.unhealthy().get(id)).toBe('startup probe failed 3 times: exited with code 1: cat: /tmp/healthy: No such file or directory');
    expect(probesRun).toEqual([`${id}/startup`, `${id}/startup`, `${id}/startup`]); // liveness and readiness never ran
    expect(f.killed).toEqual([startup]);
    expect(f.stateOf(id)).toBe('exited');
    const [kill] = f.events.ofType('ContainerKilled');
    expect(kill?.message).toMatch(/^startup probe failed 3 times: .*; killing it \(restart policy decides what next\)$/);
    expect(p.verdict(id)).toEqual({ started: false, ready: false });
  });

  it('counts readiness with successThreshold and failureThreshold, reports each change, and never marks the container unhealthy', async () => {
    const id = await running('web', 'app');
    // 0 s fail, 10 s ok, 20 s ok (ready), 30-50 s fail (not ready at the third), 60 s ok, 70 s ok (ready again)
    script(id, { ready: [sick, ok, ok, sick, sick, sick, ok, ok] }, ok);
    const p = prober();
    p.update([target(id, probe('ready', { successThreshold: 2, failureThreshold: 3 }), { kind: 'readiness' })]);
    expect(p.verdict(id)).toEqual({ ready: false }); // not ready until it has passed

    await f.clock.advance(10_000);
    expect(p.verdict(id)).toEqual({ ready: false }); // one success of two
    await f.clock.advance(10_000);
    expect(p.verdict(id)).toEqual({ ready: true });
    await f.clock.advance(20_000); // two failures of three: still ready
    expect(p.verdict(id)).toEqual({ ready: true });
    expect(p.state(id, 'readiness')).toMatchObject({ failures: 2, lastResult: 'failure' });
    await f.clock.advance(10_000);
    expect(p.verdict(id)).toEqual({ ready: false });
    await f.clock.advance(10_000);
    expect(p.verdict(id)).toEqual({ ready: false });
    await f.clock.advance(10_000);
    expect(p.verdict(id)).toEqual({ ready: true });

    expect(f.events.types()).toEqual([
      'ProbeFailed',
      'ContainerReady',
      'ProbeFailed',
      'ProbeFailed',
      'ProbeFailed',
      'ContainerNotReady',
      'ContainerReady',
    ]);
    expect(
      f.events
        .ofType('ProbeFailed')
        .every((e) => e.reason === 'Readiness' && e.message.startsWith('readiness probe exec ["ready"] failed')),
    ).toBe(true);
    expect(f.events.ofType('ContainerNotReady')[0]).toMatchObject({ podId: 'web', container: 'app', reason: 'Readiness' });
    // Readiness is reported, never acted on: nothing is unhealthy, nothing killed, the container runs.
    expect(p.unhealthy().size).toBe(0);
    expect(f.killed).toEqual([]);
    expect(f.stateOf(id)).toBe('running');
    expect(f.runtime.callCount('stop')).toBe(0);
  });

  it('starts a restarted container not ready, whatever its predecessor was', async () => {
    const id = await running('web', 'app');
    script(id, {}, ok);
    const p = prober();
    const first = target(id, probe('ready', { initialDelaySeconds: 5 }), { kind: 'readiness' });
    p.update([first]);
    await f.clock.advance(5_000);
    expect(p.verdict(id)).toEqual({ ready: true });
    p.update([{ ...first, startedAt: first.startedAt + 60_000 }]); // the same id started again, later
    expect(p.verdict(id)).toEqual({ ready: false });
    expect(p.state(id, 'readiness')).toEqual({ failures: 0 });
  });

  it('lets held probes run when the startup probe is taken away', async () => {
    const id = await running('web', 'app');
    script(id, {}, sick);
    const p = prober();
    const live = target(id, probe('live', { failureThreshold: 5 }), { kind: 'liveness' });
    p.update([target(id, probe('startup', { failureThreshold: 10 }), { kind: 'startup' }), live]);
    await f.clock.advance(0);
    expect(probesRun).toEqual([`${id}/startup`]);
    p.update([live]);
    await f.clock.advance(0);
    expect(probesRun).toEqual([`${id}/startup`, `${id}/live`]);
    expect(p.verdict(id)).toEqual({});
  });

  it('passes an httpGet probe its host, scheme and headers, and names them in its events', async () => {
    const id = await running('web', 'app');
    f.network.answer = { ok: false, detail: 'status 503' };
    const p = prober();
    const httpGet = { path: '/ready', port: 8443, scheme: 'HTTPS' as const, httpHeaders: [{ name: 'X-Probe', value: '1' }] };
    p.update([target(id, { httpGet, initialDelaySeconds: 0 }, { kind: 'readiness', host: '10.1.2.3', hostPort: 8443 })]);
    await f.clock.advance(0);
    expect(f.network.calls).toEqual([
      {
        kind: 'http',
        host: '10.1.2.3',
        port: 8443,
        path: '/ready',
        timeoutMs: 1_000,
        options: { scheme: 'HTTPS', headers: [{ name: 'X-Probe', value: '1' }] },
      },
    ]);
    expect(f.events.ofType('ProbeFailed')[0]?.message).toBe('readiness probe httpGet https://10.1.2.3:8443/ready failed (1/3): status 503');
  });
});
