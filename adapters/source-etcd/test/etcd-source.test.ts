import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Tokens, type ManifestSource } from '@kubelet-ts/core';
import type { Etcd3, IWatchResponse } from 'etcd3';
import { createEtcdClient } from '../src/etcd-client.js';
import { EtcdManifestSource, etcdKeyFor, registerEtcdSource, type EtcdManifestSourceOptions } from '../src/index.js';
import { EtcdServer, TcpGate } from '@kubelet-ts/testkit';
import { RecordingSink, until } from './recording.js';
import { list, manifest, nextHost, sleep } from './fixtures.js';
import { objectDocuments } from '@kubelet-ts/conformance';

const { pod: v1Pod, configMap, secret } = objectDocuments;

describe('EtcdManifestSource', () => {
  let etcd: EtcdServer;
  let admin: Etcd3;
  let source: EtcdManifestSource | undefined;

  beforeAll(async () => {
    etcd = await EtcdServer.launch();
    admin = createEtcdClient({ endpoints: [etcd.endpoint], requestTimeoutMs: 5000 });
  });

  afterEach(async () => {
    await source?.close();
    source = undefined;
  });

  afterAll(async () => {
    admin?.close();
    await etcd?.destroy();
  });

  const start = async (options: Partial<EtcdManifestSourceOptions> = {}) => {
    const sink = new RecordingSink();
    source = new EtcdManifestSource({ endpoints: [etcd.endpoint], hostname: nextHost(), ...options });
    await source.start(sink);
    return { sink, key: source.key };
  };

  it('reads the 2014 key of its host by default', () => {
    expect(etcdKeyFor('node-1')).toBe('/registry/hosts/node-1/kubelet');
    for (const bad of ['a/b', '..', 'Node_1', '']) expect(() => etcdKeyFor(bad)).toThrow(/invalid hostname/);
    expect(new EtcdManifestSource({ endpoints: [etcd.endpoint], hostname: 'node-1' }).key).toBe('/registry/hosts/node-1/kubelet');
    expect(new EtcdManifestSource({ endpoints: [etcd.endpoint], hostname: 'node-1', key: '/custom' }).key).toBe('/custom');
    expect(new EtcdManifestSource({ endpoints: [etcd.endpoint], hostname: 'node-1' }).name).toBe('etcd');
  });

  it('delivers an empty set for a missing key, then each put, change and delete at once', async () => {
    const { sink, key } = await start();
    expect(sink.updates).toEqual([[]]);
    expect(sink.errors).toEqual([]);

    let sent = Date.now();
    await admin.put(key).value(list(manifest('a'), manifest('b')));
    await sink.until(() => sink.ids.join() === 'a,b', 'a list put');
    expect(Date.now() - sent).toBeLessThan(500);

    sent = Date.now();
    await admin.put(key).value(list(manifest('a', 'app:2'), manifest('b')));
    await sink.until(() => sink.image('a') === 'app:2', 'a changed list');
    expect(Date.now() - sent).toBeLessThan(500);

    await admin.delete().key(key);
    await sink.until(() => sink.updates.length === 4, 'the delete');
    expect(sink.updates.at(-1)).toEqual([]);
    expect(sink.errors).toEqual([]);
  });

  it('reads a key that exists at start, takes one manifest as well as a list, and delivers only changed sets', async () => {
    const key = `/test/${nextHost()}`;
    await admin.put(key).value('version: v1beta1\nid: solo\ncontainers:\n  - name: main\n    image: app:1\n');
    const { sink } = await start({ key });
    expect(sink.ids).toEqual(['solo']);
    // The same set again, as JSON and as a one-item list: new revisions, no new delivery.
    await admin.put(key).value(JSON.stringify(manifest('solo')));
    await admin.put(key).value(list(manifest('solo')));
    await admin.put(key).value(list(manifest('solo'), manifest('other')));
    await sink.until(() => sink.ids.join() === 'other,solo', 'a second manifest');
    expect(sink.updates).toHaveLength(2);
  });

  it('gives the ConfigMaps and Secrets of its value beside the pods, again when only one of them changes', async () => {
    const { sink, key } = await start();
    await admin.put(key).value([v1Pod, configMap('fast'), secret].join('\n---\n'));
    await sink.until(() => sink.objectKeys.length === 2, 'the objects');
    expect(sink.ids).toEqual(['web']);
    expect(sink.objectKeys).toEqual(['ConfigMap/default/web-config', 'Secret/default/web-secret']);
    await admin.put(key).value([v1Pod, configMap('slow'), secret].join('\n---\n'));
    await sink.until(() => sink.updates.length === 3, 'the changed ConfigMap');
    const mode = sink.objectUpdates.at(-1)?.find((o) => o.kind === 'ConfigMap')?.data['mode'];
    expect(Buffer.from(mode ?? []).toString()).toBe('slow');
  });

  it('reports a value that is not YAML, naming the key, and keeps the last good set', async () => {
    const { sink, key } = await start();
    await admin.put(key).value(list(manifest('a', 'app:1')));
    await sink.until(() => sink.ids.join() === 'a', 'a');
    await admin.put(key).value('- id: a\n  containers: [');
    await sink.until(() => sink.errors.length === 1, 'the syntax error');
    expect(sink.errors[0]?.code).toBe('InvalidManifest');
    expect(sink.errors[0]?.message).toContain(key);
    expect(sink.updates).toHaveLength(2); // nothing delivered for the bad value
    expect(sink.image('a')).toBe('app:1');
    await admin.put(key).value(list(manifest('a', 'app:2')));
    await sink.until(() => sink.image('a') === 'app:2', 'the fix');
    expect(sink.errors).toHaveLength(1);
  });

  it('takes every version a watch response carries: a batch ending in an invalid value runs the last valid one (issue 27)', async () => {
    const { sink, key } = await start();
    await admin.put(key).value(list(manifest('a', 'app:0')));
    await sink.until(() => sink.image('a') === 'app:0', 'the first version');
    const updates = sink.updates.length;
    // What etcd sends a watcher that fell behind (the attack's burst of 3,000 puts): several
    // revisions in one response. Handed over directly: racing etcd into it is not deterministic.
    const put = (value: string) => ({ type: 'Put', kv: { value: Buffer.from(value) } }) as unknown as IWatchResponse['events'][number];
    source!.receive({ events: [put(list(manifest('a', 'app:1'))), put(list(manifest('a', 'app:2'))), put('- id: a\n  containers: [')] });
    expect(sink.image('a')).toBe('app:2');
    expect(sink.updates).toHaveLength(updates + 1); // one delivery for the batch
    expect(sink.errors).toHaveLength(1);
    expect(sink.errors[0]?.message).toContain(key);
  });

  // Found by the fuzz suite: read as text with replacement characters, a Latin-1 value ran with
  // values its author never wrote, and dropped the manifest whose id it garbled.
  it('reports a value that is not UTF-8 as unreadable and keeps the last good set', async () => {
    const { sink, key } = await start();
    await admin.put(key).value(list(manifest('a', 'app:1')));
    await sink.until(() => sink.ids.join() === 'a', 'a');
    await admin.put(key).value(Buffer.from(list({ ...manifest('a', 'app:1'), id: 'ä' }), 'latin1'));
    await sink.until(() => sink.errors.length === 1, 'the value reported');
    expect(sink.errors[0]?.message).toBe(`${key}: not valid UTF-8`);
    expect(sink.updates).toHaveLength(2);
    expect(sink.ids).toEqual(['a']);
  });

  it('delivers the valid manifests of a list, names the field path of the invalid one, and keeps its last good version', async () => {
    const { sink, key } = await start();
    await admin.put(key).value(list(manifest('a'), manifest('web', 'web:1'), manifest('c')));
    await sink.until(() => sink.ids.join() === 'a,c,web', 'three manifests');
    const broken = {
      ...manifest('web', 'web:2'),
      containers: [{ name: 'main', image: 'web:2', ports: [{ containerPort: 80, hostPort: 70000 }] }],
    };
    await admin.put(key).value(list(manifest('a', 'app:2'), broken, manifest('c')));
    await sink.until(() => sink.image('a') === 'app:2', 'a updated beside the broken one');
    expect(sink.ids).toEqual(['a', 'c', 'web']);
    expect(sink.image('web')).toBe('web:1'); // the last good version stays in force
    expect(sink.errors).toHaveLength(1);
    expect(sink.errors[0]?.code).toBe('InvalidManifest');
    expect(sink.errors[0]?.message).toContain(`${key}[1] (id "web")`);
    expect(sink.errors[0]?.message).toContain('containers[0].ports[0].hostPort: must be 0-65535');
    expect(sink.errors[0]?.fieldErrors.map((f) => f.path)).toEqual(['containers[0].ports[0].hostPort']);
  });

  it('takes the first of two manifests with the same id and reports the conflict once', async () => {
    const { sink, key } = await start();
    await admin.put(key).value(list(manifest('web', 'web:first'), manifest('web', 'web:second')));
    await sink.until(() => sink.ids.join() === 'web', 'web');
    expect(sink.image('web')).toBe('web:first');
    await admin.put(key).value(list(manifest('web', 'web:first'), manifest('web', 'web:second'), manifest('x')));
    await sink.until(() => sink.ids.join() === 'web,x', 'x');
    expect(sink.errors.map((e) => e.code)).toEqual(['Conflict']);
    expect(sink.errors[0]?.message).toContain(key);
  });

  it('says nothing after close, keeps one watcher, and closes twice without harm', async () => {
    const { sink, key } = await start();
    await until(async () => (await etcd.watchers()) === 1, 'the watch');
    await source?.close();
    await source?.close();
    expect(await etcd.watchers()).toBe(0); // close waited for etcd to drop the watch
    await admin.put(key).value(list(manifest('late')));
    await sleep(200);
    expect(sink.updates).toEqual([[]]);
    expect(sink.errors).toEqual([]);
  });

  it('reads and watches over one connection to etcd, and holds none once closed (10,000 agents made 20,000)', async () => {
    const gate = await TcpGate.listen(etcd.endpoint); // only the source connects through it
    try {
      const { sink, key } = await start({ endpoints: [gate.endpoint] });
      await until(async () => (await etcd.watchers()) === 1, 'the watch');
      await admin.put(key).value(list(manifest('a')));
      await sink.until(() => sink.ids.join() === 'a', 'a');
      expect(gate.connections).toBe(1);
      await source?.close();
      await until(() => gate.connections === 0, 'the connection closed');
    } finally {
      await gate.close();
    }
  });

  it('starts again after close and delivers its set again', async () => {
    const { sink, key } = await start();
    await admin.put(key).value(list(manifest('a')));
    await sink.until(() => sink.ids.join() === 'a', 'a');
    await source?.close();
    const again = new RecordingSink();
    await source?.start(again);
    expect(again.updates).toHaveLength(1);
    expect(again.ids).toEqual(['a']);
  });

  it('registers under Tokens.Source', () => {
    const registered: Array<{ token: symbol; value: unknown }> = [];
    const registry = { register: <T>(token: symbol, provider: { useValue: T }) => registered.push({ token, value: provider.useValue }) };
    const registeredSource: ManifestSource = registerEtcdSource(registry, { endpoints: [etcd.endpoint], hostname: 'node-1' });
    expect(registered).toEqual([{ token: Tokens.Source, value: registeredSource }]);
  });
});
