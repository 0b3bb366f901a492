import { afterEach, describe, expect, it } from '@jest/globals';
import { request } from 'node:http';
import type { PodListing, PodView } from '@kubelet-ts/core';
import { RecordingSink, checkedManifest } from '@kubelet-ts/conformance';
import { ServerManifestSource, agentApiHandler } from '../src/index.js';
import { FakeView } from './fake-view.js';

/** A view whose pods a test changes: each id with its nginx container's restart count. */
class ChangingView extends FakeView {
  restarts = new Map<string, number>([
    ['web', 0],
    ['db', 0],
  ]);
  renders = 0;
  override async pods(): Promise<PodView[]> {
    return [...this.restarts].map(([id, restartCount]) => ({
      id,
      source: 'server',
      containers: [
        { name: 'nginx', image: 'nginx', state: 'running', id: `c-${id}`, startedAt: 1_000, restartCount, started: true, ready: true },
      ],
    }));
  }
  override async podListing(): Promise<PodListing> {
    this.renders += 1;
    const pods = (await this.pods()).map((view) => ({
      view,
      manifest: checkedManifest({ version: 'v1beta1', id: view.id, containers: [{ name: 'nginx', image: 'nginx' }] }),
    }));
    return { pods, nodeName: 'node-1', runtime: 'fake' };
  }
}

let source: ServerManifestSource | undefined;
afterEach(async () => {
  await source?.close();
  source = undefined;
});

async function start(): Promise<{ view: ChangingView; url: string }> {
  const view = new ChangingView();
  source = new ServerManifestSource({ port: 0, requestTimeoutMs: 300 });
  source.mount(agentApiHandler(view));
  await source.start(new RecordingSink());
  return { view, url: source.url };
}

type Line = { type: string; object: { metadata: Record<string, unknown>; status: { containerStatuses: Array<{ restartCount: number }> } } };

function watch(url: string) {
  const lines: Line[] = [];
  let buffer = '';
  const req = request(`${url}/pods?watch=true`, (res) => {
    res.setEncoding('utf8').on('data', (chunk: string) => {
      buffer += chunk;
      for (let at = buffer.indexOf('\n'); at >= 0; at = buffer.indexOf('\n')) {
        lines.push(JSON.parse(buffer.slice(0, at)) as Line);
        buffer = buffer.slice(at + 1);
      }
    });
  });
  req.end();
  const until = async (n: number) => {
    const deadline = Date.now() + 5_000;
    while (lines.length < n) {
      if (Date.now() > deadline) throw new Error(`${n} lines expected: ${JSON.stringify(lines)}`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  };
  const summary = () => lines.map((l) => `${l.type} ${l.object.metadata['name']} ${l.object.status.containerStatuses[0]?.restartCount}`);
  return { lines, until, summary, stop: () => req.destroy() };
}

describe('GET /pods?watch=true', () => {
  it('streams the pods as ADDED, then each change as the API server watch does, past the request timeout', async () => {
    const { url, view } = await start();
    const w = watch(url);
    await w.until(2);
    expect(w.summary()).toEqual(['ADDED web 0', 'ADDED db 0']);
    // A restart, a new pod, a removed one; nothing for a change signal that changed nothing.
    await new Promise((resolve) => setTimeout(resolve, 400));
    view.changed();
    view.restarts.set('web', 1);
    view.changed();
    await w.until(3);
    view.restarts.set('cache', 0);
    view.restarts.delete('db');
    view.changed();
    await w.until(5);
    expect(w.summary()).toEqual(['ADDED web 0', 'ADDED db 0', 'MODIFIED web 1', 'ADDED cache 0', 'DELETED db 0']);
    w.stop();
  });

  it('serves many watchers from one render a change, and stops hearing the agent when the last leaves', async () => {
    const { url, view } = await start();
    const watchers = Array.from({ length: 20 }, () => watch(url));
    for (const w of watchers) await w.until(2);
    const before = view.renders;
    view.restarts.set('db', 3);
    view.changed();
    for (const w of watchers) await w.until(3);
    for (const w of watchers) expect(w.summary()[2]).toBe('MODIFIED db 3');
    expect(view.renders - before).toBe(1);
    for (const w of watchers) w.stop();
    const deadline = Date.now() + 5_000;
    while (view.changeWatchers > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(view.changeWatchers).toBe(0);
  });
});
