import 'reflect-metadata';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { Labels, Tokens, type Clock, type EventSink, type Logger, type ManifestSource } from '@kubelet-ts/core';
import { MemoryRuntime, registerMemoryRuntime } from '@kubelet-ts/runtime-memory';
import { ManualClock } from '@kubelet-ts/conformance';
import { container, type DependencyContainer } from 'tsyringe';
import { resolveKubelet } from '../src/di.js';
import type { Kubelet } from '../src/kubelet.js';
import type { PassResult } from '../src/sync-loop.js';
import { pod, RecordingEventSink, RecordingLogger, settle, ScriptedSource } from './helpers.js';

describe('resolveKubelet', () => {
  let child: DependencyContainer;
  let clock: ManualClock;
  let opened: Kubelet[];

  beforeEach(() => {
    child = container.createChildContainer();
    clock = new ManualClock(5_000_000);
    opened = [];
  });

  afterEach(async () => {
    await Promise.all(opened.map((k) => k.close()));
  });

  function resolve(settings: Parameters<typeof resolveKubelet>[1] = { hostname: 'node-a' }): Kubelet {
    const k = resolveKubelet(child, settings);
    opened.push(k);
    return k;
  }

  const addSource = (source: ManifestSource) => child.register(Tokens.Source, { useValue: source });

  it('uses the registered runtime and sources, in registration order as their priority', async () => {
    const runtime = registerMemoryRuntime(child, { clock, pullable: 'any' });
    const events = new RecordingEventSink();
    child.register(Tokens.EventSink, { useValue: events as EventSink });
    child.register(Tokens.Clock, { useValue: clock as Clock });
    const first = new ScriptedSource('first', { initial: [pod('web', 'nginx:first')] });
    const second = new ScriptedSource('second', { initial: [pod('web', 'nginx:second'), pod('db', 'postgres:16')] });
    addSource(first);
    addSource(second);

    const k = resolve();
    expect(k.status().sources.map((s) => s.name)).toEqual(['first', 'second']);
    await k.start();
    await settle();

    expect(first.starts).toBe(1);
    expect(second.starts).toBe(1);
    const web = runtime.snapshot().filter((c) => c.labels[Labels.manifestId] === 'web');
    expect(web).toHaveLength(1);
    expect(web[0]).toMatchObject({ image: 'nginx:first', labels: { [Labels.source]: 'first', [Labels.node]: 'node-a' } });
    expect(runtime.snapshot().filter((c) => c.labels[Labels.manifestId] === 'db')).toHaveLength(1);
    expect(events.ofType('ManifestConflict')).toEqual([expect.objectContaining({ podId: 'web', source: 'second' })]);
  });

  it('puts the later-registered source first when registered the other way round', async () => {
    const runtime = registerMemoryRuntime(child, { clock, pullable: 'any' });
    child.register(Tokens.Clock, { useValue: clock as Clock });
    addSource(new ScriptedSource('second', { initial: [pod('web', 'nginx:second')] }));
    addSource(new ScriptedSource('first', { initial: [pod('web', 'nginx:first')] }));
    const k = resolve();
    await k.start();
    await settle();
    expect(runtime.snapshot().map((c) => c.image)).toEqual(['nginx:second']);
  });

  it('uses the registered event sink and clock', async () => {
    registerMemoryRuntime(child, { clock, pullable: 'any' });
    const events = new RecordingEventSink();
    child.register(Tokens.EventSink, { useValue: events as EventSink });
    child.register(Tokens.Clock, { useValue: clock as Clock });
    addSource(new ScriptedSource('file', { initial: [pod('web')] }));
    const k = resolve({ hostname: 'node-a', syncFrequencyMs: 30_000 });
    await k.start();
    await settle();

    expect(events.types('web')).toEqual(['SandboxCreated', 'ImagePulled', 'ContainerCreated', 'ContainerStarted']);
    expect(events.events.every((e) => e.time === 5_000_000)).toBe(true);

    // The periodic pass runs on the registered clock, at the given frequency.
    const passes: PassResult[] = [];
    k.on('pass', (r) => passes.push(r));
    await clock.advance(29_999);
    expect(passes).toEqual([]);
    await clock.advance(1);
    expect(passes).toEqual([expect.objectContaining({ startedAt: 5_030_000 })]);
  });

  it('uses the registered logger, and logs events through it when no event sink is registered', async () => {
    const runtime = registerMemoryRuntime(child, { clock, pullable: 'any' });
    const logger = new RecordingLogger();
    child.register(Tokens.Logger, { useValue: logger as Logger });
    child.register(Tokens.Clock, { useValue: clock as Clock });
    addSource(new ScriptedSource('file', { initial: [pod('web')] }));
    const k = resolve();
    await k.start();
    await settle();

    expect(runtime.snapshot()).toHaveLength(1);
    expect(logger.entries.find((l) => l.message === 'kubelet starting')?.fields).toMatchObject({
      hostname: 'node-a',
      runtime: 'memory',
      sources: ['file'],
    });
    const started = logger.entries.filter((l) => l.fields['event'] === 'ContainerStarted');
    expect(started).toEqual([
      expect.objectContaining({ level: 'info', fields: expect.objectContaining({ podId: 'web', container: 'web' }) }),
    ]);
  });

  it('builds an agent with no sources when none is registered', async () => {
    const runtime = registerMemoryRuntime(child, { clock });
    child.register(Tokens.Clock, { useValue: clock as Clock });
    const k = resolve();
    expect(k.status().sources).toEqual([]);
    await k.start();
    await expect(k.sync()).resolves.toMatchObject({ desired: 0, actions: 0 });
    expect(runtime.snapshot()).toEqual([]);
  });

  it('fails without a registered runtime', () => {
    addSource(new ScriptedSource('file'));
    expect(() => resolveKubelet(child, { hostname: 'node-a' })).toThrow();
  });

  it('sees registrations of a parent container', async () => {
    const runtime = new MemoryRuntime({ clock, pullable: 'any' });
    const parent = container.createChildContainer();
    parent.register(Tokens.Runtime, { useValue: runtime });
    parent.register(Tokens.Clock, { useValue: clock as Clock });
    parent.register(Tokens.Source, { useValue: new ScriptedSource('file', { initial: [pod('web')] }) as ManifestSource });
    child = parent.createChildContainer();
    const k = resolve();
    await k.start();
    await settle();
    expect(runtime.snapshot().map((c) => c.labels[Labels.manifestId])).toEqual(['web']);
    expect(k.status().sources.map((s) => s.name)).toEqual(['file']);
  });
});
