import { afterEach, describe, expect, it } from '@jest/globals';
import { RecordingSink } from '@kubelet-ts/conformance';
import { ServerManifestSource, type ServerManifestSourceOptions } from '../src/index.js';

const manifest = (id: string, command: readonly string[] = []) => ({ id, containers: [{ name: 'main', image: 'app:1', command }] });

/**
 * Issue 17 item 2: eleven POSTs of one large manifest each killed the agent. Each body is bounded
 * on its own; what the server holds from all of them is bounded too.
 */
describe('ServerManifestSource: what the posted manifests may add up to', () => {
  let source: ServerManifestSource | undefined;

  afterEach(async () => {
    await source?.close();
    source = undefined;
  });

  const start = async (options: ServerManifestSourceOptions) => {
    const sink = new RecordingSink();
    source = new ServerManifestSource({ port: 0, ...options });
    await source.start(sink);
    const url = source.url;
    const post = async (path: string, body: unknown) => {
      const res = await fetch(`${url}${path}`, {
        method: 'POST',
        body: JSON.stringify(body),
        headers: { 'content-type': 'application/json' },
      });
      return { status: res.status, json: (await res.json()) as { error?: string } };
    };
    return { sink, post };
  };

  it('answers 413 naming the limit to a POST that would hold more than maxManifests, and keeps the set', async () => {
    const { sink, post } = await start({ limits: { maxManifests: 2 } });
    expect((await post('/container', manifest('a'))).status).toBe(201);
    expect((await post('/container', manifest('b'))).status).toBe(201);
    const over = await post('/container', manifest('c'));
    expect(over).toEqual({
      status: 413,
      json: {
        error:
          'the server would hold 3 manifests, more than the 2 one source may hold (limits.maxManifests); delete some first (DELETE /container/<id>)',
      },
    });
    expect(sink.ids).toEqual(['a', 'b']);
    // Replacing one it holds is no growth.
    expect((await post('/container', manifest('b', ['true']))).status).toBe(200);
    // A list over the limit is refused as a body that holds too many.
    const list = await post('/containers', [manifest('x'), manifest('y'), manifest('z')]);
    expect(list).toEqual({
      status: 400,
      json: { error: 'request body: holds 3 manifests, more than the 2 one source may hold; run fewer pods from it' },
    });
    expect(sink.ids).toEqual(['a', 'b']);
  });

  it('answers 413 to a POST that would put the manifests over maxManifestBytes, one POST or a list', async () => {
    const { sink, post } = await start({ limits: { maxManifestBytes: 10_000 } });
    const big = (id: string) => manifest(id, ['x'.repeat(4000)]);
    expect((await post('/container', big('a'))).status).toBe(201);
    expect((await post('/container', big('b'))).status).toBe(201);
    const over = await post('/container', big('c'));
    expect(over.status).toBe(413);
    expect(over.json.error).toMatch(
      /^the server would hold 12\d\d\d bytes of manifests as JSON, more than the 10000 one source may hold \(limits\.maxManifestBytes\)/,
    );
    expect((await post('/containers', [big('x'), big('y'), big('z')])).status).toBe(413);
    expect(sink.ids).toEqual(['a', 'b']);
    expect((await post('/containers', [big('x')])).status).toBe(200);
    expect(sink.ids).toEqual(['x']);
  });

  it('holds 1,000 manifests by default, and refuses the next', async () => {
    const { sink, post } = await start({});
    const all = Array.from({ length: 1000 }, (_, i) => manifest(`m${i}`));
    expect((await post('/containers', all)).status).toBe(200);
    expect((await post('/container', manifest('one-more'))).status).toBe(413);
    expect(sink.updates.at(-1)).toHaveLength(1000);
  });
});
