import { afterEach, describe, expect, it } from '@jest/globals';
import { RecordingSink } from '@kubelet-ts/conformance';
import { ServerManifestSource, agentApiHandler, type ServerManifestSourceOptions } from '../src/index.js';
import { FakeView } from './fake-view.js';
import { send } from './http-request.js';

const manifest = JSON.stringify({ id: 'web', containers: [{ name: 'main', image: 'app:1' }] });

/**
 * A page on another site can make a browser send a "simple" request (a form's POST, text/plain,
 * no preflight) to 127.0.0.1: the agent must tell it from a request of its own user by the
 * Origin the browser adds, and by a body type no form can send.
 */
describe('the agent server against cross-site requests', () => {
  let source: ServerManifestSource | undefined;

  afterEach(async () => {
    await source?.close();
    source = undefined;
  });

  const start = async (options: ServerManifestSourceOptions = {}) => {
    const sink = new RecordingSink();
    source = new ServerManifestSource({ port: 0, ...options });
    source.mount(agentApiHandler(new FakeView()));
    await source.start(sink);
    return { sink, url: source.url, port: Number(new URL(source.url).port) };
  };

  it('refuses a cross-site text/plain POST /container with 403, and changes nothing', async () => {
    const { sink, url } = await start();
    const res = await send(url, '/container', {
      method: 'POST',
      headers: { origin: 'http://evil.example', 'content-type': 'text/plain' },
      body: manifest,
    });
    expect(res.status).toBe(403);
    expect((res.json as { error: string }).error).toMatch(/Origin "http:\/\/evil\.example".*not this agent's own/);
    expect(sink.updates).toEqual([[]]);
  });

  it.each([
    ['another site', 'http://evil.example'],
    ['an opaque origin (sandboxed frame, file:)', 'null'],
    ['the right host on another port', 'http://127.0.0.1:1'],
    ['the right host over https', 'https://127.0.0.1:PORT'],
    ['a name the agent does not listen on, resolving to it', 'http://rebound.example:PORT'],
    ['not an origin at all', '::'],
  ])('refuses a request from %s, even with a JSON body, and on the read routes too', async (_, template) => {
    const { sink, url, port } = await start();
    const origin = template.replace('PORT', String(port));
    const post = await send(url, '/container', { method: 'POST', headers: { origin, 'content-type': 'application/json' }, body: manifest });
    expect(post.status).toBe(403);
    expect((await send(url, '/pods', { headers: { origin } })).status).toBe(403);
    expect((await send(url, '/healthz', { headers: { origin } })).status).toBe(403);
    expect(sink.updates).toEqual([[]]);
  });

  it("accepts its own origin, by any name it listens on, and a request with no Origin (curl's)", async () => {
    const { sink, url, port } = await start({ allowedHosts: ['node-1.example'] });
    const statuses: Record<string, number> = {};
    for (const origin of [
      `http://127.0.0.1:${port}`,
      `http://localhost:${port}`,
      `http://[::1]:${port}`,
      `http://node-1.example:${port}`,
    ]) {
      statuses[origin] = (
        await send(url, '/container', { method: 'POST', headers: { origin, 'content-type': 'application/json' }, body: manifest })
      ).status;
    }
    expect(Object.values(statuses)).toEqual([201, 200, 200, 200]);
    expect(
      (await send(url, '/container', { method: 'POST', headers: { 'content-type': 'application/json' }, body: manifest })).status,
    ).toBe(200);
    expect(sink.ids).toEqual(['web']);
  });

  it.each([
    ['none', undefined],
    ['text/plain (a form, no preflight)', 'text/plain'],
    ["application/x-www-form-urlencoded (curl's default)", 'application/x-www-form-urlencoded'],
    ['multipart/form-data', 'multipart/form-data; boundary=x'],
    ['JSON in another charset', 'application/json; charset=latin1'],
    ['JSON with an unknown parameter', 'application/json; profile=x'],
  ])('answers 415 to a POST whose body type is %s, naming the types it takes', async (_, type) => {
    const { sink, url } = await start();
    for (const path of ['/container', '/containers']) {
      const res = await send(url, path, {
        method: 'POST',
        headers: type === undefined ? {} : { 'content-type': type },
        body: path === '/container' ? manifest : `[${manifest}]`,
      });
      expect(res.status).toBe(415);
      expect((res.json as { error: string }).error).toContain(
        'application/json, application/yaml, application/x-yaml, text/yaml, text/x-yaml',
      );
    }
    expect(sink.updates).toEqual([[]]);
  });

  it.each([
    'application/json',
    'application/json; charset=utf-8',
    'Application/JSON;Charset="UTF-8"',
    'application/yaml',
    'application/x-yaml',
    'text/yaml',
    'text/x-yaml; charset=utf-8',
  ])('takes a body sent as %s', async (type) => {
    const { sink, url } = await start();
    expect((await send(url, '/container', { method: 'POST', headers: { 'content-type': type }, body: manifest })).status).toBe(201);
    expect(sink.ids).toEqual(['web']);
  });
});
