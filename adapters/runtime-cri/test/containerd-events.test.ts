import { PassThrough } from 'node:stream';
import { describe, expect, it } from '@jest/globals';
import { Labels, type ContainerEvent } from '@kubelet-ts/core';
import { ContainerdEvents, type ContainerdEnvelope, type ContainerdEventsOptions } from '../src/containerd-events.js';

const NS = 'k8s.io';
const at = { seconds: '1700000000', nanos: 250_000_000 };
const start = (id: string): ContainerdEnvelope => ({
  namespace: NS,
  topic: '/tasks/start',
  timestamp: at,
  event: { '@type': 'containerd.events.TaskStart', containerId: id },
});
const exit = (id: string, process: string, status: number): ContainerdEnvelope => ({
  namespace: NS,
  topic: '/tasks/exit',
  timestamp: at,
  event: {
    '@type': 'containerd.events.TaskExit',
    containerId: id,
    id: process,
    exitStatus: status,
    exitedAt: { seconds: '1700000001', nanos: 0 },
  },
});
const deleted = (id: string): ContainerdEnvelope => ({
  namespace: NS,
  topic: '/containers/delete',
  timestamp: at,
  event: { '@type': 'containerd.events.ContainerDelete', id },
});

/** A containerd whose containers are `ours` (pod web), `adopted` (pod api), `foreign`, and the sandbox `pause` (no CRI container). */
function fakeContainerd(overrides: Partial<ContainerdEventsOptions> = {}) {
  const envelopes = new PassThrough({ objectMode: true });
  const subscribed: string[][] = [];
  let closed = 0;
  const asked: string[] = [];
  const events = new ContainerdEvents({
    endpoint: 'unix:///fake.sock',
    labelsOf: async (id): Promise<Record<string, string> | undefined> => {
      asked.push(id);
      if (id === 'ours') return { [Labels.manifestId]: 'web' };
      if (id === 'adopted') return { [Labels.manifestId]: 'api' };
      if (id === 'foreign') return { owner: 'someone-else' };
      return undefined;
    },
    subscribe: (filters) => {
      subscribed.push([...filters]);
      return {
        envelopes,
        close() {
          closed += 1;
          envelopes.destroy();
        },
      };
    },
    ...overrides,
  });
  return { events, envelopes, subscribed, asked, closed: () => closed };
}

async function take(it: AsyncIterator<ContainerEvent>, n: number): Promise<ContainerEvent[]> {
  const out: ContainerEvent[] = [];
  for (let i = 0; i < n; i += 1) out.push((await it.next()).value as ContainerEvent);
  return out;
}

