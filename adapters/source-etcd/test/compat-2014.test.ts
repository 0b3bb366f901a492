import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { derivedManifestId } from '@kubelet-ts/core';
import type { Etcd3 } from 'etcd3';
import { EtcdServer } from '@kubelet-ts/testkit';
import { createEtcdClient } from '../src/etcd-client.js';
import { EtcdManifestSource, type EtcdManifestSourceOptions } from '../src/index.js';
import { RecordingSink } from './recording.js';

// A list as the 2014 scheduler side might have written it: no ids, `path` and `key`.
const idLess = (image: string, extra: object = {}) => ({ version: 'v1beta1', containers: [{ name: 'main', image, ...extra }] });

let hosts = 0;
const nextHost = () => `compat-${++hosts}`;

describe('EtcdManifestSource: manifests as 2014 users wrote them', () => {
  let etcd: EtcdServer;
  let admin: Etcd3;
  const sources: EtcdManifestSource[] = [];

  beforeAll(async () => {
    etcd = await EtcdServer.launch();
    admin = createEtcdClient({ endpoints: [etcd.endpoint], requestTimeoutMs: 5000 });
  });

  afterEach(async () => {
    for (const s of sources.splice(0)) await s.close();
  });

  afterAll(async () => {
    admin?.close();
    await etcd?.destroy();
  });

  const start = async (options: Partial<EtcdManifestSourceOptions> = {}) => {
    const sink = new RecordingSink();
    const source = new EtcdManifestSource({ endpoints: [etcd.endpoint], hostname: nextHost(), ...options });
    sources.push(source);
    await source.start(sink);
    return { sink, key: source.key };
  };

  it('names id-less manifests after the source, the key and their position, the same after a restart', async () => {
    const hostname = nextHost();
    const { sink, key } = await start({ hostname });
    await admin.put(key).value(JSON.stringify([idLess('app:0'), { ...idLess('app:1'), id: 'given' }, idLess('app:2')]));
    const expected = [derivedManifestId('etcd', key, 0), 'given', derivedManifestId('etcd', key, 2)];
    await sink.until(() => sink.updates.at(-1)?.length === 3, 'the list');
    expect(sink.updates.at(-1)!.map((m) => m.id)).toEqual(expected);
    expect(sink.errors).toEqual([]);
    const again = await start({ hostname });
    expect(again.sink.updates.at(-1)!.map((m) => m.id)).toEqual(expected);
  });

  it('reads path and key, publishes a port without hostPort, and warns once per manifest version', async () => {
    const { sink, key } = await start();
    const value = JSON.stringify([
      {
        version: 'v1beta1',
        id: 'agent',
        volumes: [{ name: 'data' }],
        containers: [
          {
            name: 'main',
            image: 'app:1',
            volumeMounts: [{ name: 'data', path: '/data' }],
            env: [{ key: 'A', value: 'b' }],
            ports: [{ containerPort: 8080 }],
          },
        ],
      },
    ]);
    await admin.put(key).value(value);
    await sink.until(() => sink.ids.join() === 'agent', 'the manifest');
    const [m] = sink.updates.at(-1)!;
    expect(m!.containers[0]!.volumeMounts).toEqual([{ name: 'data', mountPath: '/data', readOnly: false }]);
    expect(m!.containers[0]!.env).toEqual([{ name: 'A', value: 'b' }]);
    expect(m!.containers[0]!.ports).toEqual([{ containerPort: 8080, hostPort: 8080, protocol: 'TCP' }]);
    expect(sink.warnings.map((w) => [w.podId, w.field])).toEqual([
      ['agent', 'containers[].env[].key'],
      ['agent', 'containers[].volumeMounts[].path'],
    ]);
    expect(sink.warnings[0]!.message).toContain(key);
    // The same value put again is a new revision but the same manifest: nothing said again.
    const updates = sink.updates.length;
    await admin.put(key).value(value);
    await admin.put(key).value(JSON.stringify([...JSON.parse(value), { id: 'other', containers: [] }]));
    await sink.until(() => sink.updates.length > updates, 'the second manifest');
    expect(sink.warnings).toHaveLength(2);
  });

  it('refuses HOST mounts unless allowHostMounts is set', async () => {
    const value = JSON.stringify([
      {
        id: 'cadvisor',
        volumes: [{ name: 'run' }],
        containers: [{ name: 'c', image: 'x', volumeMounts: [{ name: 'run', mountPath: '/var/run', mountType: 'HOST' }] }],
      },
    ]);
    const refused = await start();
    await admin.put(refused.key).value(value);
    await refused.sink.until(() => refused.sink.errors.length === 1, 'the refusal');
    expect(refused.sink.errors[0]!.message).toContain('--allow-host-mounts');
    const allowed = await start({ allowHostMounts: true });
    await admin.put(allowed.key).value(value);
    await allowed.sink.until(() => allowed.sink.ids.join() === 'cadvisor', 'the manifest');
  });
});
