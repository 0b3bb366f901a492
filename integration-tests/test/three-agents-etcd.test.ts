import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { EtcdServer } from '@kubelet-ts/testkit';
import { AgentProcess } from './agent-process.js';

const pod = (id: string) => ({ version: 'v1beta1', id, containers: [{ name: 'main', image: 'busybox:1.36' }] });

/** etcd's v3 JSON gateway: an independent client, not the agent's own. */
async function etcd(
  endpoint: string,
  op: 'put' | 'range',
  body: Record<string, string>,
): Promise<{ kvs?: Array<{ key: string; value: string }> }> {
  const encoded = Object.fromEntries(Object.entries(body).map(([k, v]) => [k, Buffer.from(v).toString('base64')]));
  const res = await fetch(`${endpoint}/v3/kv/${op}`, { method: 'POST', body: JSON.stringify(encoded) });
  if (!res.ok) throw new Error(`etcd ${op}: ${res.status}`);
  return (await res.json()) as { kvs?: Array<{ key: string; value: string }> };
}

const put = (endpoint: string, host: string, manifests: object[]) =>
  etcd(endpoint, 'put', { key: `/registry/hosts/${host}/kubelet`, value: JSON.stringify(manifests) });

describe('three agents on one etcd: each runs what its own key holds', () => {
  let server: EtcdServer;
  const agents = new Map<string, AgentProcess>();

  beforeAll(async () => {
    server = await EtcdServer.launch();
    await put(server.endpoint, 'a', [pod('web')]);
    await put(server.endpoint, 'b', [pod('api')]);
    for (const host of ['a', 'b', 'c']) {
      agents.set(
        host,
        new AgentProcess(['--runtime', 'memory', '--etcd-servers', server.endpoint, '--hostname-override', host, '--sync-frequency', '1s']),
      );
    }
  });

  afterAll(async () => {
    for (const agent of agents.values()) agent.kill();
    await Promise.all([...agents.values()].map((a) => a.exit));
    await server.destroy();
  });

  const agent = (host: string) => agents.get(host)!;
  const started = (host: string, podId: string) => agent(host).events('ContainerStarted', podId).length;
  const removed = (host: string, podId: string) => agent(host).events('ContainerRemoved', podId).length;

  it('runs each manifest only on the agent whose key holds it', async () => {
    await agent('a').until(() => started('a', 'web') === 1, 'web on a');
    await agent('b').until(() => started('b', 'api') === 1, 'api on b');
    await agent('c').until(() => agent('c').lines.some((l) => l.msg === 'kubelet starting'), 'c up');
    expect(started('a', 'api') + started('c', 'api') + started('b', 'web') + started('c', 'web')).toBe(0);
  });

  it("moves a manifest from a's key to b's: it stops on a and starts on b", async () => {
    await put(server.endpoint, 'b', [pod('api'), pod('web')]);
    await put(server.endpoint, 'a', []);
    await agent('a').until(() => removed('a', 'web') === 1, 'web removed from a');
    await agent('b').until(() => started('b', 'web') === 1, 'web started on b');
    expect(removed('b', 'api')).toBe(0);
    expect(agent('c').events('ContainerStarted')).toEqual([]);
  });

  it('records the agents’ events in etcd under /events/<manifest>/<container>/', async () => {
    // Written by each agent's queue as etcd takes them (never in the agent's way): waited for, up to 10 s.
    let keys: string[] = [];
    for (const deadline = Date.now() + 10_000; keys.length < 3 && Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
      const range = await etcd(server.endpoint, 'range', { key: '/events/web/', range_end: '/events/web0' });
      keys = (range.kvs ?? []).map((kv) => Buffer.from(kv.key, 'base64').toString());
    }
    expect(keys.length).toBeGreaterThanOrEqual(3); // created and started on a, removed on a, started on b …
    // The container's events, its pod sandbox's (container POD), and the pod's own (`_pod`: PodTerminated on a).
    expect(keys.every((k) => ['/events/web/main/', '/events/web/POD/', '/events/web/_pod/'].some((p) => k.startsWith(p)))).toBe(true);
    expect(keys.some((k) => k.startsWith('/events/web/main/'))).toBe(true);
  });

  it('stops cleanly', async () => {
    const exits = await Promise.all([...agents.values()].map((a) => a.stop()));
    expect(exits.map((e) => e.code)).toEqual([0, 0, 0]);
  });
});