describe('containerd events', () => {
  it('maps start, the init process exit and delete of our containers; drops exec exits, sandboxes, foreign ones and other namespaces', async () => {
    const { events, envelopes, subscribed, asked } = fakeContainerd();
    // As the adapter's create (or a list) tells it, before the container starts.
    events.remember('ours', { [Labels.manifestId]: 'web' });
    const abort = new AbortController();
    const it = events.stream(abort.signal);
    const first = it.next();
    for (const e of [
      start('pause'),
      start('foreign'),
      { ...start('ours'), namespace: 'moby' },
      start('ours'),
      exit('ours', 'exec-1', 0),
      exit('ours', 'ours', 3),
      exit('pause', 'pause', 0),
      exit('adopted', 'adopted', 2),
      deleted('foreign'),
      deleted('never-seen'),
      deleted('ours'),
    ])
      envelopes.write(e);
    const seen = [(await first).value as ContainerEvent, ...(await take(it, 3))];
    expect(seen).toEqual([
      { type: 'started', containerId: 'ours', podId: 'web', time: 1_700_000_000_250 },
      { type: 'exited', containerId: 'ours', podId: 'web', exitCode: 3, time: 1_700_000_001_000 },
      { type: 'exited', containerId: 'adopted', podId: 'api', exitCode: 2, time: 1_700_000_001_000 },
      { type: 'removed', containerId: 'ours', podId: 'web', time: 1_700_000_000_250 },
    ]);
    // One status call per exit of a container it had not seen; none for a start of one (a
    // sandbox's pause task, a foreign container: the adapter knows its own before they start).
    expect(asked).toEqual(['pause', 'adopted']);
    expect(subscribed[0]).toEqual(['/tasks/start', '/tasks/exit', '/containers/delete'].map((t) => `namespace=="k8s.io",topic=="${t}"`));
    abort.abort();
  });

  it('knows containers from create and list without asking; passes an event on without its pod when the runtime cannot say', async () => {
    const { events, envelopes, asked } = fakeContainerd({
      labelsOf: () => Promise.reject(new Error('runtime busy')),
    });
    events.remember('made', { [Labels.manifestId]: 'api' });
    const abort = new AbortController();
    const it = events.stream(abort.signal);
    const first = it.next();
    envelopes.write(start('made'));
    envelopes.write(exit('unknown', 'unknown', 1));
    expect((await first).value).toMatchObject({ containerId: 'made', podId: 'api' });
    expect((await it.next()).value).toEqual({ type: 'exited', containerId: 'unknown', exitCode: 1, time: 1_700_000_001_000 });
    expect(asked).toEqual([]);
    abort.abort();
  });

  it('passes an exit of ours on only once CRI shows it, not one of a sandbox, a foreign container or an exec', async () => {
    const shown: string[] = [];
    let show: () => void = () => undefined;
    const { events, envelopes } = fakeContainerd({
      exitShown: (id) => {
        shown.push(id);
        return new Promise<void>((resolve) => (show = resolve));
      },
    });
    events.remember('ours', { [Labels.manifestId]: 'web' });
    const abort = new AbortController();
    const it = events.stream(abort.signal);
    let told: ContainerEvent | undefined;
    const next = it.next().then((r) => (told = r.value as ContainerEvent));
    for (const e of [exit('pause', 'pause', 0), exit('foreign', 'foreign', 1), exit('ours', 'exec-1', 0), exit('ours', 'ours', 3)])
      envelopes.write(e);
    await new Promise((resolve) => setTimeout(resolve, 50));
    // containerd said it; CRI has not caught up: nothing is told yet.
    expect(shown).toEqual(['ours']);
    expect(told).toBeUndefined();
    show();
    await next;
    expect(told).toMatchObject({ type: 'exited', containerId: 'ours', podId: 'web', exitCode: 3 });
    abort.abort();
  });

  it('returns when the signal aborts, cancelling the call', async () => {
    const { events, closed } = fakeContainerd();
    const abort = new AbortController();
    const pending = events.stream(abort.signal).next();
    await new Promise((resolve) => setImmediate(resolve));
    abort.abort();
    await expect(pending).resolves.toEqual({ done: true, value: undefined });
    expect(closed()).toBeGreaterThanOrEqual(1);
  });

  it('ends with Unavailable when containerd ends the stream, fails it, or the runtime closes', async () => {
    const ended = fakeContainerd();
    const one = ended.events.stream(new AbortController().signal).next();
    await new Promise((resolve) => setImmediate(resolve));
    ended.envelopes.end();
    await expect(one).rejects.toMatchObject({ code: 'Unavailable', message: expect.stringContaining('ended the stream') });

    const failed = fakeContainerd();
    const two = failed.events.stream(new AbortController().signal).next();
    await new Promise((resolve) => setImmediate(resolve));
    const gone = Object.assign(new Error('14 UNAVAILABLE: connection dropped'), { code: 14, details: 'connection dropped' });
    failed.envelopes.destroy(gone);
    await expect(two).rejects.toMatchObject({ code: 'Unavailable', cause: gone });

    const closing = fakeContainerd();
    const three = closing.events.stream(new AbortController().signal).next();
    await new Promise((resolve) => setImmediate(resolve));
    closing.events.close();
    await expect(three).rejects.toMatchObject({ code: 'Unavailable' });
  });

  it('an unexpected failure (not UNAVAILABLE) is still Unavailable: the caller reconnects', async () => {
    const { events, envelopes } = fakeContainerd();
    const pending = events.stream(new AbortController().signal).next();
    await new Promise((resolve) => setImmediate(resolve));
    envelopes.destroy(Object.assign(new Error('13 INTERNAL: boom'), { code: 13, details: 'boom' }));
    await expect(pending).rejects.toMatchObject({ code: 'Unavailable', message: expect.stringContaining('reconnect') });
  });
});
