import type { Duplex, Readable } from 'node:stream';
import {
  KubeletError,
  Labels,
  buildContainerName,
  type ContainerRuntime,
  type ContainerSpec,
  type ContainerStreaming,
  type LogStream,
  type StreamOptions,
  type StreamSession,
} from '@kubelet-ts/core';
import type { TestApi } from './test-api.js';

/** Declared by runtimes that stream into containers (`capabilities.streaming`). */
export interface StreamingCapability {
  /**
   * Makes a running container's main process print `text` (what an attached session sees). Default:
   * exec `sh -c 'printf %s "$1" >/proc/1/fd/N'` in it, as the logs contract does.
   */
  readonly print?: (runtime: ContainerRuntime, containerId: string, stream: LogStream, text: string) => Promise<void>;
  /**
   * When `stdin.end()` reaches the process: `'always'` (default), or `'tty-only'` for a runtime
   * whose protocol cannot half-close stdin (containerd 1.6's streaming server has no
   * `v5.channel.k8s.io`): there `end()` on a terminal is end-of-file as typed (^D), and without a
   * terminal the process keeps its stdin until it exits or the session is closed.
   */
  readonly stdinEndOfFile?: 'always' | 'tty-only';
}

interface StreamingContractOptions {
  readonly name: string;
  readonly image: string;
  readonly command: readonly string[];
  readonly realExec?: boolean;
  readonly streaming?: StreamingCapability;
  readonly testApi: TestApi;
}

/** The port the contract's echo server listens on inside the pod, and one nothing listens on. */
const ECHO_PORT = 8080;
const CLOSED_PORT = 8081;
/** busybox's persistent echo server: a `cat` for each connection. */
const ECHO_SERVER = ['nc', '-ll', '-p', String(ECHO_PORT), '-e', 'cat'];
const WAIT_MS = 10_000;
/** How often, and how many times, the resize check asks the process for its terminal's size. */
const RESIZE_RETRY_MS = 100;
const RESIZE_TRIES = 50;

const NONE: StreamOptions = { stdin: false, stdout: true, stderr: true, tty: false };

/** All a stream gives until it ends, as text. */
async function text(stream: Readable | undefined): Promise<string> {
  if (stream === undefined) return '';
  let out = '';
  for await (const chunk of stream) out += String(chunk);
  return out;
}

/** Reads `stream` until what it gave contains `wanted` (or WAIT_MS passes); what it gave. */
function readUntil(stream: Readable | Duplex, wanted: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(
      () => done(new Error(`no ${JSON.stringify(wanted)} within ${WAIT_MS} ms; saw ${JSON.stringify(seen)}`)),
      WAIT_MS,
    );
    const onData = (chunk: Buffer | string) => {
      seen += String(chunk);
      if (seen.includes(wanted)) done();
    };
    const onEnd = () => done(new Error(`the stream ended before ${JSON.stringify(wanted)}; saw ${JSON.stringify(seen)}`));
    const done = (error?: Error) => {
      clearTimeout(timer);
      stream.off('data', onData).off('end', onEnd).off('error', onEnd);
      stream.pause();
      if (error === undefined) resolve(seen);
      else reject(error);
    };
    stream.on('data', onData).on('end', onEnd).on('error', onEnd);
  });
}

const defaultPrint = async (runtime: ContainerRuntime, id: string, stream: LogStream, out: string): Promise<void> => {
  const result = await runtime.exec(id, ['sh', '-c', `printf %s "$1" >/proc/1/fd/${stream === 'stdout' ? 1 : 2}`, 'sh', out], 5_000);
  if (result.exitCode !== 0) throw new Error(`could not print in ${id} (exit ${result.exitCode}): ${result.output}`);
};

/**
 * The streaming half of `runtimeContract`, for runtimes that declare `streaming`; for the others
 * its checks are left out. `create` makes a container in the contract's sandbox (`sandboxId`) and
 * removes it after the test.
 */
