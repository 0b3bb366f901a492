import { describe, expect, it } from '@jest/globals';
import { EtcdServer } from '../src/index.js';

describe('EtcdServer', () => {
  it('starts a real etcd that keeps its data across stop and start', async () => {
    const etcd = await EtcdServer.launch();
    try {
      const put = await fetch(`${etcd.endpoint}/v3/kv/put`, { method: 'POST', body: JSON.stringify({ key: btoa('k'), value: btoa('v') }) });
      expect(put.ok).toBe(true);
      await etcd.stop();
      expect(
        await fetch(`${etcd.endpoint}/health`).then(
          () => 'up',
          () => 'down',
        ),
      ).toBe('down');
      await etcd.start();
      const range = (await (
        await fetch(`${etcd.endpoint}/v3/kv/range`, { method: 'POST', body: JSON.stringify({ key: btoa('k') }) })
      ).json()) as { kvs: Array<{ value: string }> };
      expect(atob(range.kvs[0]!.value)).toBe('v');
    } finally {
      await etcd.destroy();
    }
  });
});
