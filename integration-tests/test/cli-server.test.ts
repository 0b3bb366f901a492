import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { V1PodList } from '@kubelet-ts/source-server';
import { AgentProcess } from './agent-process.js';

const manifest = {
  version: 'v1beta1',
  id: 'posted',
  containers: [{ name: 'main', image: 'busybox:1.36', env: [{ name: 'A', value: '1' }] }],
};

describe('kubelet-ts CLI: the agent server as a manifest source, with real HTTP requests', () => {
  let agent: AgentProcess;
  let url: string;
  const auth = { authorization: 'Bearer e2e-token' };
  // curl's default (form-urlencoded) would be a 415: manifests are posted as JSON or YAML.
  const postAs = { ...auth, 'content-type': 'application/json' };

  beforeAll(async () => {
    agent = new AgentProcess([
      '--runtime',
      'memory',
      '--hostname-override',
      'server-e2e',
      '--auth-token',
      'e2e-token',
      '--sync-frequency',
      '1s',
    ]);
    url = await agent.serverUrl();
  });

  afterAll(async () => {
    agent.kill();
    await agent.exit;
  });

  it('warns that a token this short can be guessed (issue 27: the throttle lets a valid token in)', () => {
    expect(agent.lines.filter((l) => l.level === 40).map((l) => l.msg)).toContainEqual(
      expect.stringContaining('--auth-token has 9 characters: a token that short can be guessed'),
    );
  });

  it('listens on 127.0.0.1 and is healthy once the loop runs', async () => {
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const res = await fetch(`${url}/healthz`);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { status: string }).status).toBe('ok');
  });

  it('runs a POSTed manifest and shows it in /pods with its source and state', async () => {
    const res = await fetch(`${url}/container`, { method: 'POST', headers: postAs, body: JSON.stringify(manifest) });
    expect(res.status).toBe(201);
    await agent.until(() => agent.events('ContainerStarted', 'posted').length === 1, 'posted pod started');
    const list = (await (await fetch(`${url}/pods`, { headers: auth })).json()) as V1PodList;
    expect(list).toMatchObject({ kind: 'PodList', apiVersion: 'v1' });
    expect(
      list.items.map((p) => [p.metadata['name'], (p.metadata['annotations'] as Record<string, string>)['kubelet-ts.io/source']]),
    ).toEqual([['posted', 'server']]);
    expect(list.items[0]?.status['containerStatuses']).toEqual([
      expect.objectContaining({ name: 'main', state: { running: expect.anything() } }),
    ]);
  });

  it('serves containerInfo for a managed container by manifest/container, 404 otherwise', async () => {
    const res = await fetch(`${url}/containerInfo?container=posted/main`, { headers: auth });
    expect(res.status).toBe(200);
    const info = (await res.json()) as { Config: { Env?: unknown; env?: Record<string, string> } };
    expect(JSON.stringify(info)).toContain('"A"');
    expect((await fetch(`${url}/containerInfo?container=posted/other`, { headers: auth })).status).toBe(404);
    expect((await fetch(`${url}/containerInfo`, { headers: auth })).status).toBe(400);
  });

  it('refuses a bad manifest with every field error, and the running pod is untouched', async () => {
    const bad = {
      ...manifest,
      containers: [
        { name: 'main', image: 'busybox:1.36', ports: [{ containerPort: 0 }] },
        { name: 'main', image: '' },
      ],
    };
    const res = await fetch(`${url}/container`, { method: 'POST', headers: postAs, body: JSON.stringify(bad) });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { fieldErrors: Array<{ path: string }> };
    expect(body.fieldErrors.map((e) => e.path).sort()).toEqual(
      ['containers[0].ports[0].containerPort', 'containers[1].image', 'containers[1].name'].sort(),
    );
    expect((await fetch(`${url}/pods`)).status).toBe(401);
    await new Promise((r) => setTimeout(r, 1200));
    expect(agent.events('ContainerRemoved')).toEqual([]);
  });

  it('removes the pod when its manifest is DELETEd', async () => {
    expect((await fetch(`${url}/container/posted`, { method: 'DELETE', headers: auth })).status).toBe(200);
    await agent.until(() => agent.events('ContainerRemoved', 'posted').length === 1, 'posted pod removed');
    const { code } = await agent.stop();
    expect(code).toBe(0);
  });
});
