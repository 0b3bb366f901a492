import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Duplex, Readable } from 'node:stream';
import type Docker from 'dockerode';
import { checkedManifest } from '@kubelet-ts/conformance';
import {
  Labels,
  buildContainerSpec,
  buildSandboxSpec,
  type ContainerManifest,
  type ContainerStreaming,
  type SandboxSummary,
  type StreamOptions,
} from '@kubelet-ts/core';
import { DockerRuntime } from '../src/index.js';

/** Where the suite runs: the engine's socket, its test images, and how to remove what it made. */
export interface StreamingEngine {
  readonly name: 'docker' | 'podman';
  /** Checks the engine answers and has the images; resolves with them. */
  readonly ready: () => Promise<{ readonly busybox: string; readonly pause: string }>;
  readonly host?: string;
  /** A client of the engine that is not the adapter, for a container the adapter would not make. */
  readonly client: () => Docker;
  readonly removeLabelled: (label: string) => Promise<number>;
}

const NON_TTY: StreamOptions = { stdin: false, stdout: true, stderr: true, tty: false };

/** All of a stream, as text. */
export async function text(stream: Readable | undefined): Promise<string> {
  let all = '';
  for await (const chunk of stream ?? []) all += String(chunk);
  return all;
}

/** Reads `stream` until what it gave so far contains `wanted`; resolves with all it gave. */
export function readUntil(stream: Readable, wanted: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const onData = (chunk: Buffer) => {
      seen += chunk.toString();
      if (!seen.includes(wanted)) return;
      stream.off('data', onData);
      stream.pause();
      resolve(seen);
    };
    stream.on('data', onData);
    stream.resume();
    stream.once('end', () => reject(new Error(`ended before ${JSON.stringify(wanted)}; got ${JSON.stringify(seen)}`)));
  });
}

/** How long the suite's runtime keeps an idle port-forward helper. */
const HELPER_IDLE_MS = 500;

/** Waits until `done` holds, or `ms` have passed. */
async function until(done: () => Promise<boolean>, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await done()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
}

/** The children this process has now (port-forward relays among them), by pid. */
async function children(): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    // pid (comm) state ppid …: comm may hold spaces, so read after its closing parenthesis.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (ppid === process.pid) found.push(Number(entry));
  }
  return found;
}

