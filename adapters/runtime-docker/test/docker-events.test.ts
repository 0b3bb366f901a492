import { PassThrough } from 'node:stream';
import { describe, expect, it } from '@jest/globals';
import { KubeletError, Labels, silentLogger, type ContainerEvent } from '@kubelet-ts/core';
import { containerEventOf, dockerEvents, eventFilters, type DockerEventsOptions } from '../src/docker-events.js';
import type { EngineKind } from '../src/engine-kind.js';

/** An engine line as Docker writes it; Podman's differ only where the tests say. */
const line = (action: string, id: string, attributes: Record<string, string>, timeNano = 1_700_000_000_123_000_000) =>
  JSON.stringify({
    status: action,
    id,
    Type: 'container',
    Action: action,
    Actor: { ID: id, Attributes: { image: 'busybox', ...attributes } },
    time: 1_700_000_000,
    timeNano,
  });
const ours = { [Labels.manifestId]: 'web' };

function fakeEngine(kind: EngineKind = 'docker') {
  const stream = new PassThrough();
  const asked: Parameters<DockerEventsOptions['getEvents']>[0][] = [];
  const options: DockerEventsOptions = {
    getEvents: async (o) => {
      asked.push(o);
      return stream;
    },
    engine: async () => kind,
    endpoint: 'unix:///fake.sock',
    logger: silentLogger,
  };
  return { stream, asked, options };
}

describe('Docker events', () => {
  it('maps start, die (with its exit code) and destroy of our containers; others and foreign ones are dropped', () => {
    expect(containerEventOf(JSON.parse(line('start', 'c1', ours)), 0)).toEqual({
      type: 'started',
      containerId: 'c1',
      podId: 'web',
      time: 1_700_000_000_123,
    });
    expect(containerEventOf(JSON.parse(line('die', 'c1', { ...ours, exitCode: '137' })), 0)).toMatchObject({
      type: 'exited',
      exitCode: 137,
    });
    expect(containerEventOf(JSON.parse(line('destroy', 'c1', ours)), 0)).toMatchObject({ type: 'removed', containerId: 'c1' });
    expect(containerEventOf(JSON.parse(line('kill', 'c1', ours)), 0)).toBeUndefined();
    expect(containerEventOf(JSON.parse(line('start', 'c2', { owner: 'x' })), 0)).toBeUndefined();
    // Podman's removal, and a line with no time: the adapter's.
    expect(containerEventOf({ Type: 'container', Action: 'remove', Actor: { ID: 'c3', Attributes: ours } }, 42)).toEqual({
      type: 'removed',
      containerId: 'c3',
      podId: 'web',
      time: 42,
    });
    // A die without a readable code is still an exit.
    expect(containerEventOf(JSON.parse(line('die', 'c1', ours)), 0)).toEqual({
      type: 'exited',
      containerId: 'c1',
      podId: 'web',
      time: 1_700_000_000_123,
    });
  });

  it('asks Docker for our label and start/die/destroy, Podman for start/died/remove (its label filter wants a value)', () => {
    expect(eventFilters('docker')).toEqual({ type: ['container'], label: [Labels.manifestId], event: ['start', 'die', 'destroy'] });
    expect(eventFilters('podman')).toEqual({ type: ['container'], event: ['start', 'died', 'remove'] });
  });

  it('reads lines split across chunks and chunks holding several, in order, since the first next()', async () => {
    const { stream, asked, options } = fakeEngine('podman');
    const abort = new AbortController();
    const before = Date.now() / 1000;
    const it = dockerEvents(abort.signal, options);
    const first = it.next();
    const text =
      [
        line('start', 'c1', ours),
        line('die', 'c1', { ...ours, exitCode: '3' }),
        'not json',
        line('start', 'foreign', {}),
        line('remove', 'c1', ours),
      ].join('\n') + '\n';
    for (let i = 0; i < text.length; i += 37) stream.write(text.slice(i, i + 37));
    const events: ContainerEvent[] = [
      (await first).value as ContainerEvent,
      (await it.next()).value as ContainerEvent,
      (await it.next()).value as ContainerEvent,
    ];
    expect(events.map((e) => [e.type, e.containerId, e.exitCode])).toEqual([
      ['started', 'c1', undefined],
      ['exited', 'c1', 3],
      ['removed', 'c1', undefined],
    ]);
    expect(asked[0]?.filters).toEqual(eventFilters('podman'));
    expect(asked[0]?.since).toBeGreaterThanOrEqual(before - 0.001);
    abort.abort();
  });

  it('returns when the signal aborts, and closes the response', async () => {
    const { stream, options } = fakeEngine();
    const abort = new AbortController();
    const it = dockerEvents(abort.signal, options);
    const pending = it.next();
    await new Promise((resolve) => setImmediate(resolve));
    abort.abort();
    await expect(pending).resolves.toEqual({ done: true, value: undefined });
    expect(stream.destroyed).toBe(true);
  });

  it('ends with Unavailable when the engine closes the stream or it fails, keeping the cause', async () => {
    const closed = fakeEngine();
    const one = dockerEvents(new AbortController().signal, closed.options);
    const p1 = one.next();
    await new Promise((resolve) => setImmediate(resolve));
    closed.stream.end();
    await expect(p1).rejects.toMatchObject({ code: 'Unavailable', message: expect.stringContaining('engine closed it') });

    const broken = fakeEngine();
    const two = dockerEvents(new AbortController().signal, broken.options);
    const p2 = two.next();
    await new Promise((resolve) => setImmediate(resolve));
    const reset = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    broken.stream.destroy(reset);
    const error = await p2.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(KubeletError);
    expect(error).toMatchObject({ code: 'Unavailable', cause: reset });
  });

  it('fails with Unavailable, saying where, when no engine answers the subscription', async () => {
    const { options } = fakeEngine();
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    const it = dockerEvents(new AbortController().signal, { ...options, getEvents: () => Promise.reject(refused) });
    await expect(it.next()).rejects.toMatchObject({ code: 'Unavailable', message: expect.stringContaining('unix:///fake.sock') });
  });
});
