import { afterEach, describe, expect, it } from '@jest/globals';
import { get, type IncomingMessage } from 'node:http';
import { formatLogTime } from '@kubelet-ts/core';
import { RecordingSink } from '@kubelet-ts/conformance';
import { ServerManifestSource, agentApiHandler, type ServerManifestSourceOptions } from '../src/index.js';
import { FakeView } from './fake-view.js';
import { RecordingLogger } from './recording-logger.js';

const TOKEN = 'container-logs-token';
const auth = { authorization: `Bearer ${TOKEN}` };

/** Resolves when `done()` holds, checked every 10 ms; fails naming `what` after 5 s. */
async function until(what: string, done: () => boolean): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`not within 5 s: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** An answer read as it streams: its status and headers at once, its text as it comes. */
interface Streaming {
  readonly res: IncomingMessage;
  text: string;
  ended: boolean;
  /** Resolves once the answer ended (the server finished it). */
  readonly end: Promise<void>;
}

function open(url: string, path: string, headers: Record<string, string> = auth): Promise<Streaming> {
  return new Promise((resolve, reject) => {
    const req = get(`${url}${path}`, { headers }, (res) => {
      res.setEncoding('utf8');
      let finish: () => void = () => undefined;
      const answer: Streaming = { res, text: '', ended: false, end: new Promise((r) => (finish = r)) };
      res.on('data', (chunk: string) => (answer.text += chunk));
      res.on('end', () => {
        answer.ended = true;
        finish();
      });
      res.on('error', () => undefined);
      resolve(answer);
    });
    req.on('error', reject);
  });
}

/** The whole answer of a request that ends: status, content type and text (JSON parsed when it is JSON). */
async function fetchText(url: string, path: string, headers: Record<string, string> = auth) {
  const answer = await open(url, path, headers);
  await answer.end;
  const type = String(answer.res.headers['content-type'] ?? '');
  return {
    status: answer.res.statusCode,
    type,
    text: answer.text,
    error: type.startsWith('application/json') ? (JSON.parse(answer.text) as { error: string }).error : undefined,
    chunked: answer.res.headers['transfer-encoding'] === 'chunked',
  };
}

describe('GET /containerLogs/{namespace}/{pod}/{container}', () => {
  let source: ServerManifestSource | undefined;

  afterEach(async () => {
    await source?.close();
    source = undefined;
  });

  const start = async (options: ServerManifestSourceOptions = {}) => {
    const view = new FakeView();
    source = new ServerManifestSource({ port: 0, authToken: TOKEN, ...options });
    source.mount(agentApiHandler(view));
    await source.start(new RecordingSink());
    return { view, url: source.url };
  };

  it('sends what the container printed as chunked plain text, each line as printed', async () => {
    const { view, url } = await start();
    view.output.print('stdout', 'one\n');
    view.output.print('stderr', 'two\n');
    view.output.print('stdout', 'three');
    const answer = await fetchText(url, '/containerLogs/default/web/nginx');
    expect(answer).toMatchObject({ status: 200, type: 'text/plain; charset=utf-8', text: 'one\ntwo\nthree', chunked: true });
    expect(view.logRequest).toEqual({
      namespace: 'default',
      pod: 'web',
      container: 'nginx',
      previous: false,
      follow: false,
      timestamps: false,
      signal: expect.any(AbortSignal),
    });
    expect(view.output.open).toBe(0);
  });

  it('takes the kubelet options: tailLines (and 2014 tail), sinceSeconds or sinceTime, previous, follow', async () => {
    const { view, url } = await start();
    for (const text of ['a\n', 'b\n', 'c\n']) view.output.print('stdout', text);
    expect((await fetchText(url, '/containerLogs/default/web/nginx?tailLines=2')).text).toBe('b\nc\n');
    expect((await fetchText(url, '/containerLogs/default/web/nginx?tail=1&tailLines=2')).text).toBe('c\n');
    expect((await fetchText(url, '/containerLogs/default/web/nginx?tail=all&tailLines=2')).text).toBe('a\nb\nc\n');
    const before = Date.now();
    await fetchText(url, '/containerLogs/default/web/nginx?sinceSeconds=60');
    expect(view.logRequest?.sinceMs).toBeGreaterThanOrEqual(before - 60_000);
    expect(view.logRequest?.sinceMs).toBeLessThanOrEqual(Date.now() - 60_000);
    await fetchText(url, '/containerLogs/default/web/nginx?sinceTime=2026-12-04T03:24:06.5%2B01:00&follow=false');
    expect(view.logRequest).toMatchObject({ sinceMs: Date.UTC(2026, 11, 4, 2, 24, 6, 500), follow: false });
    const previous = await fetchText(url, '/containerLogs/default/web/nginx?previous=true');
    expect(previous).toMatchObject({ status: 404, error: 'previous terminated container "nginx" in pod "default/web" not found' });
  });

  it('writes each line after its time with timestamps, and counts those bytes in limitBytes, as the kubelet does', async () => {
    const { view, url } = await start();
    const time = Date.UTC(2026, 11, 4, 3, 24, 6, 123);
    view.output.print('stdout', 'hello\n', time);
    view.output.print('stderr', 'world\n', time + 1);
    const stamped = await fetchText(url, '/containerLogs/default/web/nginx?timestamps=true');
    expect(stamped.text).toBe('2026-12-04T03:24:06.123000000Z hello\n2026-12-04T03:24:06.124000000Z world\n');
    expect(stamped.text.split('\n')[0]).toBe(`${formatLogTime({ time })} hello`);
    expect((await fetchText(url, '/containerLogs/default/web/nginx?limitBytes=8')).text).toBe('hello\nwo');
    expect((await fetchText(url, '/containerLogs/default/web/nginx?timestamps=1&limitBytes=33')).text).toBe(
      '2026-12-04T03:24:06.123000000Z he',
    );
    expect(view.logRequest?.limitBytes).toBe(33);
  });

  it.each([
    ['tailLines=-1', 'tailLines: expected a whole number of at least 0, got "-1"'],
    ['tailLines=ten', 'tailLines: expected a whole number of at least 0, got "ten"'],
    ['tail=some', 'tail: expected a whole number of at least 0, got "some"'],
    ['limitBytes=0', 'limitBytes: expected a whole number of at least 1, got "0"'],
    ['sinceSeconds=0', 'sinceSeconds: expected a whole number of at least 1, got "0"'],
    ['sinceSeconds=5&sinceTime=2026-12-04T03:24:06Z', 'give sinceSeconds or sinceTime, not both'],
    ['sinceTime=yesterday', 'sinceTime: expected an RFC 3339 time such as 2026-12-04T03:24:06Z, got "yesterday"'],
    ['follow=maybe', 'follow: expected true or false, got "maybe"'],
    ['timestamps=yes', 'timestamps: expected true or false, got "yes"'],
    ['previous=2', 'previous: expected true or false, got "2"'],
  ])('answers 400 naming the option for %s', async (query, message) => {
    const { view, url } = await start();
    expect(await fetchText(url, `/containerLogs/default/web/nginx?${query}`)).toMatchObject({ status: 400, error: message });
    expect(view.logRequest).toBeUndefined();
  });

  it('answers 404 naming the unknown pod or container, 400 for a container that waits to start, 501 without logs, 405 to POST', async () => {
    const { view, url } = await start();
    expect(await fetchText(url, '/containerLogs/kube-system/web/nginx')).toMatchObject({
      status: 404,
      error: 'pod "kube-system/web" does not exist on this node',
    });
    expect(await fetchText(url, '/containerLogs/default/web/sidecar')).toMatchObject({
      status: 404,
      error: 'container "sidecar" is not in pod "default/web"',
    });
    expect(await fetchText(url, '/containerLogs/default/web/init')).toMatchObject({
      status: 400,
      error: 'container "init" in pod "default/web" is waiting to start: ContainerCreating',
    });
    expect((await fetchText(url, '/containerLogs/default/web')).status).toBe(404);
    view.hasLogs = false;
    expect(await fetchText(url, '/containerLogs/default/web/nginx')).toMatchObject({
      status: 501,
      error: 'the fake runtime cannot read what containers print',
    });
    const post = await fetch(`${url}/containerLogs/default/web/nginx`, { method: 'POST', headers: auth });
    expect(post.status).toBe(405);
    await post.body?.cancel();
  });

  it('needs the token, as every route does', async () => {
    const { view, url } = await start();
    expect((await fetchText(url, '/containerLogs/default/web/nginx', {})).status).toBe(401);
    expect(view.logRequest).toBeUndefined();
  });

  it('follows: sends the headers at once, a line printed after the request, and ends when the container ends', async () => {
    const { view, url } = await start();
    view.output.print('stdout', 'before\n');
    const answer = await open(url, '/containerLogs/default/web/nginx?follow=true');
    expect(answer.res.statusCode).toBe(200);
    await until('the line printed before', () => answer.text === 'before\n');
    view.output.print('stderr', 'after\n');
    await until('the line printed after the request', () => answer.text === 'before\nafter\n');
    expect(answer.ended).toBe(false);
    view.output.end();
    await answer.end;
    expect(view.output.open).toBe(0);
  });

  it('cuts the connection when the runtime fails in the middle, so the client sees an incomplete answer, and logs it once', async () => {
    const logger = new RecordingLogger();
    const { url } = await start({ logger });
    const answer = await open(url, '/containerLogs/default/web/broken');
    expect(answer.res.statusCode).toBe(200);
    await new Promise((resolve) => answer.res.once('close', resolve));
    expect(answer.text).toBe('partial\n');
    expect(answer.ended).toBe(false);
    expect(answer.res.complete).toBe(false);
    expect(logger.at('error').map((e) => e.message)).toEqual(['a streamed answer failed after it began; the connection is cut']);
  });

  it('lets go of a follow when its client disconnects: no read is left open', async () => {
    const { view, url } = await start();
    const answers = await Promise.all([1, 2, 3].map(() => open(url, '/containerLogs/default/web/nginx?follow=1')));
    await until('three follows reading', () => view.output.open === 3);
    for (const a of answers) a.res.destroy();
    await until('every read let go', () => view.output.open === 0);
  });

  it('keeps a follow open past the request timeout, which bounds only the request', async () => {
    const { view, url } = await start({ requestTimeoutMs: 200 });
    const answer = await open(url, '/containerLogs/default/web/nginx?follow=true');
    await new Promise((resolve) => setTimeout(resolve, 700));
    view.output.print('stdout', 'late\n');
    await until('a line after the request timeout', () => answer.text === 'late\n');
    answer.res.destroy();
    await until('the read let go', () => view.output.open === 0);
  });

  it('writes no further than a client reads (back-pressure): a paused client stops the reading, and its leaving ends it', async () => {
    const { view, url } = await start();
    const answer = await open(url, '/containerLogs/default/web/flood');
    answer.res.pause();
    // Sockets buffer some megabytes; then the writes wait for 'drain' and nothing more is pulled.
    let last = -1;
    let still = 0;
    const deadline = Date.now() + 10_000;
    while (still < 3) {
      if (Date.now() > deadline) throw new Error(`the reading did not stop: ${view.output.pulled} bytes pulled`);
      await new Promise((resolve) => setTimeout(resolve, 50));
      still = view.output.pulled === last && last > 0 ? still + 1 : 0;
      last = view.output.pulled;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(view.output.pulled).toBe(last);
    expect(view.output.pulled).toBeLessThan(64 * 1024 * 1024);
    // Reading again pulls more.
    answer.res.resume();
    await until('more pulled once the client reads', () => view.output.pulled > last);
    answer.res.destroy();
    await until('the flood let go', () => view.output.open === 0);
  });
});
