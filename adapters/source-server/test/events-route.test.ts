import { afterEach, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { request } from 'node:http';
import type { RecordedEvent } from '@kubelet-ts/core';
import { RecordingSink } from '@kubelet-ts/conformance';
import { ServerManifestSource, agentApiHandler } from '../src/index.js';
import { watchStream } from '../src/watch-stream.js';
import { FakeView } from './fake-view.js';

const T0 = Date.parse('2026-12-04T10:00:00Z');
const backOff: RecordedEvent = {
  id: 1,
  type: 'BackOff',
  time: T0 + 60_000,
  firstTime: T0,
  count: 4,
  podId: 'web',
  container: 'nginx',
  namespace: 'shop',
  podUid: 'uid-web',
  message: 'back-off 40s restarting failed container',
};
const sourceError: RecordedEvent = {
  id: 2,
  type: 'SourceError',
  time: T0,
  firstTime: T0,
  count: 1,
  source: 'file',
  message: 'unreadable: web.yaml',
};

let source: ServerManifestSource | undefined;
afterEach(async () => {
  await source?.close();
  source = undefined;
});

async function start(): Promise<{ view: FakeView; url: string }> {
  const view = new FakeView();
  view.record(backOff);
  view.record(sourceError);
  source = new ServerManifestSource({ port: 0 });
  source.mount(agentApiHandler(view));
  await source.start(new RecordingSink());
  return { view, url: source.url };
}

/** A watch: the JSON lines read so far, and how to stop reading. */
function watch(url: string, path: string) {
  const lines: Array<{ type: string; object: Record<string, any> }> = [];
  let buffer = '';
  let closed = false;
  const req = request(`${url}${path}`, (res) => {
    res.setEncoding('utf8').on('data', (chunk: string) => {
      buffer += chunk;
      for (let at = buffer.indexOf('\n'); at >= 0; at = buffer.indexOf('\n')) {
        lines.push(JSON.parse(buffer.slice(0, at)));
        buffer = buffer.slice(at + 1);
      }
    });
    res.on('close', () => (closed = true));
  });
  req.end();
  const until = async (check: () => boolean, what: string) => {
    const deadline = Date.now() + 5_000;
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`${what}: ${JSON.stringify(lines)}`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  };
  return { lines, until, closed: () => closed, stop: () => req.destroy() };
}

describe('GET /events', () => {
  it("serves the recent events as a v1 EventList, read by kubectl get --raw: a pod container's, and the node's", async () => {
    const { url } = await start();
    const out = await new Promise<string>((resolve, reject) =>
      execFile(
        'kubectl',
        ['get', '--raw', '/events', '--server', url],
        { env: { ...process.env, KUBECONFIG: '/dev/null' } },
        (error, stdout) => (error === null ? resolve(stdout) : reject(error)),
      ),
    );
    expect(JSON.parse(out)).toEqual({
      kind: 'EventList',
      apiVersion: 'v1',
      metadata: {},
      items: [
        {
          metadata: { name: 'web.00000001', namespace: 'shop' },
          involvedObject: { kind: 'Pod', name: 'web', namespace: 'shop', uid: 'uid-web', fieldPath: 'spec.containers{nginx}' },
          reason: 'BackOff',
          message: 'back-off 40s restarting failed container',
          source: { component: 'kubelet', host: 'node-1' },
          firstTimestamp: '2026-12-04T10:00:00Z',
          lastTimestamp: '2026-12-04T10:01:00Z',
          count: 4,
          type: 'Warning',
          reportingComponent: 'kubelet',
          reportingInstance: 'node-1',
        },
        expect.objectContaining({ involvedObject: { kind: 'Node', name: 'node-1' }, reason: 'SourceError', type: 'Warning', count: 1 }),
      ],
    });
  });

  it("names a v1 pod as /pods does (its manifest id less the namespace), and gives the kubelet's reason, not the agent's why", async () => {
    const { url, view } = await start();
    view.record({ ...backOff, id: 7, podId: 'db.shop', type: 'ContainerStarted', reason: 'new', count: 1, message: 'started' });
    const list = (await (await fetch(`${url}/events?pod=db&namespace=shop`)).json()) as { items: Array<Record<string, any>> };
    expect(list.items).toHaveLength(1);
    expect(list.items[0]).toMatchObject({
      metadata: { name: 'db.00000007', namespace: 'shop' },
      involvedObject: { kind: 'Pod', name: 'db', namespace: 'shop' },
      reason: 'Started',
      type: 'Normal',
    });
  });

  it('filters by namespace and pod; refuses a watch that is neither true nor false', async () => {
    const { url } = await start();
    const names = async (query: string) =>
      ((await (await fetch(`${url}/events${query}`)).json()) as { items: Array<{ metadata: { name: string } }> }).items.map(
        (e) => e.metadata.name,
      );
    expect(await names('?namespace=shop')).toEqual(['web.00000001']);
    // The node's events are the default namespace's, as the kubelet files them.
    expect(await names('?namespace=default')).toEqual(['node-1.00000002']);
    expect(await names('?pod=web')).toEqual(['web.00000001']);
    const refused = await fetch(`${url}/events?watch=soon`);
    expect(refused.status).toBe(400);
    expect(await refused.json()).toEqual({ error: 'the query parameter "watch" must be true or false (1 or 0), got "soon"' });
  });

  it('watches: the kept events as ADDED, then each new one ADDED and each fold MODIFIED; a watcher that leaves lets go', async () => {
    const { url, view } = await start();
    const w = watch(url, '/events?watch=1&namespace=shop');
    await w.until(() => w.lines.length === 1, 'the kept event');
    expect(w.lines[0]).toMatchObject({ type: 'ADDED', object: { reason: 'BackOff', count: 4 } });
    view.record({ ...backOff, count: 5, time: T0 + 120_000 });
    view.record({ ...sourceError, id: 3 }); // not of namespace shop
    view.record({ ...backOff, id: 4, count: 1, type: 'ContainerStarted', message: 'started' });
    await w.until(() => w.lines.length === 3, 'the fold and the new one');
    expect(w.lines.slice(1).map((l) => [l.type, l.object.reason, l.object.count])).toEqual([
      ['MODIFIED', 'BackOff', 5],
      ['ADDED', 'Started', 1],
    ]);
    expect(view.eventWatchers).toBe(1);
    w.stop();
    await w.until(() => view.eventWatchers === 0, 'the watcher let go');
  });
});

describe('watchStream', () => {
  type Push = (changes: readonly { type: 'ADDED'; object: number }[]) => void;
  const open = (maxQueued: number) => {
    let push: Push | undefined;
    let subscribed = true;
    const stream = watchStream<number>(
      [],
      (p) => {
        push = p;
        return () => (subscribed = false);
      },
      new AbortController().signal,
      maxQueued,
    );
    return { stream, push: (changes: Parameters<Push>[0]) => push!(changes), subscribed: () => subscribed };
  };
  const text = (chunk: IteratorResult<Uint8Array>) => new TextDecoder().decode(chunk.value as Uint8Array);

  it('drops a watcher that falls more than maxQueued changes behind, rather than queue without end', async () => {
    const w = open(3);
    const first = w.stream.next();
    w.push([{ type: 'ADDED', object: 0 }]);
    expect(text(await first)).toBe('{"type":"ADDED","object":0}\n');
    // It stops reading; three changes wait, the fourth is one too many.
    for (let i = 1; i <= 4; i++) w.push([{ type: 'ADDED', object: i }]);
    await expect(w.stream.next()).rejects.toThrow('the watcher fell 3 changes behind: dropped');
    expect(w.subscribed()).toBe(false);
  });

  it('takes a batch larger than maxQueued whole when nothing waits (the watcher is not behind), as one chunk of lines', async () => {
    const w = open(3);
    const first = w.stream.next();
    w.push([0, 1, 2, 3, 4].map((object) => ({ type: 'ADDED' as const, object })));
    expect(text(await first)).toBe([0, 1, 2, 3, 4].map((i) => `{"type":"ADDED","object":${i}}\n`).join(''));
    // Then behind by one batch: a second batch that would make more than three waiting drops it.
    w.push([{ type: 'ADDED', object: 5 }]);
    w.push([6, 7, 8].map((object) => ({ type: 'ADDED' as const, object })));
    await expect(w.stream.next()).rejects.toThrow('the watcher fell 3 changes behind: dropped');
  });

  it('encodes a batch given to many watchers once: each gets the same bytes', async () => {
    const a = open(10);
    const b = open(10);
    const [nextA, nextB] = [a.stream.next(), b.stream.next()];
    const batch = [
      { type: 'ADDED' as const, object: 1 },
      { type: 'ADDED' as const, object: 2 },
    ];
    a.push(batch);
    b.push(batch);
    const [chunkA, chunkB] = [await nextA, await nextB];
    expect(chunkA.value).toBe(chunkB.value);
    expect(text(chunkA)).toBe('{"type":"ADDED","object":1}\n{"type":"ADDED","object":2}\n');
    await a.stream.return(undefined);
    await b.stream.return(undefined);
    expect(a.subscribed() || b.subscribed()).toBe(false);
  });
});

describe('GET /sources', () => {
  it('lists each source in priority order with what it delivered, its last problem, and the manifests it had rejected', async () => {
    const { url, view } = await start();
    view.record({
      id: 9,
      type: 'ManifestRejected',
      time: T0,
      firstTime: T0,
      count: 2,
      source: 'file',
      reason: 'InvalidManifest',
      message: 'web.yaml: containers[0].image: required',
    });
    expect(await (await fetch(`${url}/sources`)).json()).toEqual({
      kind: 'SourceList',
      items: [
        {
          name: 'file',
          seen: true,
          manifests: 1,
          lastError: 'web.yaml: containers[0].image: required',
          rejected: [{ message: 'web.yaml: containers[0].image: required', count: 2, lastSeen: '2026-12-04T10:00:00Z' }],
        },
        { name: 'etcd', seen: false, manifests: 0, down: 'connect ECONNREFUSED 127.0.0.1:2379', rejected: [] },
      ],
    });
  });
});
