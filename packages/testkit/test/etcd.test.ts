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

describe('EtcdServer killed from outside', () => {
  it('is stopped by stop() once its pid was killed, and starts again with its data', async () => {
    const etcd = await EtcdServer.launch();
    try {
      await etcd.gateway('/v3/kv/put', { key: btoa('k'), value: btoa('kept') });
      expect(etcd.pid).toBeGreaterThan(1);
      process.kill(etcd.pid!, 'SIGKILL'); // what the fleet bench's shell does the instant a write is answered
      await etcd.stop('SIGKILL');
      expect(etcd.running).toBe(false);
      await etcd.stop(); // stopping a stopped etcd is no error
      await etcd.start();
      const range = await etcd.gateway('/v3/kv/range', { key: btoa('k') });
      expect(atob((range['kvs'] as Array<{ value: string }>)[0]!.value)).toBe('kept');
    } finally {
      await etcd.destroy();
    }
  });
});
