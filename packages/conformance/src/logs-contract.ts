import {
  KubeletError,
  Labels,
  buildContainerName,
  logText,
  readLogText,
  type ContainerLogSource,
  type ContainerRuntime,
  type ContainerSpec,
  type LogLine,
  type LogReadOptions,
  type LogStream,
  type LogTextOptions,
} from '@kubelet-ts/core';
import type { TestApi } from './test-api.js';

/**
 * Declared by runtimes that read what containers print (`capabilities.logs`): how the contract
 * makes a container print. The contract runs its containers with the contract's `command` (one that
 * runs until stopped) and has them print through this hook, at the moments it chooses.
 */
export interface LogsCapability {
  /**
   * Makes the running contract container `containerId` print `text` on `stream`, as its own process
   * would; the contract then waits (up to 10 s) until a read shows it. Default, for runtimes that run
   * real processes (Docker, Podman, containerd): exec busybox's `sh -c 'printf %s "$1" >/proc/1/fd/N'`
   * in it, which writes to the main process's own stdout (N = 1) or stderr (N = 2) — the pipes the
   * engine reads — so the text goes exactly where the container's own output goes.
   */
  readonly print?: (runtime: ContainerRuntime, containerId: string, stream: LogStream, text: string) => Promise<void>;
}

interface LogsContractOptions {
  readonly name: string;
  readonly image: string;
  readonly command: readonly string[];
  readonly logs?: LogsCapability;
  readonly testApi: TestApi;
}

/** How long an engine may take to have a printed line in its log. */
const LOG_WAIT_MS = 10_000;
/** How far a line's time may be from the moments around its print: an engine stamps it with its own clock. */
const CLOCK_SLACK_MS = 1_000;

const decoder = new TextDecoder();
const textOf = (lines: readonly LogLine[]) => lines.map((l) => decoder.decode(l.content));

/** Every line a read without `follow` gives. */
async function readAll(source: ContainerLogSource, id: string, options: LogReadOptions = {}): Promise<LogLine[]> {
  const lines: LogLine[] = [];
  for await (const line of await source.logs(id, options)) lines.push(line);
  return lines;
}

async function joined(chunks: AsyncIterable<Uint8Array>): Promise<string> {
  let text = '';
  for await (const chunk of chunks) text += decoder.decode(chunk, { stream: true });
  return text + decoder.decode();
}

const defaultPrint = async (runtime: ContainerRuntime, id: string, stream: LogStream, text: string): Promise<void> => {
  const fd = stream === 'stdout' ? 1 : 2;
  const result = await runtime.exec(id, ['sh', '-c', `printf %s "$1" >/proc/1/fd/${fd}`, 'sh', text], 5_000);
  if (result.exitCode !== 0) throw new Error(`could not print in ${id} (exit ${result.exitCode}): ${result.output}`);
};

/**
 * The log half of `runtimeContract`, for runtimes that declare `logs`; otherwise each check is
 * skipped by name. `create` makes a container in the contract's sandbox and removes it after the test.
 */
