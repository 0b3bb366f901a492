import { afterEach, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { silentLogger, type Logger } from '@kubelet-ts/core';
import { RecordingSink } from '@kubelet-ts/conformance';
import {
  ServerManifestSource,
  agentApiHandler,
  agentApiListener,
  renderPodList,
  type AgentApiListenerOptions,
  type V1PodList,
} from '../src/index.js';
import { FakeView } from './fake-view.js';

/** The agent API served somewhere on 127.0.0.1, and how to stop serving it. */
interface Served {
  readonly url: string;
  close(): Promise<void>;
}

/** As the CLI serves it: mounted on the agent's own server, next to the manifest routes. */
async function onServerSource(view: FakeView): Promise<Served> {
  const source = new ServerManifestSource({ port: 0 });
  source.mount(agentApiHandler(view));
  await source.start(new RecordingSink());
  return { url: source.url, close: () => source.close() };
}

/** As an embedder serves it: their own node server, handed the listener and nothing else. */
async function onOwnServer(view: FakeView, options?: AgentApiListenerOptions): Promise<Served> {
  const server: Server = createServer(agentApiListener(view, options));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

let served: Served | undefined;
afterEach(async () => {
  await served?.close();
  served = undefined;
});

describe.each([
  ['mounted on the server source', onServerSource],
  ["on an embedder's own server", onOwnServer],
])('the agent API %s', (_, serve) => {
  const start = async () => {
    const view = new FakeView();
    served = await serve(view);
    return { view, url: served.url };
  };

  it('serves containerInfo for managed containers only: 400 without the parameter, 404 when unknown', async () => {
    const { url } = await start();
    expect((await fetch(`${url}/containerInfo`)).status).toBe(400);
    expect((await fetch(`${url}/containerInfo?container=someone-elses`)).status).toBe(404);
    const res = await fetch(`${url}/containerInfo?container=web-1`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ Id: 'abc', Name: '/web-1' });
  });

  it('serves /pods and /healthz, which fails when the agent says it is unhealthy', async () => {
    const { url, view } = await start();
    const list = (await (await fetch(`${url}/pods`)).json()) as V1PodList;
    const listing = await view.podListing();
    expect(list).toEqual(renderPodList(listing.pods, listing));
    expect(list).toMatchObject({
      kind: 'PodList',
      apiVersion: 'v1',
      items: [{ metadata: { name: 'web' }, spec: { nodeName: 'node-1' }, status: { phase: 'Running' } }],
    });
    expect(list.items[0]?.status.containerStatuses).toEqual([
      {
        name: 'nginx',
        image: 'nginx',
        imageID: '',
        containerID: 'fake://abc',
        restartCount: 0,
        ready: true,
        started: true,
        state: { running: { startedAt: '1970-01-01T00:00:01Z' } },
        lastState: {},
      },
    ]);
    let res = await fetch(`${url}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok', healthy: true, message: 'ok' });
    view.health_ = { healthy: false, message: 'no sync pass has completed for 40000 ms' };
    res = await fetch(`${url}/healthz`);
    expect(res.status).toBe(503);
    expect(((await res.json()) as { message: string }).message).toContain('40000 ms');
  });

  it('serves /plan as JSON and /metrics as Prometheus text', async () => {
    const { url, view } = await start();
    expect(await (await fetch(`${url}/plan`)).json()).toEqual(await view.plan());
    const metrics = await fetch(`${url}/metrics`);
    expect(metrics.headers.get('content-type')).toContain('text/plain');
    expect(await metrics.text()).toBe('kubelet_ts_desired_pods 1\n');
  });

  it('serves container figures at /containerStats (2014) and /stats/<manifest>/<container>; 404 unknown, 501 without figures', async () => {
    const { url, view } = await start();
    const figures = {
      timestamp: 1_000,
      cpu: { usageNanoseconds: 5_000_000 },
      memory: { usageBytes: 1024, limitBytes: 4096, workingSetBytes: 512 },
    };
    expect(await (await fetch(`${url}/containerStats?container=web-1`)).json()).toEqual(figures);
    expect(await (await fetch(`${url}/stats/web/nginx`)).json()).toEqual(figures);
    expect((await fetch(`${url}/containerStats`)).status).toBe(400);
    expect((await fetch(`${url}/containerStats?container=someone-elses`)).status).toBe(404);
    expect((await fetch(`${url}/stats/web/other`)).status).toBe(404);
    expect((await fetch(`${url}/stats/web/%E0%A4%A`)).status).toBe(400);
    view.hasStats = false;
    const none = await fetch(`${url}/stats/web/nginx`);
    expect(none.status).toBe(501);
    expect(((await none.json()) as { error: string }).error).toContain('gives no container figures');
  });

  it('answers 405 to another method on its routes', async () => {
    const { url } = await start();
    for (const path of [
      '/healthz',
      '/metrics',
      '/pods',
      '/plan',
      '/containerInfo?container=web-1',
      '/containerStats?container=web-1',
      '/stats/web/nginx',
    ]) {
      const res = await fetch(`${url}${path}`, { method: 'POST' });
      expect(res.status).toBe(405);
      expect(await res.json()).toEqual({ error: 'use GET' });
    }
  });
});

describe('agentApiListener', () => {
  it('serves the agent API and no manifest route: POST /container is a 404 with the JSON error shape', async () => {
    served = await onOwnServer(new FakeView());
    const { url } = served;
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    expect((await fetch(`${url}/pods`)).status).toBe(200);
    const post = await fetch(`${url}/container`, {
      method: 'POST',
      body: JSON.stringify({ id: 'web', containers: [{ name: 'main', image: 'app:1' }] }),
    });
    expect(post.status).toBe(404);
    expect(await post.json()).toEqual({ error: 'no route POST /container' });
    expect((await fetch(`${url}/containers`, { method: 'POST', body: '[]' })).status).toBe(404);
    expect((await fetch(`${url}/container/web`, { method: 'DELETE' })).status).toBe(404);
    const unknown = await fetch(`${url}/nope`);
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('content-type')).toContain('application/json');
    expect(await unknown.json()).toEqual({ error: 'no route GET /nope' });
  });

  it('with a token, requires it on every route but /healthz', async () => {
    served = await onOwnServer(new FakeView(), { authToken: 's3cret' });
    const { url } = served;
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    for (const path of ['/pods', '/plan', '/metrics', '/containerInfo?container=web-1', '/nope']) {
      const denied = await fetch(`${url}${path}`);
      expect(denied.status).toBe(401);
      expect(denied.headers.get('www-authenticate')).toBe('Bearer');
    }
    expect((await fetch(`${url}/pods`, { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
    expect((await fetch(`${url}/pods?token=s3cret`)).status).toBe(401);
    expect((await fetch(`${url}/pods`, { headers: { authorization: 'Bearer s3cret' } })).status).toBe(200);
  });

  it('answers 500 when the agent fails, logging the error once and keeping its message from the client', async () => {
    const view = new FakeView();
    view.pods = async () => {
      throw new Error('runtime socket /var/run/docker.sock refused');
    };
    const logged: Array<{ fields: object; message: string }> = [];
    const logger: Logger = { ...silentLogger, error: (fields, message) => logged.push({ fields, message }) };
    served = await onOwnServer(view, { logger });
    const res = await fetch(`${served.url}/pods`);
    expect(res.status).toBe(500);
    expect(await res.json()).toEqual({ error: 'internal error' });
    expect(logged).toEqual([{ fields: expect.objectContaining({ url: '/pods' }), message: 'request failed' }]);
  });
});
