import { afterEach, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { RecordingSink } from '@kubelet-ts/conformance';
import { ServerManifestSource, agentApiHandler, agentApiListener, type AgentApiListenerOptions } from '../src/index.js';
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
    expect(await (await fetch(`${url}/pods`)).json()).toEqual(await view.pods());
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

  it('answers 405 to another method on its routes', async () => {
    const { url } = await start();
    for (const path of ['/healthz', '/metrics', '/pods', '/plan', '/containerInfo?container=web-1']) {
      const res = await fetch(`${url}${path}`, { method: 'POST' });
      expect(res.status).toBe(405);
      expect(await res.json()).toEqual({ error: 'use GET' });
    }
  });
});