/** The streaming power of `DockerRuntime` on a real engine: what the contract in container-streams.ts says, checked. */
export function streamingSuite(engine: StreamingEngine): void {
  const NODE = `streams-${engine.name}-${process.pid}`;

  describe(`streaming on ${engine.name}`, () => {
    let runtime: DockerRuntime;
    let streams: ContainerStreaming;
    let volumesRoot: string;
    let busybox: string;
    const sandboxes: string[] = [];
    const ids = new Map<string, string>();

    const pod = async (m: ContainerManifest, start = true): Promise<SandboxSummary> => {
      const sandbox = await runtime.runSandbox(buildSandboxSpec(m, { node: NODE, source: 'test' }));
      sandboxes.push(sandbox.id);
      for (const c of m.containers) {
        const created = await runtime.create(buildContainerSpec(m, c, { node: NODE, source: 'test' }), sandbox.id);
        ids.set(c.name, created.id);
        if (start) await runtime.start(created.id);
      }
      return sandbox;
    };
    const id = (name: string) => ids.get(name)!;
    let web: SandboxSummary;

    beforeAll(async () => {
      const images = await engine.ready();
      busybox = images.busybox;
      volumesRoot = await mkdtemp(join(tmpdir(), 'kubelet-ts-streams-volumes-'));
      runtime = new DockerRuntime({
        ...(engine.host === undefined ? {} : { host: engine.host }),
        podInfraImage: images.pause,
        hostIp: '127.0.0.1',
        volumesRoot,
        portForwardHelperIdleMs: HELPER_IDLE_MS,
      });
      streams = runtime.capabilities.streaming!;
      web = await pod(
        checkedManifest({
          id: `streams-${process.pid}`,
          containers: [
            { name: 'main', image: busybox, command: ['sleep', '3600'] },
            {
              name: 'server',
              image: busybox,
              // An echo on 8080 for anyone, HTTP on 8081 on loopback only (no port is published), and
              // on 8082 a server that speaks first.
              command: [
                'sh',
                '-c',
                'mkdir -p /www && echo hello > /www/index.html && httpd -p 127.0.0.1:8081 -h /www && (nc -ll -p 8082 -e echo banner &) && exec nc -ll -p 8080 -e cat',
              ],
            },
            // Says something on each stream, then exits 5, once /go exists (after an attach).
            {
              name: 'talker',
              image: busybox,
              command: ['sh', '-c', 'while [ ! -e /go ]; do sleep 0.05; done; echo out; echo err >&2; exit 5'],
            },
          ],
        }),
      );
      await pod(checkedManifest({ id: `idle-${process.pid}`, containers: [{ name: 'idle', image: busybox, command: ['true'] }] }), false);
    });

    afterAll(async () => {
      for (const sandbox of sandboxes) await runtime.removeSandbox(sandbox, { volumes: true }).catch(() => undefined);
      await engine.removeLabelled(`${Labels.node}=${NODE}`);
      await rm(volumesRoot, { recursive: true, force: true });
    });

    it('is declared as a capability', () => {
      expect(runtime.capabilities.streaming).toBeDefined();
    });

    it('exec: ends with the exit code, stdout and stderr apart', async () => {
      const session = await streams.exec(id('main'), ['sh', '-c', 'echo out; echo err >&2; exit 3'], NON_TTY);
      expect(session.stdin).toBeUndefined();
      const [out, err, end] = await Promise.all([text(session.stdout), text(session.stderr), session.done]);
      expect({ out, err, end }).toEqual({ out: 'out\n', err: 'err\n', end: { exitCode: 3 } });
      const ok = await streams.exec(id('main'), ['true'], NON_TTY);
      expect((await Promise.all([text(ok.stdout), text(ok.stderr), ok.done]))[2]).toEqual({ exitCode: 0 });
    });

    it('exec: stdin reaches the process as it is written, and its end is end-of-file', async () => {
      const session = await streams.exec(id('main'), ['cat'], { ...NON_TTY, stdin: true });
      session.stdin!.write('hello\n');
      expect(await readUntil(session.stdout!, 'hello\n')).toBe('hello\n');
      session.stdin!.end('world\n');
      const [rest, err, end] = await Promise.all([text(session.stdout), text(session.stderr), session.done]);
      expect({ rest, err, end }).toEqual({ rest: 'world\n', err: '', end: { exitCode: 0 } });
    });

    it('exec: a command that cannot be started ends the session with 126 or 127 and the engine’s words', async () => {
      const session = await streams.exec(id('main'), ['no-such-command'], NON_TTY);
      const [, , end] = await Promise.all([text(session.stdout), text(session.stderr), session.done]);
      expect([126, 127]).toContain(end.exitCode);
      expect(end.message).toMatch(/no-such-command.*executable file not found/);
    });

    it('exec with a terminal: one output stream, the size given first, then resized; ^D at end of stdin', async () => {
      const session = await streams.exec(id('main'), ['sh'], {
        stdin: true,
        stdout: true,
        stderr: true,
        tty: true,
        size: { width: 100, height: 30 },
      });
      expect(session.stderr).toBeUndefined();
      session.stdin!.write('stty size\n');
      expect(await readUntil(session.stdout!, '30 100')).toContain('30 100');
      await session.resize({ width: 120, height: 40 });
      // stderr is the terminal too: what it says comes on stdout (42, where the typed line echoes $((20+22))).
      session.stdin!.write('stty size; echo $((20+22)) >&2\n');
      expect(await readUntil(session.stdout!, '42')).toContain('40 120');
      session.stdin!.write('exit 4\n');
      const [, end] = await Promise.all([text(session.stdout), session.done]);
      expect(end).toEqual({ exitCode: 4 });
      // A terminal's end-of-file is its ^D, which end() sends.
      const cat = await streams.exec(id('main'), ['cat'], { stdin: true, stdout: true, stderr: false, tty: true });
      cat.stdin!.end('line\n');
      const [echoed, catEnd] = await Promise.all([text(cat.stdout), cat.done]);
      expect(echoed).toContain('line');
      expect(catEnd).toEqual({ exitCode: 0 });
    });

    it('exec: a reader that stops reading stops the process, and the agent holds no more than a chunk or so', async () => {
      const size = 8_000_000;
      const session = await streams.exec(id('main'), ['sh', '-c', `head -c ${size} /dev/zero; echo finished >&2`], NON_TTY);
      let err = '';
      session.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
      await new Promise((r) => setTimeout(r, 1000));
      expect(session.stdout!.readableLength).toBeLessThan(256 * 1024);
      expect(err).toBe('');
      let bytes = 0;
      for await (const chunk of session.stdout!) bytes += (chunk as Buffer).length;
      expect(bytes).toBe(size);
      expect(await session.done).toEqual({ exitCode: 0 });
      expect(err).toBe('finished\n');
    });

    it('close() ends a session at once: its outputs end, done says no exit code, twice is fine', async () => {
      const session = await streams.exec(id('main'), ['sleep', '30'], { ...NON_TTY, stdin: true });
      session.close();
      session.close();
      expect(await Promise.all([text(session.stdout), text(session.stderr), session.done])).toEqual(['', '', { exitCode: undefined }]);
      expect(session.stdin!.destroyed).toBe(true);
    });

    it('exec and attach: NotFound for an unknown container, Conflict for one that is not running', async () => {
      for (const open of [(c: string) => streams.exec(c, ['true'], NON_TTY), (c: string) => streams.attach(c, NON_TTY)]) {
        await expect(open('no-such-container-' + process.pid)).rejects.toMatchObject({ code: 'NotFound' });
        await expect(open(id('idle'))).rejects.toMatchObject({ code: 'Conflict', message: expect.stringMatching(/created/) });
      }
    });

    it('attach: the main process’s output, apart, until it exits, with its exit code', async () => {
      const session = await streams.attach(id('talker'), { ...NON_TTY, stdin: true });
      // The container has no open stdin: what is written is dropped.
      session.stdin!.write('ignored\n');
      await runtime.exec(id('talker'), ['touch', '/go'], 10_000);
      const [out, err, end] = await Promise.all([text(session.stdout), text(session.stderr), session.done]);
      expect({ out, err, end }).toEqual({ out: 'out\n', err: 'err\n', end: { exitCode: 5 } });
    });

    it('attach: closed before the process ends, done has no exit code', async () => {
      const session = await streams.attach(id('main'), NON_TTY);
      session.close();
      expect(await session.done).toEqual({ exitCode: undefined });
      expect(await text(session.stdout)).toBe('');
    });

    it('attach to a container made with a terminal and an open stdin: typed input, resize, exit code', async () => {
      // The adapter makes neither (a pod's containers have no stdin): one made by hand, as a user may have.
      const made = await engine.client().createContainer({
        Image: busybox,
        Cmd: ['sh'],
        Tty: true,
        OpenStdin: true,
        Labels: { [Labels.node]: NODE },
      });
      await made.start();
      const session = await streams.attach(made.id, {
        stdin: true,
        stdout: true,
        stderr: true,
        tty: true,
        size: { width: 90, height: 25 },
      });
      expect(session.stderr).toBeUndefined();
      session.stdin!.write('stty size\n');
      expect(await readUntil(session.stdout!, '25 90')).toContain('25 90');
      await session.resize({ width: 132, height: 50 });
      session.stdin!.write('stty size; exit 6\n');
      const [rest, end] = await Promise.all([text(session.stdout), session.done]);
      expect(rest).toContain('50 132');
      expect(end).toEqual({ exitCode: 6 });
    });

    it('portForward: a connection to a port on the pod’s loopback (an echo, and HTTP that listens on 127.0.0.1 only), two at once', async () => {
      const echo = (connection: Duplex, message: string) => {
        const answer = readUntil(connection as unknown as Readable, message);
        connection.write(message);
        return answer;
      };
      const [a, b] = await Promise.all([streams.portForward(web.id, 8080), streams.portForward(web.id, 8080)]);
      expect(await Promise.all([echo(a!, 'one\n'), echo(b!, 'two\n')])).toEqual(['one\n', 'two\n']);
      expect(await echo(a!, 'again\n')).toBe('again\n');
      a!.destroy();
      b!.end();
      const http = await streams.portForward(web.id, 8081);
      http.end('GET / HTTP/1.0\r\n\r\n');
      const response = await text(http as unknown as Readable);
      expect(response).toMatch(/^HTTP\/1\.[01] 200/);
      expect(response).toContain('\r\n\r\nhello\n');
      // The server closes first (HTTP/1.0), the caller not having ended its side: the connection ends all the same.
      const closing = await streams.portForward(web.id, 8081);
      closing.write('GET / HTTP/1.0\r\n\r\n');
      expect(await text(closing as unknown as Readable)).toContain('\r\n\r\nhello\n');
    });

    it('portForward: Unavailable naming the port when nothing listens, NotFound for an unknown or stopped sandbox', async () => {
      await expect(streams.portForward(web.id, 9)).rejects.toMatchObject({
        code: 'Unavailable',
        message: expect.stringMatching(/port 9 of pod streams-\d+: connection refused/),
      });
      await expect(streams.portForward('no-such-sandbox-' + process.pid, 8080)).rejects.toMatchObject({ code: 'NotFound' });
      const stopped = await pod(checkedManifest({ id: `stopped-${process.pid}`, containers: [] }));
      await runtime.stopSandbox(stopped.id);
      await expect(streams.portForward(stopped.id, 8080)).rejects.toMatchObject({ code: 'NotFound' });
    });

    it('one helper process per pod’s network namespace, not one per connection; none once idle, the connections kept', async () => {
      await until(async () => (await children()).length === 0, HELPER_IDLE_MS + 5000);
      const echo = (connection: Duplex, message: string) => {
        const answer = readUntil(connection as unknown as Readable, message);
        connection.write(message);
        return answer;
      };
      const connections = await Promise.all(Array.from({ length: 20 }, () => streams.portForward(web.id, 8080)));
      expect(await children()).toHaveLength(1);
      expect(await Promise.all(connections.map((c, i) => echo(c, `n${i}\n`)))).toEqual(connections.map((_, i) => `n${i}\n`));
      // Each connection is the agent's own socket in the pod's namespace: the idle helper goes, they stay.
      await until(async () => (await children()).length === 0, HELPER_IDLE_MS + 5000);
      expect(await children()).toEqual([]);
      expect(await Promise.all(connections.map((c, i) => echo(c, `m${i}\n`)))).toEqual(connections.map((_, i) => `m${i}\n`));
      for (const connection of connections) connection.destroy();
    });

    it('portForward: what a port says first, at once, reaches the caller (20 connections; none read by the helper)', async () => {
      // One after another: busybox's nc serves 8082 one connection at a time.
      const heard: string[] = [];
      for (let i = 0; i < 20; i++) heard.push(await text((await streams.portForward(web.id, 8082)) as unknown as Readable));
      expect(heard).toEqual(heard.map(() => 'banner\n'));
    });

    it('leaves nothing behind: a helper ends by itself when the agent’s process dies (SIGKILL)', async () => {
      // An agent in a process of its own, which dials once, tells the helper's pid, then is killed.
      const dialer = new URL('../dist/netns-connect.js', import.meta.url).href;
      const holder = (await engine.client().getContainer(web.id).inspect()).State.Pid;
      const script = `
        import { NetnsDialer } from ${JSON.stringify(dialer)};
        import { readdirSync, readFileSync } from 'node:fs';
        const socket = await new NetnsDialer({ idleMs: 600000 }).connect({ sandbox: 'x', pid: ${holder}, port: 8080, describe: 'x' });
        const mine = readdirSync('/proc').filter((e) => /^\\d+$/.test(e)).filter((e) => {
          try { const st = readFileSync('/proc/' + e + '/stat', 'utf8'); return Number(st.slice(st.lastIndexOf(')') + 2).split(' ')[1]) === process.pid; } catch { return false; }
        });
        process.stdout.write(mine.join(',') + '\\n');
        setInterval(() => socket, 1000);
      `;
      const agent = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
      const helpers = (await readUntil(agent.stdout, '\n')).trim().split(',').map(Number);
      expect(helpers).toHaveLength(1);
      const alive = (pid: number) =>
        readFile(`/proc/${pid}/stat`, 'utf8').then(
          (st) => !/^\d+ \(.*\) Z/.test(st),
          () => false,
        );
      expect(await alive(helpers[0]!)).toBe(true);
      agent.kill('SIGKILL');
      await until(async () => !(await alive(helpers[0]!)), 5000);
      expect(await alive(helpers[0]!)).toBe(false);
    });

    it('leaves nothing behind: the helper ends with its sandbox, and with the runtime', async () => {
      // A runtime that would keep its helpers a minute: only the sandbox's end or close() ends them.
      const keeping = new DockerRuntime({ ...(engine.host === undefined ? {} : { host: engine.host }), portForwardHelperIdleMs: 60_000 });
      const short = await pod(
        checkedManifest({ id: `short-${process.pid}`, containers: [{ name: 'idle', image: busybox, command: ['sleep', '3600'] }] }),
      );
      await until(async () => (await children()).length === 0, HELPER_IDLE_MS + 5000);
      await expect(keeping.capabilities.streaming!.portForward(short.id, 9)).rejects.toMatchObject({ code: 'Unavailable' });
      const open = await keeping.capabilities.streaming!.portForward(web.id, 8080);
      expect(await children()).toHaveLength(2);
      await keeping.removeSandbox(short.id);
      await until(async () => (await children()).length === 1, 2000);
      expect(await children()).toHaveLength(1);
      await keeping.close();
      await until(async () => (await children()).length === 0, 2000);
      expect(await children()).toEqual([]);
      await expect(keeping.capabilities.streaming!.portForward(web.id, 8080)).rejects.toMatchObject({
        code: 'Unavailable',
        message: expect.stringMatching(/the runtime is closed/),
      });
      open.destroy();
    });
  });
}
