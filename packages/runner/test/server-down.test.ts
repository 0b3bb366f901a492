import { describe, expect, it } from '@jest/globals';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { ServerManifestSource } from '@kubelet-ts/source-server';
import { agentFixture } from './agent-fixture.js';
import { settle } from './helpers.js';

describe('Kubelet whose server cannot bind its port (issue 27 item 4)', () => {
  const f = agentFixture();

  it('is unhealthy, naming the server and why, until the server listens', async () => {
    // Another process (a host-network pod, after an agent restart) holds the agent's port.
    const squatter = createServer();
    await new Promise<void>((resolve) => squatter.listen(0, '127.0.0.1', resolve));
    const port = (squatter.address() as AddressInfo).port;
    const server = new ServerManifestSource({ port });
    const k = f.kubelet([server], { sourceBackoff: { initialMs: 1000, maxMs: 1000 } });
    try {
      await k.start();
      await k.sync();
      expect(k.health()).toMatchObject({
        healthy: false,
        message: expect.stringContaining(
          `source server is down: the agent server cannot listen on 127.0.0.1:${port}: another process holds that address`,
        ),
      });
      expect(k.status().sources).toEqual([expect.objectContaining({ name: 'server', down: expect.stringContaining('cannot listen') })]);
      expect(f.events.ofType('SourceRestarted').map((e) => e.message)).toEqual([expect.stringContaining('cannot listen')]);
    } finally {
      await new Promise<void>((resolve) => squatter.close(() => resolve()));
    }
    // The port is free again: the next restart binds it, and the agent is healthy.
    await f.clock.advance(1000);
    for (let i = 0; i < 50 && k.status().sources[0]?.down !== undefined; i++) await settle();
    await k.sync();
    expect(k.health()).toMatchObject({ healthy: true });
    expect(server.url).toBe(`http://127.0.0.1:${port}`);
  });
});
