import { describe, expect, it } from '@jest/globals';
import { KubeletError, type ContainerSpec } from '@kubelet-ts/core';
import { ManualClock } from '@kubelet-ts/conformance';
import { MemoryRuntime } from '../src/index.js';
import { spec } from './spec-fixture.js';

async function running(runtime: MemoryRuntime, name: string, extra: Partial<ContainerSpec> = {}) {
  const c = await runtime.create(spec(name, extra));
  await runtime.start(c.id);
  return c.id;
}

describe('MemoryRuntime', () => {
  it('lets a test make a container exit or crash, with its exit code and time', async () => {
    const clock = new ManualClock(1000);
    const runtime = new MemoryRuntime({ clock, images: ['app:1'] });
    const id = await running(runtime, 'a');
    await clock.advance(500);
    runtime.exit(id, 3);
    const c = await runtime.inspect(id);
    expect(c).toMatchObject({ state: 'exited', exitCode: 3, startedAt: 1000, finishedAt: 1500 });
  });

  it('logs every call in order, with its target and time', async () => {
    const clock = new ManualClock(7);
    const runtime = new MemoryRuntime({ clock, images: ['app:1'] });
    const id = await running(runtime, 'a');
    await runtime.list();
    expect(runtime.calls).toEqual([
      { op: 'create', target: 'a', time: 7 },
      { op: 'start', target: id, time: 7 },
      { op: 'list', time: 7 },
    ]);
    expect(runtime.callCount('start')).toBe(1);
  });

  it('fails the next calls of one operation with the injected code, then recovers', async () => {
    const runtime = new MemoryRuntime({ images: ['app:1'] });
    runtime.failNext('list', 'Unavailable', 2);
    await expect(runtime.list()).rejects.toMatchObject({ code: 'Unavailable' });
    await expect(runtime.list()).rejects.toBeInstanceOf(KubeletError);
    await expect(runtime.list()).resolves.toEqual([]);
  });

  it('takes a custom fault that sees each call', async () => {
    const runtime = new MemoryRuntime({ images: ['app:1'] });
    runtime.setFault('create', (call) => (call.target === 'bad' ? new KubeletError('Internal', 'boom') : undefined));
    await expect(runtime.create(spec('bad'))).rejects.toThrow('boom');
    await expect(runtime.create(spec('good'))).resolves.toMatchObject({ name: 'good' });
    runtime.setFault('create', undefined);
    await expect(runtime.create(spec('bad'))).resolves.toMatchObject({ name: 'bad' });
  });

  it('delays an operation by its injected latency on the clock', async () => {
    const clock = new ManualClock();
    const runtime = new MemoryRuntime({ clock, images: ['app:1'] });
    runtime.setLatency('list', 2000);
    let done = false;
    const listing = runtime.list().then(() => (done = true));
    await clock.advance(1999);
    expect(done).toBe(false);
    await clock.advance(1);
    await listing;
    expect(done).toBe(true);
  });

  it('takes a latency function that sees each call, and clears latency with 0', async () => {
    const clock = new ManualClock();
    const runtime = new MemoryRuntime({ clock, images: ['app:1'] });
    runtime.setLatency('inspect', (call) => (call.target === 'slow' ? 500 : 0));
    const id = await running(runtime, 'a');
    await expect(runtime.inspect(id)).resolves.toMatchObject({ id });
    let done = false;
    const slow = runtime.inspect('slow').catch(() => (done = true));
    await clock.advance(499);
    expect(done).toBe(false);
    await clock.advance(1);
    await slow;
    expect(done).toBe(true);
    runtime.setLatency('list', 2000);
    runtime.setLatency('list', 0);
    await expect(runtime.list()).resolves.toHaveLength(1);
  });

  it('kills a container that ignores the stop signal when the timeout runs out', async () => {
    const clock = new ManualClock();
    const runtime = new MemoryRuntime({ clock, images: ['app:1'] });
    const id = await running(runtime, 'stubborn');
    runtime.hangOnStop(id);
    const stopping = runtime.stop(id, 30);
    await clock.advance(29_000);
    expect((await runtime.inspect(id)).state).toBe('running');
    await clock.advance(1_000);
    await stopping;
    expect(await runtime.inspect(id)).toMatchObject({ state: 'exited', exitCode: 137, finishedAt: 30_000 });
  });

  it('shares one pull between concurrent requests for an image', async () => {
    const clock = new ManualClock();
    const runtime = new MemoryRuntime({ clock, pullLatencyMs: 100 });
    const pulls = Promise.all([runtime.pull('app:2'), runtime.pull('app:2')]);
    await clock.advance(100);
    await pulls;
    expect(await runtime.hasImage('app:2')).toBe(true);
    expect(clock.pending).toBe(0); // one transfer timer, not two
  });

  it('refuses to start a container whose host port another running container holds', async () => {
    const runtime = new MemoryRuntime({ images: ['app:1'] });
    const port = [{ containerPort: 80, hostPort: 8080, protocol: 'TCP' as const }];
    await running(runtime, 'first', { ports: port });
    const second = await runtime.create(spec('second', { ports: port }));
    await expect(runtime.start(second.id)).rejects.toMatchObject({ code: 'Conflict' });
    expect((await runtime.inspect(second.id)).state).toBe('created');
    const udp = await runtime.create(spec('udp', { ports: [{ ...port[0]!, protocol: 'UDP' }] }));
    await expect(runtime.start(udp.id)).resolves.toBeUndefined();
  });
});

describe('ManualClock', () => {
  it('fires timers in due order and only when time reaches them', async () => {
    const clock = new ManualClock();
    const fired: string[] = [];
    clock.setTimeout(() => fired.push('b'), 20);
    clock.setTimeout(() => fired.push('a'), 10);
    const cancelled = clock.setTimeout(() => fired.push('never'), 15);
    clock.clearTimeout(cancelled);
    await clock.advance(15);
    expect(fired).toEqual(['a']);
    await clock.advance(5);
    expect(fired).toEqual(['a', 'b']);
    expect(clock.now()).toBe(20);
  });
});
