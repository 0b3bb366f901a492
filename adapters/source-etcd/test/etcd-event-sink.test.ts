import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Tokens, type EventSink, type KubeletEvent } from '@kubelet-ts/core';
import type { Etcd3 } from 'etcd3';
import { createEtcdClient } from '../src/etcd-client.js';
import { EtcdEventSink, registerEtcdEventSink, type EtcdEventSinkOptions } from '../src/index.js';
import { EtcdServer } from '@kubelet-ts/testkit';
import { RecordingLogger, recordingClock, until } from './recording.js';

const event = (message: string, fields: Partial<KubeletEvent> = {}): KubeletEvent => ({
  type: 'ContainerStarted',
  time: 1_700_000_000_000,
  message,
  ...fields,
});

let prefixes = 0;
/** A prefix of its own per test, so that tests sharing an etcd never see each other's events. */
const nextPrefix = () => `/events-${++prefixes}`;

describe('EtcdEventSink', () => {
  let etcd: EtcdServer;
  let admin: Etcd3;
  let sink: EtcdEventSink | undefined;

  beforeAll(async () => {
    etcd = await EtcdServer.launch();
    admin = createEtcdClient({ endpoints: [etcd.endpoint], requestTimeoutMs: 5000 });
  });

  afterEach(async () => {
    await sink?.close();
    sink = undefined;
    if (!etcd.running) await etcd.start();
  });

  afterAll(async () => {
    admin?.close();
    await etcd?.destroy();
  });

  const create = (options: { [K in keyof EtcdEventSinkOptions]?: EtcdEventSinkOptions[K] | undefined } = {}) => {
    const logger = new RecordingLogger();
    const prefix = nextPrefix();
    sink = new EtcdEventSink({
      endpoints: [etcd.endpoint],
      prefix,
      retryInitialMs: 50,
      retryMaxMs: 100,
      logger,
      ...options,
    } as EtcdEventSinkOptions);
    return { sink, logger, prefix };
  };

  /** The events stored under `prefix`, in key order. */
  const stored = async (prefix: string) => {
    const values = await admin.getAll().prefix(`${prefix}/`).sort('Key', 'Ascend').strings();
    return Object.entries(values).map(([key, value]) => ({ key, event: JSON.parse(value) as KubeletEvent }));
  };

  it('writes each event as JSON under <prefix>/<pod>/<container>/<time>-<seq>, on one lease of two days', async () => {
    const { sink } = create({ prefix: undefined }); // the default, /events
    const started = event('started web/nginx', { podId: 'web', container: 'nginx', time: 1_700_000_000_123 });
    sink.emit(started);
    sink.emit(event('pod web created', { podId: 'web', type: 'ContainerCreated' }));
    sink.emit(event('source etcd restarted', { type: 'SourceRestarted', source: 'etcd' }));
    await sink.flush();
    const events = await stored('/events');
    expect(events.map((e) => e.key)).toEqual([
      expect.stringMatching(/^\/events\/_agent\/_pod\/1700000000000-\d{6}$/),
      expect.stringMatching(/^\/events\/web\/_pod\/1700000000000-\d{6}$/),
      expect.stringMatching(/^\/events\/web\/nginx\/1700000000123-\d{6}$/),
    ]);
    expect(events[2]?.event).toEqual(started);

    const leases = new Set<string>();
    for (const { key } of events) leases.add((await admin.get(key).exec()).kvs[0]?.lease ?? '0');
    expect(leases.size).toBe(1); // one grant for all three
    const [lease] = [...leases];
    expect(lease).not.toBe('0');
    const ttl = await etcd.gateway('/v3/lease/timetolive', { ID: lease });
    expect(Number(ttl.grantedTTL)).toBe(172_800);
    expect(Number(ttl.TTL)).toBeGreaterThan(172_700);
  });

  it('takes a TTL and a prefix, and keeps "/" in a name from making extra levels', async () => {
    const { sink, prefix } = create({ ttlSeconds: 3600 });
    sink.emit(event('odd', { podId: 'a/b', container: 'c' }));
    await sink.flush();
    const [only] = await stored(prefix);
    expect(only?.key).toMatch(new RegExp(`^${prefix}/a%2Fb/c/`));
    const ttl = await etcd.gateway('/v3/lease/timetolive', { ID: (await admin.get(only?.key ?? '').exec()).kvs[0]?.lease });
    expect(Number(ttl.grantedTTL)).toBe(3600);
  });

  it('grants a new lease when etcd no longer knows the one in use', async () => {
    const { sink, prefix } = create();
    sink.emit(event('one'));
    await sink.flush();
    const [first] = await stored(prefix);
    const lease = (await admin.get(first?.key ?? '').exec()).kvs[0]?.lease ?? '';
    await etcd.gateway('/v3/lease/revoke', { ID: lease }); // takes the first event with it
    sink.emit(event('two'));
    await sink.flush();
    const events = await stored(prefix);
    expect(events.map((e) => e.event.message)).toEqual(['two']);
    expect((await admin.get(events[0]?.key ?? '').exec()).kvs[0]?.lease).not.toBe(lease);
  });

  it('does not throw while etcd is down, logs the outage once, and writes the queue when etcd is back', async () => {
    const { sink, logger, prefix } = create();
    await etcd.stop();
    expect(() => sink.emit(event('e0'))).not.toThrow();
    await sink.flush(); // resolves on the failed attempt: it does not wait for etcd
    for (const n of [1, 2, 3]) sink.emit(event(`e${n}`));
    await sink.flush();
    await new Promise((r) => setTimeout(r, 300)); // back-off retries meanwhile
    expect(sink.pending).toBe(4);
    expect(logger.entries.filter((e) => e.level === 'warn')).toHaveLength(1);
    expect(logger.find('cannot write events to etcd')[0]?.fields).toMatchObject({ endpoints: [etcd.endpoint] });
    expect(logger.find('etcd event write failed').length).toBeGreaterThanOrEqual(2);
    await etcd.start();
    await sink.flush();
    expect((await stored(prefix)).map((e) => e.event.message)).toEqual(['e0', 'e1', 'e2', 'e3']);
    expect(sink.pending).toBe(0);
    expect(logger.find('writing events to etcd again')).toHaveLength(1);
    expect(logger.find('writing events to etcd again')[0]?.fields).toEqual({ dropped: 0 });
  });

  it('waits its retries on the clock it is given: 50 ms, doubling, capped at 100 ms', async () => {
    const { clock, delays } = recordingClock();
    const { sink } = create({ clock, retryJitter: 0 });
    await etcd.stop();
    sink.emit(event('e0'));
    await until(() => delays.length >= 3, 'retries');
    expect(delays.slice(0, 3)).toEqual([50, 100, 100]);
  });

  it('keeps the newest events in a bounded queue while etcd is down, and counts the dropped ones', async () => {
    const { sink, logger, prefix } = create({ maxQueued: 3 });
    await etcd.stop();
    for (let n = 0; n < 10; n += 1) sink.emit(event(`e${n}`));
    await sink.flush();
    expect(sink.pending).toBe(3);
    expect(sink.dropped).toBe(7);
    expect(logger.find('queue full')).toHaveLength(1);
    await etcd.start();
    await sink.flush();
    expect((await stored(prefix)).map((e) => e.event.message)).toEqual(['e7', 'e8', 'e9']);
    expect(logger.find('writing events to etcd again')[0]?.fields).toEqual({ dropped: 7 });
  });

  it('writes without flush, in the order emitted', async () => {
    const { sink, prefix } = create();
    for (let n = 0; n < 20; n += 1) sink.emit(event(`e${String(n).padStart(2, '0')}`));
    const deadline = Date.now() + 5000;
    while ((await stored(prefix)).length < 20 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect((await stored(prefix)).map((e) => e.event.message)).toEqual(
      Array.from({ length: 20 }, (_, n) => `e${String(n).padStart(2, '0')}`),
    );
  });

  it('writes what is queued on close, ignores later events, and leaves a client it was given open', async () => {
    const { sink, prefix } = create({ endpoints: undefined, client: admin });
    sink.emit(event('last words'));
    await sink.close();
    await sink.close();
    sink.emit(event('after close'));
    expect((await stored(prefix)).map((e) => e.event.message)).toEqual(['last words']); // admin still works
    expect(sink.pending).toBe(0);
  });

  it('closes while etcd is down without waiting for it', async () => {
    const { sink, logger } = create();
    await etcd.stop();
    sink.emit(event('lost'));
    const began = Date.now();
    await sink.dispose();
    expect(Date.now() - began).toBeLessThan(2000);
    expect(logger.find('closing the etcd event sink with events not written')[0]?.fields).toEqual({ unwritten: 1 });
  });

  it('registers under Tokens.EventSink', async () => {
    const registered: Array<{ token: symbol; value: unknown }> = [];
    const registry = { register: <T>(token: symbol, provider: { useValue: T }) => registered.push({ token, value: provider.useValue }) };
    sink = registerEtcdEventSink(registry, { endpoints: [etcd.endpoint] });
    const asEventSink: EventSink = sink;
    expect(registered).toEqual([{ token: Tokens.EventSink, value: asEventSink }]);
  });
});
