import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from '@jest/globals';
import { checkedManifest } from '@kubelet-ts/conformance';
import { agentApiListener, type V1PodList } from '@kubelet-ts/source-server';
import { agentFixture } from './agent-fixture.js';
import { ScriptedSource, podListOf, settle } from './helpers.js';

describe('GET /pods of a real agent over HTTP', () => {
  const f = agentFixture();
  let server: Server | undefined;
  afterEach(async () => {
    await new Promise((resolve) => (server === undefined ? resolve(undefined) : server.close(resolve)));
    server = undefined;
  });

  it('answers the agent’s PodList: a v1 Pod (name, namespace, labels) and a 2014 manifest, each with its status', async () => {
    const v1 = checkedManifest({
      id: 'api.kube-system',
      namespace: 'kube-system',
      labels: { tier: 'control-plane' },
      containers: [{ name: 'api', image: 'api:1' }],
    });
    const old = checkedManifest({ version: 'v1beta1', id: 'cache', containers: [{ name: 'redis', image: 'redis:7' }] });
    const k = f.kubelet([new ScriptedSource('file', { initial: [v1, old] })], { probes: { host: '10.0.0.9' } });
    await k.start();
    await settle();
    server = createServer(agentApiListener(k));
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;

    const res = await fetch(`http://127.0.0.1:${port}/pods`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('application/json');
    const list = (await res.json()) as V1PodList;
    expect(list).toEqual(JSON.parse(JSON.stringify(await podListOf(k))));
    expect(list.items.map((p) => [p.metadata['name'], p.metadata['namespace'], p.status['phase']])).toEqual([
      ['api', 'kube-system', 'Running'],
      ['cache', 'default', 'Running'],
    ]);
    expect(list.items[0]?.metadata).toMatchObject({
      labels: { tier: 'control-plane' },
      annotations: { 'kubernetes.io/config.source': 'file', 'kubelet-ts.io/source': 'file' },
    });
    expect(list.items[1]?.status['containerStatuses']).toEqual([
      expect.objectContaining({
        name: 'redis',
        image: 'redis:7',
        restartCount: 0,
        ready: true,
        started: true,
        state: { running: { startedAt: expect.stringMatching(/Z$/) } },
      }),
    ]);
    expect((await fetch(`http://127.0.0.1:${port}/pods`, { method: 'POST' })).status).toBe(405);
  });

  it('names each changed pod once per change in the watch of /pods, and no other (issue 42)', async () => {
    const once = (id: string) => checkedManifest({ id, restartPolicy: 'Never', containers: [{ name: 'main', image: 'app:1' }] });
    const source = new ScriptedSource('file', { initial: [once('a'), once('b')] });
    const k = f.kubelet([source]);
    await k.start();
    await settle();
    await k.sync();
    server = createServer(agentApiListener(k));
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const seen: Array<[string, string, string | undefined]> = [];
    const watch = request(`http://127.0.0.1:${port}/pods?watch=1`, (res) => {
      let buffer = '';
      res.setEncoding('utf8').on('data', (chunk: string) => {
        buffer += chunk;
        const lines = buffer.split('\n');
        buffer = lines.pop() ?? '';
        for (const line of lines.filter((l) => l.trim() !== '')) {
          const event = JSON.parse(line) as { type: string; object: { metadata: { name: string }; status: { phase: string } } };
          seen.push([event.type, event.object.metadata.name, event.object.status.phase]);
        }
      });
    });
    watch.end();
    /** Waits until the watch has said `n` things, then a while longer, to see that it says nothing more. */
    const said = async (n: number) => {
      for (const deadline = Date.now() + 5_000; seen.length < n && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 10));
      await new Promise((r) => setTimeout(r, 300)); // the watch renders at most every 50 ms after a change
    };
    try {
      await said(2);
      expect(seen).toEqual([
        ['ADDED', 'a', 'Running'],
        ['ADDED', 'b', 'Running'],
      ]);
      f.runtime.exit(f.one('a', 'main').id, 0);
      await settle();
      await k.sync();
      await said(3);
      for (let i = 0; i < 5; i++) await k.sync();
      await said(3);
      expect(seen.slice(2)).toEqual([['MODIFIED', 'a', 'Succeeded']]);
    } finally {
      watch.destroy();
    }
  });
});
