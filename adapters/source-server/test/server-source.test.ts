import { afterEach, describe, expect, it } from '@jest/globals';
import { connect } from 'node:net';
import { RecordingSink, objectDocuments } from '@kubelet-ts/conformance';
import { ServerManifestSource, agentApiHandler, type RouteHandler, type ServerManifestSourceOptions } from '../src/index.js';
import { FakeView } from './fake-view.js';
import { RecordingLogger } from './recording-logger.js';

const manifest = (id: string, extra = '') => `version: v1beta1\nid: ${id}\ncontainers:\n  - name: main\n    image: app:1\n${extra}`;

describe('ServerManifestSource', () => {
  let source: ServerManifestSource | undefined;

  afterEach(async () => {
    await source?.close();
    source = undefined;
  });

  /** The server as the CLI runs it: the agent API mounted next to the manifest routes. */
  const start = async (options: ServerManifestSourceOptions = {}, { agentApi = true } = {}) => {
    const sink = new RecordingSink();
    const view = new FakeView();
    source = new ServerManifestSource({ port: 0, ...options });
    if (agentApi) source.mount(agentApiHandler(view));
    await source.start(sink);
    return { sink, view, url: source.url };
  };

  const post = (url: string, path: string, body: string | Buffer, headers: Record<string, string> = {}) =>
    fetch(`${url}${path}`, { method: 'POST', body, headers: { 'content-type': 'application/yaml', ...headers } });

  it('binds 127.0.0.1 by default and delivers an empty set at start, so it counts as seen', async () => {
    const { sink, url } = await start();
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(sink.updates).toEqual([[]]);
  });

  it('adds with POST /container, replaces by id, and removes with DELETE /container/<id>', async () => {
    const { sink, url } = await start();
    let res = await post(url, '/container', manifest('web'));
    expect(res.status).toBe(201);
    expect(await res.json()).toEqual({ id: 'web', action: 'created' });
    res = await post(url, '/container', JSON.stringify({ id: 'api', containers: [{ name: 'main', image: 'app:1' }] }), {
      'content-type': 'application/json',
    });
    expect(res.status).toBe(201);
    expect(sink.ids).toEqual(['api', 'web']);
    res = await post(url, '/container', manifest('web').replace('app:1', 'app:2'));
    expect(res.status).toBe(200);
    expect(sink.updates.at(-1)?.find((m) => m.id === 'web')?.containers[0]?.image).toBe('app:2');
    res = await fetch(`${url}/container/api`, { method: 'DELETE' });
    expect(res.status).toBe(200);
    expect(sink.ids).toEqual(['web']);
    res = await fetch(`${url}/container/api`, { method: 'DELETE' });
    expect(res.status).toBe(404);
  });

  it('delivers only a changed set: posting a manifest it holds again answers 200 and delivers nothing', async () => {
    const { sink, url } = await start();
    expect((await post(url, '/container', manifest('web'))).status).toBe(201);
    expect((await post(url, '/container', manifest('web'))).status).toBe(200);
    expect((await post(url, '/containers', `- ${manifest('web').replaceAll('\n', '\n  ')}`)).status).toBe(200);
    expect(sink.updates.map((u) => u.map((m) => m.id))).toEqual([[], ['web']]);
  });

  it('takes ConfigMaps and Secrets beside the pods: with them in POST /containers, or one by one in POST /container', async () => {
    const { sink, url } = await start();
    const { pod, configMap } = objectDocuments;
    expect((await post(url, '/containers', [pod, configMap('fast')].join('\n---\n'))).status).toBe(200);
    expect(sink.ids).toEqual(['web']);
    expect(sink.objectKeys).toEqual(['ConfigMap/default/web-config']);
    const res = await post(url, '/container', configMap('slow'));
    expect([res.status, await res.json()]).toEqual([200, { id: 'ConfigMap/default/web-config', action: 'replaced' }]);
    expect(Buffer.from(sink.objectUpdates.at(-1)?.[0]?.data['mode'] ?? []).toString()).toBe('slow');
    const secret = JSON.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'db' }, data: { password: 'not base64!' } });
    const refused = await post(url, '/container', secret);
    expect(refused.status).toBe(400);
    expect(await refused.text()).not.toContain('not base64!');
  });

  it('replaces the whole set with POST /containers', async () => {
    const { sink, url } = await start();
    await post(url, '/container', manifest('old'));
    const res = await post(url, '/containers', `- ${manifest('a').replaceAll('\n', '\n  ')}\n- ${manifest('b').replaceAll('\n', '\n  ')}`);
    expect(res.status).toBe(200);
    expect(sink.ids).toEqual(['a', 'b']);
  });

  it('answers 400 naming every wrong field, and leaves the set as it was', async () => {
    const { sink, url } = await start();
    await post(url, '/container', manifest('web'));
    const updates = sink.updates.length;
    const bad = manifest('Bad_Id', '    ports:\n      - containerPort: 80\n        hostPort: 70000\n');
    const res = await post(url, '/container', bad);
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: string; fieldErrors: Array<{ path: string; message: string }> };
    expect(body.fieldErrors.map((e) => e.path)).toEqual(['id', 'containers[0].ports[0].hostPort']);
    const list = await post(
      url,
      '/containers',
      JSON.stringify([
        { id: 'ok', containers: [{ name: 'main', image: 'a' }] },
        { id: 'ok2', containers: [{ name: 'Main', image: 'a' }] },
      ]),
    );
    expect(list.status).toBe(400);
    expect(((await list.json()) as { fieldErrors: Array<{ path: string }> }).fieldErrors.map((e) => e.path)).toEqual([
      '[1].containers[0].name',
    ]);
    for (const text of ['{not yaml', '', '[]']) expect((await post(url, '/container', text)).status).toBe(400);
    expect(
      (
        await post(
          url,
          '/containers',
          `${JSON.stringify([JSON.parse(JSON.stringify({ id: 'd', containers: [{ name: 'm', image: 'a' }] })), { id: 'd', containers: [{ name: 'm', image: 'a' }] }])}`,
        )
      ).status,
    ).toBe(400);
    expect(sink.updates.length).toBe(updates);
    expect(sink.ids).toEqual(['web']);
  });

  // Found by reading what the fuzz suite's non-UTF-8 inputs exercise: the check for bad bytes was
  // "a U+FFFD after decoding that was not in the bytes", which a body holding a real U+FFFD passed.
  it('answers 400 for a body that is not UTF-8, even one that also holds a real U+FFFD', async () => {
    const { sink, url } = await start();
    const body = Buffer.concat([
      Buffer.from('# \uFFFD\n'),
      Buffer.from(manifest('web', '    env:\n      - name: CITY\n        value: Zürich\n'), 'latin1'),
    ]);
    const res = await post(url, '/container', body);
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: 'request body: not valid UTF-8' });
    expect(sink.updates).toEqual([[]]);
  });

  it('refuses bodies over the limit with 413', async () => {
    const { sink, url } = await start({ maxBodyBytes: 1024 });
    const res = await post(url, '/container', manifest('web') + `# ${'x'.repeat(2000)}\n`);
    expect(res.status).toBe(413);
    expect(sink.updates).toHaveLength(1);
  });

  it('requires the bearer token on every route but /healthz', async () => {
    const { sink, url } = await start({ authToken: 's3cret' });
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    const denied = await post(url, '/container', manifest('web'));
    expect(denied.status).toBe(401);
    expect(denied.headers.get('www-authenticate')).toBe('Bearer');
    expect((await post(url, '/container', manifest('web'), { authorization: 'Bearer wrong' })).status).toBe(401);
    expect((await fetch(`${url}/pods`, { headers: { authorization: 'Basic s3cret' } })).status).toBe(401);
    expect((await fetch(`${url}/metrics`)).status).toBe(401);
    expect((await fetch(`${url}/plan`)).status).toBe(401);
    expect(sink.ids).toEqual([]);
    expect((await post(url, '/container', manifest('web'), { authorization: 'Bearer s3cret' })).status).toBe(201);
    expect(sink.ids).toEqual(['web']);
  });

  it('answers 404 for unknown routes, 405 for wrong methods and 400 for a malformed escape', async () => {
    const { url } = await start();
    expect((await fetch(`${url}/nope`)).status).toBe(404);
    expect((await fetch(`${url}/container`)).status).toBe(405);
    expect((await fetch(`${url}/pods`, { method: 'POST' })).status).toBe(405);
    expect((await fetch(`${url}/container/%E0%A4%A`, { method: 'DELETE' })).status).toBe(400);
  });

  it('answers 404 for the agent routes when no agent API is mounted (it used to be 503 "not attached")', async () => {
    const { url } = await start({}, { agentApi: false });
    for (const path of ['/pods', '/healthz', '/plan', '/metrics', '/containerInfo?container=web-1']) {
      const res = await fetch(`${url}${path}`);
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({ error: `no route GET ${new URL(path, url).pathname}` });
    }
    expect((await post(url, '/container', manifest('web'))).status).toBe(201);
  });

  it('puts mounted routes behind the token, but not /healthz, and keeps the manifest routes its own', async () => {
    const hello: RouteHandler = async (req, url) => {
      if (url.pathname === '/hello') return { status: 200, json: { hello: req.method } };
      // Asked only about what the manifest routes did not answer: it never sees /container.
      if (url.pathname.startsWith('/container')) return { status: 418, json: {} };
      return undefined;
    };
    const { sink, url } = await start({ authToken: 's3cret' });
    source!.mount(hello);
    const auth = { authorization: 'Bearer s3cret' };
    const denied = await fetch(`${url}/hello`);
    expect(denied.status).toBe(401);
    expect(denied.headers.get('www-authenticate')).toBe('Bearer');
    expect(await (await fetch(`${url}/hello`, { headers: auth })).json()).toEqual({ hello: 'GET' });
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    expect((await post(url, '/container', manifest('web'), auth)).status).toBe(201);
    expect((await fetch(`${url}/container`, { headers: auth })).status).toBe(405);
    expect((await fetch(`${url}/nope`, { headers: auth })).status).toBe(404);
    expect(sink.ids).toEqual(['web']);
  });

  it('asks mounted handlers in the order they were mounted, from the next request on', async () => {
    const { url } = await start({}, { agentApi: false });
    expect((await fetch(`${url}/healthz`)).status).toBe(404);
    const view = new FakeView();
    source!.mount(agentApiHandler(view));
    source!.mount(async (_req, u) => (u.pathname === '/healthz' ? { status: 500, json: { shadowed: true } } : undefined));
    expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ status: 'ok', ...view.health_ });
  });

  it('drops a client that sends malformed HTTP, and one too slow to finish its request', async () => {
    const { url, sink } = await start({ requestTimeoutMs: 300 });
    const { port } = new URL(url);
    const raw = async (payload: string): Promise<string> =>
      new Promise((resolve) => {
        const socket = connect(Number(port), '127.0.0.1', () => socket.write(payload));
        let answer = '';
        socket.on('data', (d) => (answer += d.toString()));
        socket.on('close', () => resolve(answer));
        socket.on('error', () => resolve(answer));
      });
    expect(await raw('GARBAGE / NOT-HTTP\r\n\r\n')).toMatch(/^HTTP\/1\.1 400/);
    const started = Date.now();
    const slow = await raw(
      `POST /container HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/yaml\r\nContent-Length: 100\r\n\r\nid: we`,
    );
    expect(slow).toMatch(/^HTTP\/1\.1 408/);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(sink.updates).toHaveLength(1);
  });

  it('rejects start when the port is taken, so the supervisor can retry', async () => {
    const { url } = await start();
    const port = Number(new URL(url).port);
    const logger = new RecordingLogger();
    const second = new ServerManifestSource({ port, logger });
    // Loudly, with what to do (issue 27 item 4: a pod that took the port would answer the agent's clients).
    await expect(second.start(new RecordingSink())).rejects.toMatchObject({
      code: 'EADDRINUSE',
      message: expect.stringContaining(`the agent server cannot listen on 127.0.0.1:${port}: another process holds that address`),
    });
    expect(logger.entries.filter((e) => e.level === 'error').map((e) => e.message)).toEqual([
      expect.stringMatching(/would receive their bearer tokens.*ss -ltnp 'sport = :\d+'.*or give --port/),
    ]);
    await second.close();
  });

  it('with host networking allowed, refuses to serve anyone unauthenticated, loopback included (issue 27 item 4)', () => {
    expect(() => new ServerManifestSource({ port: 0, allowHostNetwork: true })).toThrow(
      /lets pods share the host's network \(--allow-host-network\), so a pod reaches this server on 127\.0\.0\.1.*--auth-token.*--insecure-allow-unauthenticated/,
    );
    expect(() => new ServerManifestSource({ port: 0, allowHostNetwork: true, authToken: 't' })).not.toThrow();
    expect(() => new ServerManifestSource({ port: 0, allowHostNetwork: true, insecureAllowUnauthenticated: true })).not.toThrow();
  });

  it('refuses, as a 409 naming both, a 2014 manifest whose id is another namespace’s pod (x of kube-system, manifest x.kube-system) (issue 27)', async () => {
    const { sink, url } = await start();
    const v1 = (name: string, namespace?: string) =>
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, ...(namespace === undefined ? {} : { namespace }) },
        spec: { containers: [{ name: 'main', image: namespace ?? 'default:1' }] },
      });
    const json = { 'content-type': 'application/json' };
    expect((await post(url, '/container', v1('x', 'kube-system'), json)).status).toBe(201);
    const clash = await post(
      url,
      '/container',
      JSON.stringify({ id: 'x.kube-system', containers: [{ name: 'main', image: 'default:1' }] }),
      json,
    );
    expect(clash.status).toBe(409);
    expect(await clash.text()).toContain(
      'manifest id \\"x.kube-system\\" is already pod \\"x\\" of namespace kube-system; pod \\"x.kube-system\\" of namespace default has the same id and would replace it',
    );
    expect(sink.updates.at(-1)?.map((m) => [m.id, m.namespace, m.containers[0]?.image])).toEqual([
      ['x.kube-system', 'kube-system', 'kube-system'],
    ]);
    // The same pod posted again replaces itself, as before.
    expect((await post(url, '/container', v1('x', 'kube-system'), json)).status).toBe(200);
    // A v1 pod x.kube-system of default is another pod (issue 42: its id is x.kube-system.default).
    expect((await post(url, '/container', v1('x.kube-system'), json)).status).toBe(201);
    expect(
      sink.updates
        .at(-1)
        ?.map((m) => [m.id, m.namespace])
        .sort(),
    ).toEqual([
      ['x.kube-system', 'kube-system'],
      ['x.kube-system.default', 'default'],
    ]);
  });

  it('refuses a POSTed hostNetwork pod unless host networking is allowed, naming the field and the flag', async () => {
    const { sink, url } = await start();
    const res = await post(url, '/container', manifest('web', 'hostNetwork: true\n'));
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('hostNetwork: true puts the pod in the host');
    expect(sink.updates).toEqual([[]]);
  });

  describe("the agent's kept set after a restart (issue 27 item 1)", () => {
    const restoredOf = async (...ids: string[]) => {
      const first = new ServerManifestSource({ port: 0 });
      const sink = new RecordingSink();
      await first.start(sink);
      for (const id of ids) await post(first.url, '/container', manifest(id));
      await first.close();
      return sink.updates.at(-1)!;
    };

    it('takes up what was posted before the restart, as if posted again, at its first start only', async () => {
      const restored = await restoredOf('web', 'db');
      source = new ServerManifestSource({ port: 0 });
      const sink = Object.assign(new RecordingSink(), { restored });
      await source.start(sink);
      expect(sink.updates).toEqual([restored]);
      // DELETE knows it (a 404 before: the server had forgotten what it was told).
      expect((await fetch(`${source.url}/container/web`, { method: 'DELETE' })).status).toBe(200);
      expect(sink.ids).toEqual(['db']);
      // Restarted by its supervisor, it goes on from what it holds, not from the agent's checkpoint.
      await source.close();
      const again = Object.assign(new RecordingSink(), { restored });
      await source.start(again);
      expect(again.ids).toEqual(['db']);
    });

    it('over its limits (lowered since), takes up nothing and delivers nothing, so the agent runs the kept set', async () => {
      const restored = await restoredOf('web', 'db');
      const logger = new RecordingLogger();
      source = new ServerManifestSource({ port: 0, limits: { maxManifests: 1 }, logger });
      const sink = Object.assign(new RecordingSink(), { restored });
      await source.start(sink);
      expect(sink.updates).toEqual([]);
      expect(logger.entries.filter((e) => e.level === 'error').map((e) => e.message)).toEqual([
        expect.stringContaining('the manifests posted before the restart would hold 2 manifests'),
      ]);
    });
  });
});
