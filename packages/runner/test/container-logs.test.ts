import { describe, expect, it } from '@jest/globals';
import { checkedManifest } from '@kubelet-ts/conformance';
import {
  KubeletError,
  Labels,
  formatLogTime,
  wrapRuntime,
  type ContainerLogRequest,
  type ContainerLogSource,
  type ContainerTextRequest,
  type LogLine,
} from '@kubelet-ts/core';
import { MemoryRuntime } from '@kubelet-ts/runtime-memory';
import { agentFixture } from './agent-fixture.js';
import { ScriptedSource, podListOf, settle } from './helpers.js';

const decoder = new TextDecoder();

async function read(lines: AsyncIterable<LogLine>): Promise<string> {
  let text = '';
  for await (const line of lines) text += decoder.decode(line.content);
  return text;
}

describe("the agent's containerLogs: which container's output, by pod and container name", () => {
  const f = agentFixture();

  const v1 = checkedManifest({ id: 'api.kube-system', namespace: 'kube-system', containers: [{ name: 'api', image: 'api:1' }] });
  const crash = checkedManifest({ id: 'crash', containers: [{ name: 'main', image: 'app:1' }] });
  const twin = checkedManifest({
    id: 'twin',
    containers: [
      { name: 'a', image: 'app:1' },
      { name: 'b', image: 'app:1' },
    ],
  });

  async function agent(options: Parameters<typeof f.kubelet>[1] = {}) {
    const k = f.kubelet([new ScriptedSource('file', { initial: [v1, crash, twin] })], options);
    await k.start();
    await settle();
    return k;
  }
  const running = (podId: string, container: string) =>
    f.of(podId).find((c) => c.state === 'running' && c.labels[Labels.containerName] === container)!;
  const logs = (k: Awaited<ReturnType<typeof agent>>, request: Omit<ContainerLogRequest, 'namespace'> & { namespace?: string }) =>
    k.containerLogs({ namespace: 'default', ...request }).then(read);
  const failure = (p: Promise<unknown>) =>
    p.then(
      () => undefined,
      (e: unknown) => e as KubeletError,
    );

  it('finds a 2014 pod in default and a v1 pod by its name in its namespace, and reads through the runtime', async () => {
    const k = await agent();
    f.runtime.print(running('api.kube-system', 'api').id, 'stdout', 'api up\n');
    f.runtime.print(running('twin', 'b').id, 'stderr', 'b up\n');
    expect(await logs(k, { namespace: 'kube-system', pod: 'api', container: 'api' })).toBe('api up\n');
    expect(await logs(k, { pod: 'twin', container: 'b' })).toBe('b up\n');
    expect(await logs(k, { pod: 'twin', container: 'a' })).toBe('');
    // The options reach the runtime.
    f.runtime.print(running('twin', 'b').id, 'stdout', 'again\n');
    expect(await logs(k, { pod: 'twin', container: 'b', tailLines: 1 })).toBe('again\n');
    expect(f.runtime.calls.filter((c) => c.op === 'logs').map((c) => c.target)).toEqual([
      running('api.kube-system', 'api').id,
      running('twin', 'b').id,
      running('twin', 'a').id,
      running('twin', 'b').id,
    ]);
  });

  it('says NotFound naming the unknown pod or container', async () => {
    const k = await agent();
    expect(await failure(logs(k, { pod: 'nope', container: 'main' }))).toMatchObject({
      code: 'NotFound',
      message: 'pod "default/nope" does not exist on this node',
    });
    // A v1 pod is not in default, and its id is not its name.
    expect(await failure(logs(k, { pod: 'api', container: 'api' }))).toMatchObject({ code: 'NotFound' });
    expect(await failure(logs(k, { namespace: 'kube-system', pod: 'api.kube-system', container: 'api' }))).toMatchObject({
      code: 'NotFound',
    });
    expect(await failure(logs(k, { pod: 'twin', container: 'c' }))).toMatchObject({
      code: 'NotFound',
      message: 'container "c" is not in pod "default/twin" (its containers: a, b)',
    });
  });

  it('reads the previous run of a restarted container, the one /pods shows as lastState', async () => {
    const k = await agent();
    const first = running('crash', 'main').id;
    expect(await failure(logs(k, { pod: 'crash', container: 'main', previous: true }))).toMatchObject({
      code: 'NotFound',
      message: 'previous terminated container "main" in pod "default/crash" not found',
    });
    f.runtime.print(first, 'stdout', 'first run\n');
    await f.clock.advance(5_000);
    f.runtime.exit(first, 1);
    await settle(); // a first crash is restarted at once: a new container, restart count 1
    const second = running('crash', 'main').id;
    expect(second).not.toBe(first);
    expect(f.runtime.snapshot().find((c) => c.id === second)?.labels[Labels.restartCount]).toBe('1');
    f.runtime.print(second, 'stdout', 'second run\n');
    expect(await logs(k, { pod: 'crash', container: 'main' })).toBe('second run\n');
    expect(await logs(k, { pod: 'crash', container: 'main', previous: true })).toBe('first run\n');
    const status = (await podListOf(k)).items.find((p) => p.metadata['name'] === 'crash')?.status['containerStatuses'] as Array<{
      lastState: { terminated: { containerID: string } };
    }>;
    expect(status[0]?.lastState.terminated.containerID).toBe(`memory://${first}`);

    // The second crashes too and waits out its back-off: both reads give the run that ended, as the kubelet's do.
    await f.clock.advance(5_000);
    f.runtime.exit(second, 2);
    await settle();
    expect(f.of('crash').some((c) => c.state === 'running')).toBe(false);
    expect(await logs(k, { pod: 'crash', container: 'main' })).toBe('second run\n');
    expect(await logs(k, { pod: 'crash', container: 'main', previous: true })).toBe('second run\n');
  });

  it('follows the current run until it ends', async () => {
    const k = await agent();
    const id = running('twin', 'a').id;
    const stream = (await k.containerLogs({ namespace: 'default', pod: 'twin', container: 'a', follow: true }))[Symbol.asyncIterator]();
    const next = stream.next();
    f.runtime.print(id, 'stdout', 'live\n');
    expect(decoder.decode(((await next).value as LogLine).content)).toBe('live\n');
    const end = stream.next();
    f.runtime.exit(id, 0);
    await expect(end).resolves.toMatchObject({ done: true });
    expect(f.runtime.openLogStreams).toBe(0);
  });

  it("gives the same read as text: the runtime's own text read when it has one, else its lines rendered", async () => {
    const k = await agent();
    const id = running('twin', 'b').id;
    const printedAt = formatLogTime({ time: f.clock.now() });
    f.runtime.print(id, 'stdout', 'one\n');
    f.runtime.print(id, 'stderr', 'two\n');
    const text = async (request: Omit<ContainerTextRequest, 'namespace'>, agentOf = k) => {
      let joined = '';
      for await (const chunk of await agentOf.containerText({ namespace: 'default', ...request })) joined += decoder.decode(chunk);
      return joined;
    };
    expect(await text({ pod: 'twin', container: 'b' })).toBe('one\ntwo\n');
    expect(await text({ pod: 'twin', container: 'b', timestamps: true, limitBytes: 40 })).toBe(
      `${printedAt} one\n${printedAt.slice(0, 5)}`,
    );
    expect(await failure(text({ pod: 'twin', container: 'c' }))).toMatchObject({ code: 'NotFound' });

    const asked: unknown[] = [];
    const memory = wrapRuntime(new MemoryRuntime({ clock: f.clock }), {});
    const own: ContainerLogSource = {
      ...memory.capabilities.logs!,
      text: async (target, options) => {
        asked.push({ target, options });
        return (async function* () {
          yield new TextEncoder().encode('from the runtime\n');
        })();
      },
    };
    const withText = f.kubelet([new ScriptedSource('file', { initial: [twin] })], {
      runtime: { ...memory, capabilities: { ...memory.capabilities, logs: own } },
    });
    await withText.start();
    await settle();
    expect(await text({ pod: 'twin', container: 'a', tailLines: 3, timestamps: true }, withText)).toBe('from the runtime\n');
    expect(asked).toEqual([{ target: expect.any(String), options: { tailLines: 3, timestamps: true } }]);
  });

  it('says Conflict for a container that has not run yet, and Unsupported on a runtime without logs', async () => {
    f.runtime = new MemoryRuntime({ clock: f.clock, pullable: [] });
    const waiting = await agent();
    // Its image cannot be pulled: no container is ever made.
    expect(await failure(logs(waiting, { pod: 'twin', container: 'a' }))).toMatchObject({
      code: 'Conflict',
      // The pull has just failed: ErrImagePull, as the kubelet says it until its next sync.
      message: 'container "a" in pod "default/twin" is waiting to start: ErrImagePull',
    });
    const memory = wrapRuntime(new MemoryRuntime({ clock: f.clock }), {});
    const { logs: _dropped, ...capabilities } = memory.capabilities;
    const k = f.kubelet([new ScriptedSource('file', { initial: [twin] })], { runtime: { ...memory, capabilities } });
    await k.start();
    await settle();
    const error = await failure(k.containerLogs({ namespace: 'default', pod: 'twin', container: 'a' }));
    expect(error).toBeInstanceOf(KubeletError);
    expect(error).toMatchObject({ code: 'Unsupported', message: 'the memory runtime cannot read what containers print' });
  });
});
