import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { request } from 'node:http';
import type { Duplex, Readable } from 'node:stream';
import { checkedManifest } from '@kubelet-ts/conformance';
import {
  KubeletError,
  buildContainerSpec,
  buildSandboxSpec,
  type ContainerStreaming,
  type StreamOptions,
  type StreamSession,
} from '@kubelet-ts/core';
import { TEST_IMAGES } from '@kubelet-ts/testkit';
import { execEnd } from '../src/cri-stream-session.js';
import { criFixture, type CriFixture } from './fixture.js';

const NODE = `cri-streams-${process.pid}`;
const HTTP_PORT = 8080;
const ECHO_PORT = 8081;
const CLOSED_PORT = 8089;
const NONE: StreamOptions = { stdin: false, stdout: true, stderr: true, tty: false };
const WAIT_MS = 10_000;

/** All a stream gives until it ends. */
async function bytes(stream: Readable | undefined): Promise<Buffer> {
  const chunks: Buffer[] = [];
  if (stream !== undefined) for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
const text = async (stream: Readable | undefined) => (await bytes(stream)).toString('utf8');

/** Reads until what came contains `wanted`; what came. */
function readUntil(stream: Readable, wanted: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(
      () => finish(new Error(`no ${JSON.stringify(wanted)} in ${WAIT_MS} ms; saw ${JSON.stringify(seen)}`)),
      WAIT_MS,
    );
    const onData = (chunk: Buffer) => {
      seen += chunk.toString('utf8');
      if (seen.includes(wanted)) finish();
    };
    const onEnd = () => finish(new Error(`ended before ${JSON.stringify(wanted)}; saw ${JSON.stringify(seen)}`));
    const finish = (error?: Error) => {
      clearTimeout(timer);
      stream.off('data', onData).off('end', onEnd);
      stream.pause();
      if (error === undefined) resolve(seen);
      else reject(error);
    };
    stream.on('data', onData).on('end', onEnd).resume();
  });
}

/** Whether `promise` is still pending after `ms`. */
async function pendingAfter(promise: Promise<unknown>, ms: number): Promise<boolean> {
  const still = Symbol('pending');
  return (await Promise.race([promise, new Promise((resolve) => setTimeout(() => resolve(still), ms))])) === still;
}

const outcome = async (session: StreamSession) => {
  const [stdout, stderr, end] = await Promise.all([text(session.stdout), text(session.stderr), session.done]);
  return { stdout, stderr, ...end };
};
const codeOf = (call: Promise<unknown>) =>
  call.then(
    () => undefined,
    (e: unknown) => (e instanceof KubeletError ? `${e.code}: ${e.message}` : String(e)),
  );

