import { describe, expect, it } from '@jest/globals';
import { Labels, type ContainerEvent } from '@kubelet-ts/core';
import { ManualClock } from '@kubelet-ts/conformance';
import { MemoryRuntime } from '../src/index.js';
import { podSandbox, spec } from './spec-fixture.js';

/** Takes `n` events from an open iterator. */
async function take(it: AsyncIterator<ContainerEvent>, n: number): Promise<ContainerEvent[]> {
  const out: ContainerEvent[] = [];
  while (out.length < n) {
    const r = await it.next();
    if (r.done === true) throw new Error(`the stream ended after ${out.length} of ${n} events`);
    out.push(r.value);
  }
  return out;
}

function open(runtime: MemoryRuntime, signal: AbortSignal): AsyncIterator<ContainerEvent> {
  return runtime.events(signal)[Symbol.asyncIterator]();
}

describe('MemoryRuntime events', () => {
  it('is an event source', () => {
    expect(new MemoryRuntime().capabilities.events).toBeDefined();
  });

  it('streams started, exited with its code and removed, in order, from the calls and the controls', async () => {
    const clock = new ManualClock(1000);
    const runtime = new MemoryRuntime({ clock, images: ['app:1'] });
    const abort = new AbortController();
    const it = open(runtime, abort.signal);
    const sandbox = await podSandbox(runtime);
    const first = it.next(); // subscribes
    const a = await runtime.create(spec('a'), sandbox);
    await runtime.start(a.id);
    await clock.advance(5);
    runtime.exit(a.id, 3);
    await runtime.remove(a.id);
    const b = await runtime.create(spec('b'), sandbox);
    await runtime.start(b.id);
    await runtime.stop(b.id, 10);
    const events = [(await first).value as ContainerEvent, ...(await take(it, 4))];
    expect(events).toEqual([
      { type: 'started', containerId: a.id, podId: 'pod', time: 1000 },
      { type: 'exited', containerId: a.id, podId: 'pod', exitCode: 3, time: 1005 },
      { type: 'removed', containerId: a.id, podId: 'pod', time: 1005 },
      { type: 'started', containerId: b.id, podId: 'pod', time: 1005 },
      { type: 'exited', containerId: b.id, podId: 'pod', exitCode: 0, time: 1005 },
    ]);
    abort.abort();
  });

  it('reports the containers a dying sandbox kills (137) and a removed sandbox takes with it', async () => {
    const runtime = new MemoryRuntime({ images: ['app:1'] });
    const sandbox = await runtime.runSandbox({
      name: 'POD--pod--1',
      podId: 'pod',
      hostname: 'pod',
      ports: [],
      labels: { [Labels.sandbox]: 'pod' },
    });
    const c = await runtime.create(spec('a'), sandbox.id);
    const abort = new AbortController();
    const it = open(runtime, abort.signal);
    const first = it.next();
    await runtime.start(c.id);
    runtime.killSandbox(sandbox.id);
    await runtime.removeSandbox(sandbox.id);
    const events = [(await first).value as ContainerEvent, ...(await take(it, 2))];
    expect(events.map((e) => [e.type, e.containerId, e.exitCode])).toEqual([
      ['started', c.id, undefined],
      ['exited', c.id, 137],
      ['removed', c.id, undefined],
    ]);
    abort.abort();
  });

  it('does not tell of foreign (unlabelled) containers, nor of changes before the first next()', async () => {
    const runtime = new MemoryRuntime({ images: ['app:1'] });
    const early = await runtime.create(spec('early'), await podSandbox(runtime));
    const abort = new AbortController();
    const it = open(runtime, abort.signal);
    await runtime.start(early.id); // before the stream subscribed: not replayed
    const first = it.next();
    // A foreign container, in a foreign sandbox (neither carries our labels).
    const foreign = await runtime.create(spec('foreign', { labels: { other: 'x' } }), await podSandbox(runtime, 'their-holder', {}));
    await runtime.start(foreign.id);
    runtime.exit(foreign.id, 1);
    runtime.exit(early.id, 2);
    expect(await first).toEqual({ done: false, value: expect.objectContaining({ type: 'exited', containerId: early.id, exitCode: 2 }) });
    abort.abort();
  });

  it('returns promptly when the signal aborts, a pending next() included, and lets go of the stream', async () => {
    const runtime = new MemoryRuntime({ images: ['app:1'] });
    const abort = new AbortController();
    const it = open(runtime, abort.signal);
    const pending = it.next();
    expect(runtime.openEventStreams).toBe(1);
    abort.abort();
    await expect(pending).resolves.toEqual({ done: true, value: undefined });
    expect(runtime.openEventStreams).toBe(0);
    // Already aborted: ends at once and never subscribes.
    await expect(open(runtime, abort.signal).next()).resolves.toEqual({ done: true, value: undefined });
    expect(runtime.openEventStreams).toBe(0);
  });

  it('drops what was buffered when the signal aborts', async () => {
    const runtime = new MemoryRuntime({ images: ['app:1'] });
    const abort = new AbortController();
    const it = open(runtime, abort.signal);
    const first = it.next();
    const c = await runtime.create(spec('a'), await podSandbox(runtime));
    await runtime.start(c.id);
    await first;
    runtime.exit(c.id, 1); // buffered, never taken
    abort.abort();
    await expect(it.next()).resolves.toEqual({ done: true, value: undefined });
  });

  it('breakEvents ends every open stream with Unavailable (or the given error); a new stream works again', async () => {
    const runtime = new MemoryRuntime({ images: ['app:1'] });
    const abort = new AbortController();
    const one = open(runtime, abort.signal);
    const two = open(runtime, abort.signal);
    const [p1, p2] = [one.next(), two.next()];
    runtime.breakEvents();
    await expect(p1).rejects.toMatchObject({ code: 'Unavailable', adapter: 'memory' });
    await expect(p2).rejects.toMatchObject({ code: 'Unavailable' });
    expect(runtime.openEventStreams).toBe(0);
    runtime.breakEvents(); // no stream open: nothing to end, nothing thrown

    const three = open(runtime, abort.signal);
    const p3 = three.next();
    const c = await runtime.create(spec('a'), await podSandbox(runtime));
    await runtime.start(c.id);
    await expect(p3).resolves.toMatchObject({ value: { type: 'started', containerId: c.id } });
    const p4 = three.next();
    runtime.breakEvents(new Error('engine restarted'));
    await expect(p4).rejects.toThrow('engine restarted');
    abort.abort();
  });
});
