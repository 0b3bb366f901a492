import { describe, expect, it } from '@jest/globals';
import { KubeletError, type ContainerSpec, type PortBinding } from '@kubelet-ts/core';
import { ManualClock } from '@kubelet-ts/conformance';
import { MemoryRuntime } from '../src/index.js';
import { podSandbox, spec } from './spec-fixture.js';

async function running(runtime: MemoryRuntime, sandbox: string, name: string, extra: Partial<ContainerSpec> = {}) {
  const c = await runtime.create(spec(name, extra), sandbox);
  await runtime.start(c.id);
  return c.id;
}

describe('MemoryRuntime', () => {
  it('lets a test make a container exit or crash, with its exit code and time', async () => {
    const clock = new ManualClock(1000);
    const runtime = new MemoryRuntime({ clock, images: ['app:1'] });
    const id = await running(runtime, await podSandbox(runtime), 'a');
    await clock.advance(500);
    runtime.exit(id, 3);
    const c = await runtime.inspect(id);
    expect(c).toMatchObject({ state: 'exited', exitCode: 3, startedAt: 1000, finishedAt: 1500 });
  });

  it('logs every call in order, with its target and time', async () => {
    const clock = new ManualClock(7);
    const runtime = new MemoryRuntime({ clock, images: ['app:1'] });
    const id = await running(runtime, await podSandbox(runtime), 'a');
    await runtime.list();
    expect(runtime.calls).toEqual([
      { op: 'runSandbox', target: 'POD--pod--1', time: 7 },
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
    const sandbox = await podSandbox(runtime);
    runtime.setFault('create', (call) => (call.target === 'bad' ? new KubeletError('Internal', 'boom') : undefined));
    await expect(runtime.create(spec('bad'), sandbox)).rejects.toThrow('boom');
    await expect(runtime.create(spec('good'), sandbox)).resolves.toMatchObject({ name: 'good' });
    runtime.setFault('create', undefined);
    await expect(runtime.create(spec('bad'), sandbox)).resolves.toMatchObject({ name: 'bad' });
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
    const id = await running(runtime, await podSandbox(runtime), 'a');
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
    const id = await running(runtime, await podSandbox(runtime), 'stubborn');
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
    const pulls = Promise.all([runtime.images.pull('app:2'), runtime.images.pull('app:2')]);
    await clock.advance(100);
    await pulls;
    expect(await runtime.images.hasImage('app:2')).toBe(true);
    expect(clock.pending).toBe(0); // one transfer timer, not two
  });

  it('creates a container only in a sandbox it has: NotFound for an unknown or removed one', async () => {
    const runtime = new MemoryRuntime({ images: ['app:1'] });
    await expect(runtime.create(spec('a'), 'f'.repeat(12))).rejects.toMatchObject({ code: 'NotFound' });
    const sandbox = await podSandbox(runtime);
    await runtime.removeSandbox(sandbox);
    await expect(runtime.create(spec('a'), sandbox)).rejects.toMatchObject({ code: 'NotFound' });
    expect(runtime.snapshot()).toEqual([]);
  });

  it('refuses to run a sandbox whose host port another ready sandbox holds (ports are published by sandboxes only)', async () => {
    const runtime = new MemoryRuntime({ images: ['app:1'] });
    const port: PortBinding[] = [{ containerPort: 80, hostPort: 8080, protocol: 'TCP' }];
    const pod = (name: string, ports: PortBinding[]) => ({ name, podId: name, hostname: name, ports, labels: {} });
    const first = await runtime.runSandbox(pod('first', port));
    await expect(runtime.runSandbox(pod('second', port))).rejects.toMatchObject({ code: 'Conflict' });
    expect(runtime.sandboxSnapshot().map((s) => s.name)).toEqual(['first']);
    // A container of the first pod publishes nothing of its own: its ports are the sandbox's.
    await running(runtime, first.id, 'web', { ports: port });
    await expect(runtime.runSandbox(pod('udp', [{ ...port[0]!, protocol: 'UDP' }]))).resolves.toMatchObject({ state: 'ready' });
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