export function logsContract(
  runtime: () => ContainerRuntime,
  create: (spec: ContainerSpec) => Promise<{ readonly id: string }>,
  options: LogsContractOptions,
): void {
  const { describe, expect, it } = options.testApi;
  describe('logs', () => {
    /**
     * The text of a read (`readLogText`: the runtime's own `text` when it declares one) for each of
     * `reads`, checked against the text of its lines (`logText`): a runtime's block read gives exactly
     * what its line read gives. Returns the texts.
     */
    const sameText = async (source: ContainerLogSource, id: string, reads: readonly LogTextOptions[]): Promise<string[]> => {
      const texts: string[] = [];
      for (const options of reads) {
        const { timestamps: _timestamps, ...lines } = options;
        const text = await joined(await readLogText(source, id, options));
        expect({ options, text }).toEqual({ options, text: await joined(logText(await source.logs(id, lines), options)) });
        texts.push(text);
      }
      return texts;
    };

    const capability = options.logs;
    const print = capability?.print ?? defaultPrint;

    /** A running container that has printed nothing yet, and what the test can do with it. */
    const printer = async (r: ContainerRuntime, source: ContainerLogSource, restartCount = 0) => {
      const podId = `logs-${process.pid}`;
      const { id } = await create({
        name: `${buildContainerName(podId, 'main')}-${Date.now().toString(36)}`,
        podId,
        image: options.image,
        command: options.command,
        env: {},
        ports: [],
        mounts: [],
        labels: {
          [Labels.manifestId]: podId,
          [Labels.containerName]: 'main',
          [Labels.specHash]: 'v1-logs',
          [Labels.source]: 'contract',
          [Labels.node]: 'contract-node',
          [Labels.restartCount]: String(restartCount),
        },
      });
      await r.start(id);
      let printed = 0;
      /** Prints one line and waits until a read shows it (an engine copies output asynchronously). */
      const say = async (stream: LogStream, text: string): Promise<void> => {
        await print(r, id, stream, text);
        printed += 1;
        const deadline = performance.now() + LOG_WAIT_MS;
        for (;;) {
          const lines = await readAll(source, id);
          if (lines.length >= printed && decoder.decode(lines[lines.length - 1]!.content) === text) return;
          if (performance.now() > deadline)
            throw new Error(`${JSON.stringify(text)} not in the log after ${LOG_WAIT_MS} ms: ${textOf(lines)}`);
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      };
      return { id, say };
    };

    const withLogs = (title: string, body: (r: ContainerRuntime, source: ContainerLogSource) => Promise<void>) =>
      capability === undefined
        ? undefined // not declared: the check above holds the runtime to that, and these are left out
        : it(title, async () => {
            const r = runtime();
            const source = r.capabilities.logs;
            if (source === undefined) throw new Error(`${options.name} is said to read logs, but declares no capabilities.logs`);
            await body(r, source);
          }, 60_000);

    it('declares the logs capability exactly when it reads output, with a logs(id, options) method', () => {
      const declared = runtime().capabilities.logs;
      expect(declared !== undefined).toBe(capability !== undefined);
      if (declared !== undefined) expect(typeof declared.logs).toBe('function');
      // `text` is optional; declared, it is a method.
      if (declared?.text !== undefined) expect(typeof declared.text).toBe('function');
    });

    withLogs('reads what a container printed in order, each line with its stream and the time it was printed', async (r, source) => {
      const c = await printer(r, source);
      const before = Date.now();
      await c.say('stdout', 'one\n');
      await c.say('stderr', 'two\n');
      await c.say('stdout', 'three\n');
      const after = Date.now();
      const lines = await readAll(source, c.id);
      expect(textOf(lines)).toEqual(['one\n', 'two\n', 'three\n']);
      expect(lines.map((l) => l.stream)).toEqual(['stdout', 'stderr', 'stdout']);
      for (const [i, line] of lines.entries()) {
        expect(before - CLOCK_SLACK_MS <= line.time && line.time <= after + CLOCK_SLACK_MS).toBe(true);
        if (i > 0) expect(lines[i - 1]!.time <= line.time).toBe(true);
        if (line.nanos !== undefined) expect(Number.isInteger(line.nanos) && line.nanos >= 0 && line.nanos < 1_000_000).toBe(true);
      }
      // As text (the runtime's block read, when it has one): the same output, every way it is shown.
      const [plain, stamped] = await sameText(source, c.id, [
        {},
        { timestamps: true },
        { tailLines: 2, timestamps: true },
        { limitBytes: 5 },
        { timestamps: true, limitBytes: 33 },
      ]);
      expect(plain).toBe('one\ntwo\nthree\n');
      expect(stamped!.split('\n').map((l) => l.slice(l.indexOf(' ') + 1))).toEqual(['one', 'two', 'three', '']);
    });

    withLogs('gives the last tailLines lines (0: none of them)', async (r, source) => {
      const c = await printer(r, source);
      for (const text of ['one\n', 'two\n', 'three\n']) await c.say('stdout', text);
      expect(textOf(await readAll(source, c.id, { tailLines: 2 }))).toEqual(['two\n', 'three\n']);
      expect(textOf(await readAll(source, c.id, { tailLines: 1 }))).toEqual(['three\n']);
      expect(await readAll(source, c.id, { tailLines: 0 })).toEqual([]);
      expect(textOf(await readAll(source, c.id, { tailLines: 10 }))).toEqual(['one\n', 'two\n', 'three\n']);
    });

    withLogs('gives the lines printed at or after sinceMs', async (r, source) => {
      const c = await printer(r, source);
      await c.say('stdout', 'old\n');
      // Over a second apart: an engine may stamp lines to the second only (Podman's compatible API).
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      await c.say('stdout', 'new\n');
      const [old, recent] = await readAll(source, c.id);
      expect(old!.time < recent!.time).toBe(true);
      expect(textOf(await readAll(source, c.id, { sinceMs: recent!.time }))).toEqual(['new\n']);
      expect(textOf(await readAll(source, c.id, { sinceMs: old!.time }))).toEqual(['old\n', 'new\n']);
      expect(await readAll(source, c.id, { sinceMs: recent!.time + 1 })).toEqual([]);
      // Together: the lines both allow.
      expect(textOf(await readAll(source, c.id, { tailLines: 1, sinceMs: old!.time }))).toEqual(['new\n']);
      expect(await sameText(source, c.id, [{ sinceMs: recent!.time }, { sinceMs: old!.time, timestamps: true }])).toHaveLength(2);
      expect((await sameText(source, c.id, [{ sinceMs: recent!.time }]))[0]).toBe('new\n');
    });

    withLogs('stops at limitBytes, cutting the line that reaches it', async (r, source) => {
      const c = await printer(r, source);
      await c.say('stdout', 'abcdef\n');
      await c.say('stderr', '123\n');
      const joined = async (limitBytes: number) => textOf(await readAll(source, c.id, { limitBytes })).join('');
      expect(await joined(4)).toBe('abcd');
      expect(await joined(7)).toBe('abcdef\n');
      expect(await joined(10)).toBe('abcdef\n123');
      expect(await joined(1_000)).toBe('abcdef\n123\n');
      expect(await sameText(source, c.id, [{ limitBytes: 4 }, { limitBytes: 10 }, { limitBytes: 1_000 }])).toEqual([
        'abcd',
        'abcdef\n123',
        'abcdef\n123\n',
      ]);
    });

    withLogs('follows: sees a line printed after the call, and ends when the container ends', async (r, source) => {
      const c = await printer(r, source);
      await c.say('stdout', 'before\n');
      const abort = new AbortController();
      const seen: LogLine[] = [];
      let ended = false;
      const reading = (async () => {
        for await (const line of await source.logs(c.id, { follow: true, signal: abort.signal })) seen.push(line);
        ended = true;
      })();
      // The same follow as text, beside it.
      let followedText = '';
      let textEnded = false;
      const readingText = (async () => {
        for await (const chunk of await readLogText(source, c.id, { follow: true, signal: abort.signal }))
          followedText += decoder.decode(chunk);
        textEnded = true;
      })();
      try {
        const until = async (what: string, done: () => boolean) => {
          const deadline = performance.now() + LOG_WAIT_MS;
          while (!done()) {
            if (performance.now() > deadline) throw new Error(`no ${what} within ${LOG_WAIT_MS} ms; saw ${textOf(seen)}`);
            await new Promise((resolve) => setTimeout(resolve, 10));
          }
        };
        await until('first line', () => seen.length === 1);
        await print(r, c.id, 'stderr', 'after\n');
        await until('line printed after the call', () => seen.length === 2);
        await until('line printed after the call, as text', () => followedText === 'before\nafter\n');
        expect(textOf(seen)).toEqual(['before\n', 'after\n']);
        expect(seen[1]!.stream).toBe('stderr');
        expect(ended).toBe(false);
        expect(textEnded).toBe(false);
        await r.stop(c.id, 1);
        await until('end of the stream after the container ended', () => ended);
        await until('end of the text after the container ended', () => textEnded);
        await reading;
        await readingText;
        expect(followedText).toBe('before\nafter\n');
        // An ended container's output stays, and a follow of it gives its lines and ends.
        expect(textOf(await readAll(source, c.id, { follow: true }))).toEqual(['before\n', 'after\n']);
      } finally {
        abort.abort();
        await reading.catch(() => undefined);
        await readingText.catch(() => undefined);
      }
    });

    withLogs('returns promptly when the signal aborts, while a follow waits for a line', async (r, source) => {
      const c = await printer(r, source);
      const abort = new AbortController();
      const lines = (await source.logs(c.id, { follow: true, tailLines: 0, signal: abort.signal }))[Symbol.asyncIterator]();
      const pending = lines.next();
      setTimeout(() => abort.abort(), 50);
      const startedAt = performance.now();
      await expect(pending).resolves.toMatchObject({ done: true });
      expect(performance.now() - startedAt).toBeLessThan(2_000);
      const text = new AbortController();
      const chunks = (await readLogText(source, c.id, { follow: true, tailLines: 0, signal: text.signal }))[Symbol.asyncIterator]();
      const waiting = chunks.next();
      setTimeout(() => text.abort(), 50);
      await expect(waiting).resolves.toMatchObject({ done: true });
      // An aborted signal: a new read ends at once.
      await expect((await source.logs(c.id, { follow: true, signal: abort.signal }))[Symbol.asyncIterator]().next()).resolves.toMatchObject(
        {
          done: true,
        },
      );
    });

    withLogs("keeps a run's output apart from the next run of the same container (a restart: what `previous` reads)", async (r, source) => {
      const first = await printer(r, source);
      await first.say('stdout', 'first run\n');
      await r.stop(first.id, 1);
      const second = await printer(r, source, 1);
      await second.say('stdout', 'second run\n');
      expect(textOf(await readAll(source, first.id))).toEqual(['first run\n']);
      expect(textOf(await readAll(source, second.id))).toEqual(['second run\n']);
      expect(textOf(await readAll(source, first.id, { follow: true }))).toEqual(['first run\n']);
    });

    withLogs('answers NotFound for an unknown container', async (_r, source) => {
      const error = await source.logs('f'.repeat(64)).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(KubeletError);
      expect((error as KubeletError).code).toBe('NotFound');
      const textError = await readLogText(source, 'f'.repeat(64)).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(textError).toMatchObject({ code: 'NotFound' });
    });
  });
}
