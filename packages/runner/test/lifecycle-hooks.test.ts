import { describe, expect, it } from '@jest/globals';
import { checkedManifest } from '@kubelet-ts/conformance';
import { KubeletError, Labels } from '@kubelet-ts/core';
import { agentFixture } from './agent-fixture.js';
import { settle, ScriptedSource } from './helpers.js';
import { FakeNetwork } from './prober-fixture.js';

const hooked = (lifecycle: object, restartPolicy = 'Always') =>
  checkedManifest({
    id: 'web',
    restartPolicy,
    terminationGracePeriodSeconds: 20,
    containers: [{ name: 'main', image: 'nginx:1', ports: [{ name: 'http', containerPort: 8080 }], lifecycle }],
  });
const exec = (command: string) => ({ exec: { command: ['sh', '-c', command] } });

describe('lifecycle hooks, through the agent', () => {
  const f = agentFixture();
  /** The runtime calls about container `id`, in order. */
  const callsOn = (id: string) => f.runtime.calls.filter((c) => c.target === id).map((c) => c.op);

  it('runs postStart right after the start', async () => {
    const k = f.kubelet([new ScriptedSource('a', { initial: [hooked({ postStart: exec('echo hi > /tmp/started') })] })]);
    await k.start();
    await settle();
    const { id } = f.one('web', 'main');
    expect(callsOn(id)).toEqual(['start', 'exec']);
    expect(f.events.events.filter((e) => e.reason === 'FailedPostStartHook')).toEqual([]);
  });

  it('kills a container whose postStart fails, says why, and its restart policy starts it again', async () => {
    let failures = 1;
    f.runtime.setFault('exec', () => (failures-- > 0 ? new KubeletError('Conflict', 'no such command') : undefined));
    const k = f.kubelet([new ScriptedSource('a', { initial: [hooked({ postStart: exec('exit 1') })] })]);
    await k.start();
    await settle();
    await k.sync();
    const failed = f.events.events.filter((e) => e.reason === 'FailedPostStartHook');
    expect(failed).toHaveLength(1);
    expect(failed[0]?.message).toContain('postStart hook (exec ["sh","-c","exit 1"]) failed');
    // The first was stopped (its exit kept), and a crash is restarted at once.
    expect(
      f
        .of('web')
        .map((c) => [c.state, c.labels[Labels.restartCount] ?? '0'])
        .sort(),
    ).toEqual([
      ['exited', '0'],
      ['running', '1'],
    ]);
  });

  it("runs preStop before the stop signal when the pod goes, from the container's label, and a failing one still lets it stop", async () => {
    const source = new ScriptedSource('a', { initial: [hooked({ preStop: exec('nginx -s quit') })] });
    const k = f.kubelet([source]);
    await k.start();
    await settle();
    const { id, labels } = f.one('web', 'main');
    expect(JSON.parse(labels[Labels.preStop] ?? '{}')).toEqual(exec('nginx -s quit'));
    source.sink.update([]);
    await settle();
    await k.sync();
    const ops = callsOn(id);
    expect(ops.indexOf('exec')).toBeGreaterThanOrEqual(0);
    expect(ops.indexOf('exec')).toBeLessThan(ops.indexOf('stop'));
    expect(f.of('web')).toEqual([]);

    // A preStop that fails is said, and the container stops all the same.
    f.runtime.setFault('exec', () => new KubeletError('Conflict', 'exec refused'));
    source.sink.update([hooked({ preStop: exec('false') })]);
    await settle();
    await k.sync();
    const second = f.one('web', 'main').id;
    source.sink.update([]);
    await settle();
    await k.sync();
    expect(f.events.events.find((e) => e.reason === 'FailedPreStopHook')?.message).toContain(
      'preStop hook (exec ["sh","-c","false"]) failed',
    );
    expect(callsOn(second)).toContain('stop');
    expect(f.of('web')).toEqual([]);
  });

  it("sends an httpGet hook to the pod's IP and the named port of the container", async () => {
    const network = new FakeNetwork();
    const k = f.kubelet([new ScriptedSource('a', { initial: [hooked({ postStart: { httpGet: { path: '/warm', port: 'http' } } })] })], {
      probes: { network },
    });
    await k.start();
    await settle();
    const ip = f.runtime.sandboxSnapshot().find((s) => s.labels[Labels.sandbox] === 'web')?.ip;
    expect(network.calls).toEqual([expect.objectContaining({ kind: 'http', host: ip, port: 8080, path: '/warm' })]);
    expect(f.one('web', 'main').state).toBe('running');
  });

  it('refuses what no hook can be, by its path', () => {
    expect(() => hooked({ postStart: { tcpSocket: { port: 80 } } })).toThrow(/lifecycle\.postStart\.tcpSocket.{5,20}is not run as a hook/);
    expect(() => hooked({ preStop: { sleep: { seconds: -1 } } })).toThrow(/lifecycle\.preStop\.sleep\.seconds.{5,20}must be 0-86400/);
    expect(() => hooked({ preStop: { httpGet: { port: 'nope' } } })).toThrow(
      /lifecycle\.preStop\.httpGet\.port.{5,20}must be a port number or name/,
    );
    expect(() => hooked({ preStop: { exec: { command: ['a'] }, sleep: { seconds: 1 } } })).toThrow(
      /must have exactly one of exec, httpGet, sleep/,
    );
  });
});