export function streamingContract(
  runtime: () => ContainerRuntime,
  create: (spec: ContainerSpec) => Promise<{ readonly id: string }>,
  sandboxId: () => string,
  options: StreamingContractOptions,
): void {
  const { describe, expect, it } = options.testApi;
  describe('streaming: exec, attach, port-forward', () => {
    const capability = options.streaming;
    const print = capability?.print ?? defaultPrint;

    const running = async (
      r: ContainerRuntime,
      command = options.command,
      ports: readonly number[] = [],
      fields: Partial<ContainerSpec> = {},
    ) => {
      const podId = `streams-${process.pid}`;
      const { id } = await create({
        name: `${buildContainerName(podId, 'main')}-${Date.now().toString(36)}`,
        podId,
        image: options.image,
        command,
        env: {},
        ports: ports.map((containerPort) => ({ containerPort, protocol: 'TCP' as const })),
        mounts: [],
        labels: {
          [Labels.manifestId]: podId,
          [Labels.containerName]: 'main',
          [Labels.specHash]: 'v1-streams',
          [Labels.source]: 'contract',
          [Labels.node]: 'contract-node',
        },
        ...fields,
      });
      await r.start(id);
      return id;
    };
    /** A session's output and end, read to the end. */
    const outcome = async (session: StreamSession) => {
      const [stdout, stderr, end] = await Promise.all([text(session.stdout), text(session.stderr), session.done]);
      return { stdout, stderr, exitCode: end.exitCode, message: end.message };
    };
    const failure = (call: Promise<unknown>) =>
      call.then(
        () => undefined,
        (e: unknown) => (e instanceof KubeletError ? e.code : String(e)),
      );

    const withStreaming = (title: string, body: (r: ContainerRuntime, streams: ContainerStreaming) => Promise<void>) =>
      capability === undefined
        ? undefined // not declared: the check above holds the runtime to that, and these are left out
        : it(title, async () => {
            const r = runtime();
            const streams = r.capabilities.streaming;
            if (streams === undefined) throw new Error(`${options.name} is said to stream, but declares no capabilities.streaming`);
            await body(r, streams);
          }, 60_000);

    it('declares the streaming capability exactly when it streams, with exec, attach and portForward', () => {
      const declared = runtime().capabilities.streaming;
      expect(declared !== undefined).toBe(capability !== undefined);
      if (declared !== undefined)
        expect([typeof declared.exec, typeof declared.attach, typeof declared.portForward]).toEqual(['function', 'function', 'function']);
    });

    withStreaming('exec: passes the exit code on, and keeps stdout and stderr apart', async (r, streams) => {
      const id = await running(r);
      expect(await outcome(await streams.exec(id, ['true'], NONE))).toMatchObject({ stdout: '', stderr: '', exitCode: 0 });
      expect(await outcome(await streams.exec(id, ['sh', '-c', 'exit 3'], NONE))).toMatchObject({ exitCode: 3 });
      expect(await outcome(await streams.exec(id, ['sh', '-c', 'echo out; echo err >&2'], NONE))).toMatchObject({
        stdout: 'out\n',
        stderr: 'err\n',
        exitCode: 0,
      });
    });

    withStreaming('exec: what is written to stdin reaches the process, and closing it is end-of-file', async (r, streams) => {
      const id = await running(r);
      // A runtime that can end stdin only as a terminal does: the same check, on a terminal.
      const tty = capability?.stdinEndOfFile === 'tty-only';
      const session = await streams.exec(id, ['cat'], { ...NONE, stdin: true, stderr: !tty, tty });
      const stdout = readUntil(session.stdout!, 'hello');
      session.stdin!.write('hello\n');
      // A terminal echoes what is typed and ends lines with \r\n.
      expect((await stdout).replace(/\r/g, '')).toContain('hello');
      session.stdout!.resume();
      session.stdin!.end();
      expect(await session.done).toMatchObject({ exitCode: 0 });
    });

    withStreaming('exec with a terminal: a resize reaches the process (stty size)', async (r, streams) => {
      const id = await running(r);
      // A shell at a terminal: each `stty size` typed prints the terminal's size.
      const session = await streams.exec(id, ['sh'], {
        stdin: true,
        stdout: true,
        stderr: false,
        tty: true,
        size: { width: 80, height: 24 },
      });
      expect(session.stderr).toBeUndefined();
      await session.resize({ width: 100, height: 40 });
      // The protocol has no answer for a resize, and a runtime may set it apart from stdin
      // (containerd's streaming server does so on another goroutine, a moment after it reads
      // it): so the shell is asked every RESIZE_RETRY_MS until it sees the new size.
      const seen = readUntil(session.stdout!, '40 100');
      let typed = 0;
      const type = () => typed++ < RESIZE_TRIES && session.stdin!.write('stty size\n');
      type();
      const typing = setInterval(type, RESIZE_RETRY_MS);
      try {
        expect(await seen).toContain('40 100');
      } finally {
        clearInterval(typing);
      }
      session.stdout!.resume();
      session.stdin!.write('exit\n');
      expect(await session.done).toMatchObject({ exitCode: 0 });
    });

    withStreaming('exec: a command that does not exist ends with 126 or 127 and a message naming it', async (r, streams) => {
      const id = await running(r);
      const end = await outcome(await streams.exec(id, ['/no/such/command'], NONE));
      expect([126, 127]).toContain(end.exitCode);
      expect(`${end.message ?? ''} ${end.stdout} ${end.stderr}`).toContain('/no/such/command');
    });

    withStreaming('exec and attach: NotFound for an unknown container, Conflict for one that is not running', async (r, streams) => {
      const unknown = 'f'.repeat(64);
      expect(await failure(streams.exec(unknown, ['true'], NONE))).toBe('NotFound');
      expect(await failure(streams.attach(unknown, NONE))).toBe('NotFound');
      const id = await running(r);
      await r.stop(id, 1);
      expect(await failure(streams.exec(id, ['true'], NONE))).toBe('Conflict');
      expect(await failure(streams.attach(id, NONE))).toBe('Conflict');
    });

    withStreaming('attach: sees what the main process prints, and ends with its exit code when it ends', async (r, streams) => {
      const id = await running(r);
      const session = await streams.attach(id, NONE);
      const seen = readUntil(session.stdout!, 'attached\n');
      await print(r, id, 'stdout', 'attached\n');
      expect(await seen).toBe('attached\n');
      session.stdout!.resume();
      session.stderr?.resume();
      await r.stop(id, 1);
      const end = await session.done;
      expect(typeof end.exitCode).toBe('number');
    });

    withStreaming(
      'attach: writes to the stdin of a container made with stdin (v1 stdin), which its main process reads',
      async (r, streams) => {
        // A process's own behaviour: a runtime that runs none (the in-memory one) has nothing to show.
        if (options.realExec === false) return;
        const id = await running(r, ['sh', '-c', 'read line; echo "got $line"; exec sleep 3600'], [], { stdin: true });
        const session = await streams.attach(id, { ...NONE, stdin: true });
        try {
          const seen = readUntil(session.stdout!, 'got hello\n');
          session.stdin!.write('hello\n');
          expect(await seen).toBe('got hello\n');
        } finally {
          session.close();
          await session.done;
        }
      },
    );

    withStreaming('close() ends a session at once, while its process still runs', async (r, streams) => {
      const id = await running(r);
      const session = await streams.exec(id, ['cat'], { ...NONE, stdin: true });
      const startedAt = performance.now();
      session.close();
      await session.done;
      expect(performance.now() - startedAt).toBeLessThan(2_000);
      session.close(); // again: nothing happens
    });

    withStreaming('close() of an exec session ends its process too: a caller that left leaves nothing running', async (r, streams) => {
      // A process's own behaviour: a runtime that runs none (the in-memory one) has nothing to show.
      if (options.realExec === false) return;
      const id = await running(r);
      // Neither reads its stdin nor writes after its first line: only the session's end can end it
      // (what the attack left behind was `cat /dev/zero`). Two sessions started at once, each its own.
      const sessions = await Promise.all([1, 2].map(() => streams.exec(id, ['sh', '-c', 'echo "pid $$"; exec sleep 3600'], NONE)));
      const pids = await Promise.all(sessions.map(async (s) => /pid (\d+)/.exec(await readUntil(s.stdout!, '\n'))![1]!));
      for (const s of sessions) s.close();
      await Promise.all(sessions.map((s) => s.done));
      const alive = async () =>
        (await r.exec(id, ['sh', '-c', pids.map((pid) => `[ -e /proc/${pid} ] && echo alive || echo gone`).join('; ')], 5_000)).output
          .trim()
          .split('\n');
      const deadline = performance.now() + WAIT_MS;
      while ((await alive()).includes('alive') && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
      expect(await alive()).toEqual(['gone', 'gone']);
    });

    withStreaming('port-forward: a connection to a port inside the pod, two at once, each its own', async (r, streams) => {
      await running(r, ECHO_SERVER, [ECHO_PORT]);
      // The server needs a moment to listen: connect until it does.
      const connect = async (): Promise<Duplex> => {
        const deadline = performance.now() + WAIT_MS;
        for (;;) {
          try {
            return await streams.portForward(sandboxId(), ECHO_PORT);
          } catch (error) {
            if (performance.now() > deadline) throw error;
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
        }
      };
      const first = await connect();
      const second = await connect();
      try {
        const one = readUntil(first, 'one\n');
        const two = readUntil(second, 'two\n');
        second.write('two\n');
        first.write('one\n');
        expect([await one, await two]).toEqual(['one\n', 'two\n']);
      } finally {
        first.destroy();
        second.destroy();
      }
    });

    withStreaming('port-forward: Unavailable for a port nothing listens on, NotFound for an unknown sandbox', async (_r, streams) => {
      expect(await failure(streams.portForward(sandboxId(), CLOSED_PORT))).toBe('Unavailable');
      expect(await failure(streams.portForward('f'.repeat(64), ECHO_PORT))).toBe('NotFound');
    });
  });
}
