import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import { Namespace, type Etcd3 } from 'etcd3';
import { createEtcdClient } from '../src/etcd-client.js';
import { EtcdManifestSource, type EtcdManifestSourceOptions } from '../src/index.js';
import { EtcdServer, TcpGate } from '@kubelet-ts/testkit';
import { RecordingLogger, RecordingSink, lastWatchRevision, recordingClock, until } from './recording.js';
import { list, manifest, nextHost, sleep } from './fixtures.js';

describe('EtcdManifestSource when etcd fails', () => {
  let etcd: EtcdServer;
  let admin: Etcd3;
  let gate: TcpGate | undefined;
  let source: EtcdManifestSource | undefined;

  beforeEach(async () => {
    etcd = await EtcdServer.launch();
    admin = createEtcdClient({ endpoints: [etcd.endpoint], requestTimeoutMs: 5000 });
  });

  afterEach(async () => {
    await source?.close();
    source = undefined;
    await gate?.close();
    gate = undefined;
    admin?.close();
    await etcd?.destroy();
  });

  const create = (endpoint: string, options: Partial<EtcdManifestSourceOptions> = {}) => {
    const logger = new RecordingLogger();
    source = new EtcdManifestSource({
      endpoints: [endpoint],
      hostname: nextHost(),
      retryInitialMs: 100,
      retryMaxMs: 200,
      logger,
      ...options,
    });
    return { source, logger, sink: new RecordingSink() };
  };

  it('starts while etcd is down, reports it once, and delivers the first read when etcd comes up', async () => {
    const { source, sink, logger } = create(etcd.endpoint);
    await admin.put(source.key).value(list(manifest('a')));
    await etcd.stop();
    const began = Date.now();
    await source.start(sink);
    expect(Date.now() - began).toBeLessThan(1000);
    expect(sink.errors.map((e) => e.code)).toEqual(['Unavailable']);
    expect(sink.errors[0]?.message).toContain(etcd.endpoint);
    await until(() => logger.find('etcd attempt failed').length >= 4, 'retries');
    expect(sink.updates).toEqual([]); // nothing is delivered before a read
    expect(sink.errors).toHaveLength(1); // once per outage
    await etcd.start();
    await sink.until(() => sink.ids.join() === 'a', 'the first read');
    await until(() => logger.find('etcd reachable again').length === 1, 'the recovery log');
    expect(sink.updates).toHaveLength(1);
    expect(sink.errors).toHaveLength(1);
  });

  it('waits its retries on the clock it is given: 100 ms, doubling, capped at 200 ms', async () => {
    const { clock, delays } = recordingClock();
    const { source, sink } = create(etcd.endpoint, { clock, retryJitter: 0 });
    await etcd.stop();
    await source.start(sink);
    await until(() => delays.length >= 4, 'retries');
    expect(delays.slice(0, 4)).toEqual([100, 200, 200, 200]);
  });

  it('takes up to half of each retry delay off at random by default, so that hosts that lost etcd together come back apart', async () => {
    await etcd.stop();
    const { clock, delays } = recordingClock();
    const randoms = [0, 0.5, 0.999, 0.2];
    const { source, sink } = create(etcd.endpoint, { clock, random: () => randoms.shift() ?? 0 });
    await source.start(sink);
    await until(() => delays.length >= 4, 'retries');
    // 100 and 200 ms of back-off (the cap), less the random part of half of it.
    expect(delays.slice(0, 4)).toEqual([100, 150, 100, 180]);
    await source.close();
    // With Math.random: ten hosts' first waits, between 50 and 100 ms, not all the same.
    const firsts: number[] = [];
    for (let i = 0; i < 10; i++) {
      const recorded = recordingClock();
      const s = create(etcd.endpoint, { clock: recorded.clock });
      await s.source.start(s.sink);
      await until(() => recorded.delays.length >= 1, 'a retry');
      firsts.push(recorded.delays[0]!);
      await s.source.close();
    }
    expect(Math.min(...firsts)).toBeGreaterThanOrEqual(50);
    expect(Math.max(...firsts)).toBeLessThanOrEqual(100);
    expect(new Set(firsts).size).toBeGreaterThan(1);
  });

  it('keeps the last good set while etcd is stopped, reports it once, and follows etcd when it is back', async () => {
    const { source, sink, logger } = create(etcd.endpoint);
    await admin.put(source.key).value(list(manifest('a', 'app:1')));
    await source.start(sink);
    expect(sink.ids).toEqual(['a']);
    await etcd.stop();
    await sink.until(() => sink.errors.length === 1, 'Unavailable');
    expect(sink.errors[0]?.code).toBe('Unavailable');
    await until(() => logger.find('etcd attempt failed').length >= 4, 'retries');
    expect(sink.errors).toHaveLength(1);
    expect(sink.updates).toHaveLength(1); // never an empty set for an outage
    expect(sink.image('a')).toBe('app:1');
    await etcd.start();
    await admin.put(source.key).value(list(manifest('a', 'app:2')));
    await sink.until(() => sink.image('a') === 'app:2', 'the change after etcd came back');
    await admin.put(source.key).value(list(manifest('a', 'app:3')));
    await sink.until(() => sink.image('a') === 'app:3', 'a change through the new watch');
    expect(sink.errors).toHaveLength(1);
    // etcd3 did not re-attach the old watcher beside the new one.
    await sleep(300);
    expect(await etcd.watchers()).toBe(1);
  });

  it('misses no change made while it could not reach etcd: it reads again and watches from that read', async () => {
    gate = await TcpGate.listen(etcd.endpoint);
    const { source, sink, logger } = create(gate.endpoint);
    await admin.put(source.key).value(list(manifest('a', 'app:1')));
    await source.start(sink);
    expect(sink.image('a')).toBe('app:1');
    await until(() => logger.find('watching').length === 1, 'the watch');
    gate.cut();
    await sink.until(() => sink.errors.length === 1, 'Unavailable');
    // etcd itself is up: the change is made while the source cannot see it.
    const put = await admin.put(source.key).value(list(manifest('a', 'app:2')));
    const changedAt = BigInt(put.header.revision);
    await until(() => logger.find('etcd attempt failed').length >= 3, 'retries while cut');
    expect(sink.image('a')).toBe('app:1');
    gate.restore();
    await sink.until(() => sink.image('a') === 'app:2', 'the change made while cut');
    await until(() => logger.find('watching').length === 2, 'the new watch');
    // The change came from the read, not from a watch: the new watch starts after it.
    expect(lastWatchRevision(logger)).toBe(changedAt + 1n);
    expect(sink.errors).toHaveLength(1);
    expect(sink.updates).toHaveLength(2);
    await sleep(300);
    expect(await etcd.watchers()).toBe(1);
  });

  it('reads again after the revisions it missed were compacted away', async () => {
    gate = await TcpGate.listen(etcd.endpoint);
    const { source, sink, logger } = create(gate.endpoint);
    await admin.put(source.key).value(list(manifest('a', 'app:1')));
    await source.start(sink);
    await until(() => logger.find('watching').length === 1, 'the watch');
    const watchedFrom = lastWatchRevision(logger);
    gate.cut();
    await sink.until(() => sink.errors.length === 1, 'Unavailable');
    let revision = '';
    for (const image of ['app:2', 'app:3', 'app:4'])
      revision = (await admin.put(source.key).value(list(manifest('a', image)))).header.revision;
    await admin.kv.compact({ revision, physical: true });
    expect(BigInt(revision)).toBeGreaterThan(watchedFrom); // resuming the old watch would hit the compaction
    gate.restore();
    await sink.until(() => sink.image('a') === 'app:4', 'the latest value after compaction');
    expect(sink.updates.map((u) => u[0]?.containers[0]?.image)).toEqual(['app:1', 'app:4']);
    expect(sink.errors.map((e) => e.code)).toEqual(['Unavailable']);
  });

  it('reads again when etcd cancels a watch because its start revision was compacted', async () => {
    const { source, sink, logger } = create(etcd.endpoint);
    await admin.put(source.key).value(list(manifest('a', 'app:1')));
    // Two changes and a compaction land between the source's read and its watch: the watch then
    // starts from a compacted revision, which etcd refuses by canceling it.
    const get = Namespace.prototype.get;
    let race: (() => Promise<void>) | undefined = async () => {
      await admin.put(source.key).value(list(manifest('a', 'app:2')));
      const { header } = await admin.put(source.key).value(list(manifest('a', 'app:3')));
      await admin.kv.compact({ revision: header.revision, physical: true });
    };
    const spy = jest.spyOn(Namespace.prototype, 'get').mockImplementation(function (this: Namespace, key) {
      const builder = get.call(this, key);
      const inject = race;
      if (inject === undefined || String(key) !== source.key) return builder;
      race = undefined;
      const exec = builder.exec.bind(builder);
      builder.exec = async () => {
        const response = await exec();
        await inject();
        return response;
      };
      return builder;
    });
    try {
      await source.start(sink);
      await sink.until(() => sink.image('a') === 'app:3', 'the value after the canceled watch');
    } finally {
      spy.mockRestore();
    }
    expect(race).toBeUndefined(); // the race really ran
    expect(logger.find('etcd canceled the watch')).toHaveLength(1);
    expect(sink.updates.map((u) => u[0]?.containers[0]?.image)).toEqual(['app:1', 'app:3']);
    expect(sink.errors).toEqual([]); // a compaction is not an outage
    await admin.put(source.key).value(list(manifest('a', 'app:4')));
    await sink.until(() => sink.image('a') === 'app:4', 'a change through the new watch');
  });

  it('closes while etcd is down without another word', async () => {
    const { source, sink } = create(etcd.endpoint);
    await etcd.stop();
    await source.start(sink);
    expect(sink.errors).toHaveLength(1);
    await source.close();
    await etcd.start();
    await sleep(300);
    expect(sink.errors).toHaveLength(1);
    expect(sink.updates).toEqual([]);
  });
});
