import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import type { Etcd3 } from 'etcd3';
import { EtcdServer } from '@kubelet-ts/testkit';
import { createEtcdClient } from '../src/etcd-client.js';
import { EtcdManifestSource, etcdKeyFor } from '../src/index.js';
import { manifest } from './fixtures.js';
import { RecordingSink } from './recording.js';

/** What 2014 users kept under their host's key: the wrapper, empty values, hostnames as written. */
describe('EtcdManifestSource and the values of 2014', () => {
  let etcd: EtcdServer;
  let admin: Etcd3;
  let source: EtcdManifestSource | undefined;
  let hosts = 0;

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

  const start = async (hostname = `node-2014-${++hosts}`) => {
    const sink = new RecordingSink();
    source = new EtcdManifestSource({ endpoints: [etcd.endpoint], hostname });
    await source.start(sink);
    return { sink, key: source.key };
  };

  it('unwraps the 2014 {"kind": "ContainerManifestList", "items": [...]}, in JSON and in YAML', async () => {
    const { sink, key } = await start();
    await admin
      .put(key)
      .value(JSON.stringify({ kind: 'ContainerManifestList', apiVersion: 'v1beta1', items: [manifest('a'), manifest('b')] }));
    await sink.until(() => sink.ids.join() === 'a,b', 'the JSON wrapper unwrapped');
    await admin
      .put(key)
      .value(
        'kind: ContainerManifestList\nitems:\n  - version: v1beta1\n    id: c\n    containers:\n      - name: main\n        image: app:1\n',
      );
    await sink.until(() => sink.ids.join() === 'c', 'the YAML wrapper unwrapped');
    expect(sink.errors).toEqual([]);
  });

  it('keeps the last good set for an empty value (zero bytes or only whitespace), and says so; only a deleted key is an empty set', async () => {
    const { sink, key } = await start();
    await admin.put(key).value(JSON.stringify([manifest('a')]));
    await sink.until(() => sink.ids.join() === 'a', 'a delivered');
    for (const empty of ['', '  \n\t \n']) {
      await admin.put(key).value(empty);
      await sink.until(() => sink.errors.some((e) => /the value is empty/.test(e.message)), 'the empty value reported');
      expect(sink.ids.join()).toBe('a');
      sink.errors.length = 0;
      // Something readable in between, so the next empty value is news again.
      await admin.put(key).value(JSON.stringify([manifest('a')]));
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(sink.errors).toEqual([]);
    await admin.delete().key(key);
    await sink.until(() => sink.ids.join() === '', 'a deleted key is an empty set');
  });

  // An agent restarted while the key holds a cut-short write must not stop the pods the key held.
  it('delivers nothing, not even an empty set, for an empty value at start, until the key is readable', async () => {
    const hostname = `node-2014-${++hosts}`;
    await admin.put(etcdKeyFor(hostname)).value('');
    const { sink, key } = await start(hostname);
    expect(sink.updates).toEqual([]);
    expect(sink.errors.map((e) => e.code)).toEqual(['InvalidManifest']);
    await admin.put(key).value(JSON.stringify([manifest('a')]));
    await sink.until(() => sink.ids.join() === 'a', 'the first readable value');
    expect(sink.updates).toHaveLength(1);
  });

  it('reads the key of the hostname as given, case and all', async () => {
    expect(etcdKeyFor('Node-A.example.com')).toBe('/registry/hosts/Node-A.example.com/kubelet');
    const { sink, key } = await start('Node-2014-Mixed');
    expect(key).toBe('/registry/hosts/Node-2014-Mixed/kubelet');
    await admin.put(key).value(JSON.stringify([manifest('mixed')]));
    await sink.until(() => sink.ids.join() === 'mixed', 'the mixed-case key read');
  });
});
