import { describe, expect, it } from '@jest/globals';
import { KubeletError, type LogLine, type LogReadOptions } from '@kubelet-ts/core';
import { ManualClock } from '@kubelet-ts/conformance';
import { MemoryRuntime } from '../src/index.js';
import { podSandbox, spec } from './spec-fixture.js';

const decoder = new TextDecoder();

async function printer(clock = new ManualClock(1_000)) {
  const runtime = new MemoryRuntime({ clock, images: ['app:1'] });
  const sandbox = await podSandbox(runtime);
  const { id } = await runtime.create(spec('a'), sandbox);
  await runtime.start(id);
  return { runtime, id, clock, sandbox };
}

async function read(runtime: MemoryRuntime, id: string, options: LogReadOptions = {}): Promise<LogLine[]> {
  const lines: LogLine[] = [];
  for await (const line of await runtime.logs(id, options)) lines.push(line);
  return lines;
}

const texts = (lines: readonly LogLine[]) => lines.map((l) => decoder.decode(l.content));

describe('MemoryRuntime output', () => {
  it('cuts what a container prints into lines, each with its stream and the clock time; an unended text is part of a line', async () => {
    const { runtime, id, clock } = await printer();
    runtime.print(id, 'stdout', 'one\ntwo\nthr');
    await clock.advance(5);
    runtime.print(id, 'stderr', new TextEncoder().encode('ee\n'));
    const lines = await read(runtime, id);
    expect(texts(lines)).toEqual(['one\n', 'two\n', 'thr', 'ee\n']);
    expect(lines.map((l) => [l.stream, l.time])).toEqual([
      ['stdout', 1_000],
      ['stdout', 1_000],
      ['stdout', 1_000],
      ['stderr', 1_005],
    ]);
    // Joined, the lines are the output, byte for byte.
    expect(texts(lines).join('')).toBe('one\ntwo\nthree\n');
  });

  it('lets only a running container print, and only a known one', async () => {
    const { runtime, id, sandbox } = await printer();
    const created = await runtime.create(spec('b'), sandbox);
    expect(() => runtime.print(created.id, 'stdout', 'x\n')).toThrow(KubeletError);
    runtime.exit(id, 0);
    expect(() => runtime.print(id, 'stdout', 'x\n')).toThrow(/only a running container prints/);
    expect(() => runtime.print('nope', 'stdout', 'x\n')).toThrow(/no such container/);
  });

  it('logs the call, answers NotFound for an unknown or removed container, and honours injected faults', async () => {
    const { runtime, id } = await printer();
    runtime.print(id, 'stdout', 'x\n');
    await read(runtime, id);
    expect(runtime.calls.at(-1)).toMatchObject({ op: 'logs', target: id });
    await expect(runtime.logs('nope')).rejects.toMatchObject({ code: 'NotFound' });
    runtime.failNext('logs', 'Unavailable');
    await expect(runtime.logs(id)).rejects.toMatchObject({ code: 'Unavailable' });
    await runtime.remove(id, { force: true });
    await expect(runtime.logs(id)).rejects.toMatchObject({ code: 'NotFound' });
  });

  it('holds nothing until the first next(), and lets go when the reader stops or the signal aborts', async () => {
    const { runtime, id } = await printer();
    for (let i = 0; i < 100; i++) runtime.print(id, 'stdout', `${i}\n`);
    const never = await runtime.logs(id, { follow: true });
    expect(never).toBeDefined();
    expect(runtime.openLogStreams).toBe(0);
    // A reader that takes one line and breaks out.
    for await (const line of await runtime.logs(id, { follow: true })) {
      expect(decoder.decode(line.content)).toBe('0\n');
      expect(runtime.openLogStreams).toBe(1);
      break;
    }
    expect(runtime.openLogStreams).toBe(0);
    // A follower waiting for a line, aborted.
    const abort = new AbortController();
    const it = (await runtime.logs(id, { follow: true, tailLines: 0, signal: abort.signal }))[Symbol.asyncIterator]();
    const pending = it.next();
    await new Promise((resolve) => setImmediate(resolve));
    expect(runtime.openLogStreams).toBe(1);
    abort.abort();
    await expect(pending).resolves.toEqual({ done: true, value: undefined });
    expect(runtime.openLogStreams).toBe(0);
  });

  it('follows from the tail: only new lines with tailLines 0, until the container exits', async () => {
    const { runtime, id } = await printer();
    runtime.print(id, 'stdout', 'old\n');
    const it = (await runtime.logs(id, { follow: true, tailLines: 0 }))[Symbol.asyncIterator]();
    const first = it.next();
    runtime.print(id, 'stderr', 'new\n');
    expect(decoder.decode(((await first).value as LogLine).content)).toBe('new\n');
    const second = it.next();
    runtime.exit(id, 1);
    await expect(second).resolves.toEqual({ done: true, value: undefined });
  });

  it('ends a follow when its container is removed, its sandbox with it', async () => {
    const { runtime, id, sandbox } = await printer();
    const it = (await runtime.logs(id, { follow: true }))[Symbol.asyncIterator]();
    const pending = it.next();
    await runtime.removeSandbox(sandbox);
    await expect(pending).resolves.toEqual({ done: true, value: undefined });
    expect(runtime.openLogStreams).toBe(0);
  });

  it('without follow, ends at what was printed by the first next(); a limit ends a follow too', async () => {
    const { runtime, id } = await printer();
    runtime.print(id, 'stdout', 'a\nb\n');
    const it = (await runtime.logs(id))[Symbol.asyncIterator]();
    expect(decoder.decode(((await it.next()).value as LogLine).content)).toBe('a\n');
    runtime.print(id, 'stdout', 'c\n');
    expect(decoder.decode(((await it.next()).value as LogLine).content)).toBe('b\n');
    expect((await it.next()).done).toBe(true);
    // A follow that reaches its limit ends though the container runs on.
    expect(texts(await read(runtime, id, { follow: true, limitBytes: 3 }))).toEqual(['a\n', 'b']);
  });
});