describe('CriStreams on a real containerd: exec, attach and port-forward over its streaming server', () => {
  let f: CriFixture;
  let streams: ContainerStreaming;
  let sandboxId: string;
  const ids = new Map<string, string>();
  const sandboxes: string[] = [];

  // One pod: `main` serves HTTP on 8080 and echoes on 8081; `loop` ends with 7 on SIGTERM; `quick` exits at once.
  const manifest = checkedManifest({
    id: 'streams',
    containers: [
      {
        name: 'main',
        image: TEST_IMAGES.busybox,
        command: [
          'sh',
          '-c',
          `mkdir -p /www && echo from-pod > /www/index.html && httpd -p ${HTTP_PORT} -h /www && exec nc -ll -p ${ECHO_PORT} -e cat`,
        ],
      },
      { name: 'loop', image: TEST_IMAGES.busybox, command: ['sh', '-c', 'trap "exit 7" TERM; while true; do sleep 0.1; done'] },
      { name: 'quick', image: TEST_IMAGES.busybox, command: ['true'] },
    ],
  });
  const start = async (name: string) => {
    const c = manifest.containers.find((x) => x.name === name)!;
    const { id } = await f.runtime.create(buildContainerSpec(manifest, c, { node: NODE, source: 'test' }), sandboxId);
    await f.runtime.start(id);
    ids.set(name, id);
    return id;
  };

  beforeAll(async () => {
    f = await criFixture();
    streams = f.runtime.capabilities.streaming!;
    sandboxId = (await f.runtime.runSandbox(buildSandboxSpec(manifest, { node: NODE, source: 'test' }))).id;
    sandboxes.push(sandboxId);
    await start('main');
  });

  afterAll(async () => {
    for (const id of sandboxes) await f?.runtime.removeSandbox(id, { volumes: true });
    await f?.close();
  });

  it('declares streaming', () => {
    expect(typeof f.runtime.capabilities.streaming?.exec).toBe('function');
  });

  it('exec: passes exit codes 0 and 3 on, keeps stdout and stderr apart, runs with no stream asked for', async () => {
    const main = ids.get('main')!;
    expect(await outcome(await streams.exec(main, ['true'], NONE))).toEqual({ stdout: '', stderr: '', exitCode: 0 });
    expect(await outcome(await streams.exec(main, ['sh', '-c', 'echo out; echo err >&2; exit 3'], NONE))).toEqual({
      stdout: 'out\n',
      stderr: 'err\n',
      exitCode: 3,
    });
    const quiet = await streams.exec(main, ['sh', '-c', 'echo unseen; exit 4'], { stdin: false, stdout: false, stderr: false, tty: false });
    expect([quiet.stdin, quiet.stdout, quiet.stderr]).toEqual([undefined, undefined, undefined]);
    expect(await quiet.done).toEqual({ exitCode: 4 });
  });

  it('exec: a command that does not exist ends with 127 and the runtime saying why, naming it', async () => {
    const end = await outcome(await streams.exec(ids.get('main')!, ['/no/such/command'], NONE));
    expect(end.exitCode).toBe(127);
    expect(end.message).toContain('/no/such/command');
    const bare = await (await streams.exec(ids.get('main')!, ['nosuchcommand'], NONE)).done;
    expect(bare).toMatchObject({ exitCode: 127, message: expect.stringContaining('executable file not found') });
  });

  it('exec: stdin reaches the process (cat echoes), and its end is end-of-file (over SPDY, as the kubelet reaches the runtime)', async () => {
    const session = await streams.exec(ids.get('main')!, ['cat'], { ...NONE, stdin: true });
    const echoed = readUntil(session.stdout!, 'hello\n');
    session.stdin!.write('hello\n');
    expect(await echoed).toBe('hello\n');
    session.stdout!.resume();
    session.stdin!.end();
    // cat reads end-of-file and exits 0: the session ends by itself.
    expect(await session.done).toEqual({ exitCode: 0 });
    session.close(); // after the end: nothing
  });

  it('exec with stdin: more than the windows of SPDY each way, a non-zero exit, and close() of a session left open', async () => {
    // 1 MiB in, counted and echoed back: neither side keeps to SPDY's 64 KiB windows (see @kubelet-ts/spdy).
    const big = Buffer.alloc(1024 * 1024, 'x');
    const counting = await streams.exec(ids.get('main')!, ['sh', '-c', 'wc -c; exit 3'], { ...NONE, stdin: true });
    const counted = readUntil(counting.stdout!, '\n');
    counting.stdin!.end(big);
    expect((await counted).trim()).toBe(String(big.length));
    expect(await counting.done).toEqual({ exitCode: 3 });
    const echoing = await streams.exec(ids.get('main')!, ['cat'], { ...NONE, stdin: true });
    let back = 0;
    echoing.stdout!.on('data', (c: Buffer) => (back += c.length));
    echoing.stdin!.end(big);
    expect(await echoing.done).toEqual({ exitCode: 0 });
    expect(back).toBe(big.length);
    const open = await streams.exec(ids.get('main')!, ['cat'], { ...NONE, stdin: true });
    const closing = performance.now();
    open.close();
    expect(await open.done).toEqual({ exitCode: undefined });
    expect(performance.now() - closing).toBeLessThan(2_000);
    open.close(); // again: nothing
  });

  it('exec with a terminal: stdin.end() is end-of-file (^D), even after a partial line', async () => {
    const tty: StreamOptions = { stdin: true, stdout: true, stderr: false, tty: true };
    const whole = await streams.exec(ids.get('main')!, ['cat'], tty);
    expect(whole.stderr).toBeUndefined();
    const out = readUntil(whole.stdout!, 'line\r\nline\r\n'); // the terminal's echo, then cat's
    whole.stdin!.end('line\n');
    await out;
    whole.stdout!.resume();
    expect(await whole.done).toEqual({ exitCode: 0 });

    const partial = await streams.exec(ids.get('main')!, ['sh', '-c', 'wc -c'], tty);
    partial.stdin!.end('abc');
    // The terminal echoes "abc" (no newline), then wc counts 3 bytes: the first ^D only ended the partial line.
    expect(await text(partial.stdout)).toMatch(/^abc\s*3\r\n$/);
    expect(await partial.done).toEqual({ exitCode: 0 });
  });

  it('exec with a terminal: the size to begin with and a resize reach the process (stty size)', async () => {
    // A shell at the terminal: each `stty size` typed prints the size it has.
    const session = await streams.exec(ids.get('main')!, ['sh'], {
      stdin: true,
      stdout: true,
      stderr: false,
      tty: true,
      size: { width: 80, height: 24 },
    });
    const first = readUntil(session.stdout!, '24 80');
    session.stdin!.write('stty size\n');
    await first;
    await session.resize({ width: 100, height: 40 });
    // containerd sets the size on another goroutine a moment after reading it, apart from stdin:
    // the shell is asked every 100 ms until it sees it.
    const second = readUntil(session.stdout!, '40 100');
    const asking = setInterval(() => session.stdin!.write('stty size\n'), 100);
    session.stdin!.write('stty size\n');
    try {
      await second;
    } finally {
      clearInterval(asking);
    }
    session.stdout!.resume();
    session.stdin!.write('exit\n');
    expect(await session.done).toEqual({ exitCode: 0 });
  });

  it('exec: a reader that stops stops the process (back-pressure), and nothing piles up meanwhile', async () => {
    const size = 32 * 1024 * 1024;
    const session = await streams.exec(ids.get('main')!, ['head', '-c', String(size), '/dev/zero'], NONE);
    // Nobody reads: the process cannot finish, and what waits here stays near one buffer.
    expect(await pendingAfter(session.done, 1_000)).toBe(true);
    expect(session.stdout!.readableLength).toBeLessThan(512 * 1024);
    const [out] = await Promise.all([bytes(session.stdout), text(session.stderr)]);
    expect(out.length).toBe(size);
    expect(await session.done).toEqual({ exitCode: 0 });
  }, 60_000);

  it('exec and attach: NotFound for an unknown container, Conflict for one that is not running', async () => {
    const unknown = 'f'.repeat(64);
    expect(await codeOf(streams.exec(unknown, ['true'], NONE))).toMatch(/^NotFound/);
    expect(await codeOf(streams.attach(unknown, NONE))).toMatch(/^NotFound/);
    const quick = await start('quick');
    for (let i = 0; i < 100 && (await f.runtime.inspect(quick)).state === 'running'; i++) await new Promise((r) => setTimeout(r, 50));
    expect(await codeOf(streams.exec(quick, ['true'], NONE))).toMatch(/^Conflict: exec in .*quick.*: the container is exited/);
    expect(await codeOf(streams.attach(quick, NONE))).toMatch(/^Conflict/);
  });

  it("attach: sees the main process's output apart, and ends with its exit code when it ends", async () => {
    const loop = await start('loop');
    const session = await streams.attach(loop, NONE);
    const out = readUntil(session.stdout!, 'to-stdout\n');
    const err = readUntil(session.stderr!, 'to-stderr\n');
    await f.runtime.exec(loop, ['sh', '-c', 'echo to-stdout >/proc/1/fd/1; echo to-stderr >/proc/1/fd/2'], 5_000);
    expect([await out, await err]).toEqual(['to-stdout\n', 'to-stderr\n']);
    session.stdout!.resume();
    session.stderr!.resume();
    await f.runtime.stop(loop, 5);
    expect(await session.done).toMatchObject({ exitCode: 7 });
    await f.runtime.remove(loop);
  });

  it('attach: close() ends the session with no exit code while the process goes on', async () => {
    const loop = await start('loop');
    const session = await streams.attach(loop, NONE);
    session.close();
    expect(await session.done).toEqual({ exitCode: undefined });
    expect((await f.runtime.inspect(loop)).state).toBe('running');
    await f.runtime.remove(loop, { force: true });
  });

  it('port-forward: an HTTP GET through the connection, by a client that is not ours (node:http)', async () => {
    const connection = await connect(HTTP_PORT);
    const body = await new Promise<string>((resolve, reject) => {
      const get = request({ path: '/', host: 'pod', createConnection: () => connection as never }, (response) => {
        expect(response.statusCode).toBe(200);
        text(response).then(resolve, reject);
      });
      get.on('error', reject).end();
    });
    expect(body).toBe('from-pod\n');
    connection.destroy();
  });

  it('port-forward: two connections at once, each its own', async () => {
    const [first, second] = await Promise.all([connect(ECHO_PORT), connect(ECHO_PORT)]);
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

  it('port-forward: Unavailable naming the port nothing listens on; NotFound for an unknown or stopped sandbox', async () => {
    for (let i = 0; i < 5; i++) expect(await codeOf(streams.portForward(sandboxId, CLOSED_PORT))).toMatch(/^Unavailable: .*port 8089/);
    expect(await codeOf(streams.portForward('f'.repeat(64), HTTP_PORT))).toMatch(/^NotFound/);
    const m = checkedManifest({ id: 'stopped', containers: [{ name: 'main', image: TEST_IMAGES.busybox }] });
    const stopped = await f.runtime.runSandbox(buildSandboxSpec(m, { node: NODE, source: 'test' }));
    sandboxes.push(stopped.id);
    await f.runtime.stopSandbox(stopped.id);
    expect(await codeOf(streams.portForward(stopped.id, HTTP_PORT))).toMatch(/^NotFound: .*stopped/);
  });

  it('closing the runtime ends the sessions and connections it opened', async () => {
    const runtime = f.another();
    const own = runtime.capabilities.streaming!;
    const session = await own.exec(ids.get('main')!, ['cat'], { ...NONE, stdin: true });
    const connection = await connect(ECHO_PORT, own);
    const ended = new Promise((resolve) => connection.once('close', resolve));
    connection.resume();
    runtime.close();
    expect(await session.done).toMatchObject({ exitCode: undefined });
    await ended;
  });

  /** A connection to `port` of the pod, once its server listens (it needs a moment after start). */
  async function connect(port: number, through = streams): Promise<Duplex> {
    const deadline = performance.now() + WAIT_MS;
    for (;;) {
      try {
        return await through.portForward(sandboxId, port);
      } catch (error) {
        if (performance.now() > deadline || !(error instanceof KubeletError && error.code === 'Unavailable')) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  }
});

describe('execEnd: an exec session end from the runtime status', () => {
  it('reads Success, NonZeroExitCode and a failure to start', () => {
    expect(execEnd({ status: 'Success' })).toEqual({ exitCode: 0 });
    expect(execEnd({ status: 'Failure', reason: 'NonZeroExitCode', details: { causes: [{ reason: 'ExitCode', message: '42' }] } })).toEqual(
      { exitCode: 42 },
    );
    expect(execEnd({ status: 'Failure', reason: 'InternalError', message: 'exec: "x": executable file not found in $PATH' })).toEqual({
      exitCode: 127,
      message: 'exec: "x": executable file not found in $PATH',
    });
    expect(execEnd({ status: 'Failure', message: 'exec: "/etc": permission denied' }).exitCode).toBe(126);
    expect(execEnd(undefined).exitCode).toBeUndefined();
  });
});
