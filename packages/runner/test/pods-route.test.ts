import { createServer, type Server } from 'node:http';
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
});
