import { afterAll, beforeAll } from '@jest/globals';
import type { Etcd3 } from 'etcd3';
import { sourceFuzzContract } from '@kubelet-ts/conformance';
import { EtcdServer } from '@kubelet-ts/testkit';
import { createEtcdClient } from '../src/etcd-client.js';
import { EtcdManifestSource } from '../src/index.js';

let etcd: EtcdServer;
let admin: Etcd3;

beforeAll(async () => {
  etcd = await EtcdServer.launch();
  admin = createEtcdClient({ endpoints: [etcd.endpoint], requestTimeoutMs: 5000 });
});

afterAll(async () => {
  admin?.close();
  await etcd?.destroy();
});

/**
 * An etcd of the test's own; each publication is a put of the host's key, which the source's watch
 * delivers. The 2014 layout has one key per host, so the sentinel is in every value put.
 */
sourceFuzzContract(
  'etcd',
  () => {
    const source = new EtcdManifestSource({ endpoints: [etcd.endpoint], hostname: 'fuzz-node' });
    return {
      kind: 'document',
      sentinel: 'embedded',
      start: (sink) => source.start(sink),
      async publish(bytes) {
        await admin.put(source.key).value(Buffer.from(bytes));
      },
      close: () => source.close(),
    };
  },
  { runs: { short: 400, long: 10_000 } },
);
