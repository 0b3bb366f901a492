import { describe, expect, it } from '@jest/globals';
import { Duplex, type Readable } from 'node:stream';
import type { SessionEnd, StreamOptions } from '@kubelet-ts/core';
import { DockerSession, engineStartFailure } from '../src/docker-session.js';

/** One frame of the engine's multiplexed stream: stream 1 (stdout) or 2 (stderr), then its bytes. */
const frame = (stream: 1 | 2, text: string | Buffer) => {
  const body = Buffer.from(text);
  const header = Buffer.alloc(8);
  header[0] = stream;
  header.writeUInt32BE(body.length, 4);
  return Buffer.concat([header, body]);
};

/** The engine's end of an upgraded connection: `send` pushes bytes to the session, `written` is what it wrote. */
function connection() {
  const written: Buffer[] = [];
  let halfClosed = false;
  const socket = new Duplex({
    read() {},
    write(chunk: Buffer, _encoding, callback) {
      written.push(chunk);
      callback();
    },
    final(callback) {
      halfClosed = true;
      callback();
    },
  });
  return { socket, written, halfClosed: () => halfClosed, send: (bytes: Buffer | null) => socket.push(bytes) };
}

const NON_TTY: StreamOptions = { stdin: true, stdout: true, stderr: true, tty: false };

function session(socket: Duplex, options: StreamOptions, extra: { raw?: boolean; podman?: boolean } = {}) {
  const ends: Array<{ closed: boolean; head: string }> = [];
  const opened = new DockerSession({
    socket,
    options,
    raw: extra.raw ?? options.tty,
    stdinAtEngine: true,
    podman: extra.podman ?? false,
    resize: async () => undefined,
    end: async (closed, head): Promise<SessionEnd> => {
      ends.push({ closed, head });
      return { exitCode: closed ? undefined : 0 };
    },
  });
  return { opened, ends };
}

async function text(stream: Readable | undefined): Promise<string> {
  let all = '';
  for await (const chunk of stream ?? []) all += String(chunk);
  return all;
}

describe('DockerSession: an exec or attach over the engine’s upgraded connection', () => {
  it('takes stdout and stderr apart, with frames cut anywhere across chunks', async () => {
    const engine = connection();
    const { opened, ends } = session(engine.socket, NON_TTY);
    const bytes = Buffer.concat([frame(1, 'out 1\n'), frame(2, 'err 1\n'), frame(1, ''), frame(1, 'out 2\n')]);
    for (const byte of bytes) engine.send(Buffer.from([byte]));
    engine.send(null);
    expect(await Promise.all([text(opened.stdout), text(opened.stderr), opened.done])).toEqual([
      'out 1\nout 2\n',
      'err 1\n',
      { exitCode: 0 },
    ]);
    expect(ends).toEqual([{ closed: false, head: 'out 1\nerr 1\nout 2\n' }]);
  });

  it('with a terminal asked for: one stream (stderr frames on stdout); the raw bytes of a terminal as they come', async () => {
    const merged = connection();
    const one = session(merged.socket, { ...NON_TTY, tty: true }, { raw: false });
    expect(one.opened.stderr).toBeUndefined();
    merged.send(Buffer.concat([frame(1, 'a'), frame(2, 'b')]));
    merged.send(null);
    expect(await text(one.opened.stdout)).toBe('ab');
    const raw = connection();
    const terminal = session(raw.socket, { ...NON_TTY, tty: true });
    raw.send(Buffer.from([1, 0, 0, 0, 0, 0, 0, 1, 0x41]));
    raw.send(null);
    expect(Buffer.from(await text(terminal.opened.stdout), 'latin1')).toEqual(Buffer.from([1, 0, 0, 0, 0, 0, 0, 1, 0x41]));
  });

  it('drops what nobody asked for, and Podman’s attach noise, but not a short line of the process’s own', async () => {
    const engine = connection();
    const { opened } = session(engine.socket, { ...NON_TTY, stdout: false }, { podman: true });
    expect(opened.stdout).toBeUndefined();
    engine.send(frame(1, 'unasked\n'));
    engine.send(frame(2, 'Error: read unixpacket @->/proc/self/fd/13/attach: read: connection reset by peer\n'));
    engine.send(frame(2, 'Error: mine\n'));
    engine.send(null);
    expect(await text(opened.stderr)).toBe('Error: mine\n');
  });

  it('stdin: written through; its end is a half-close without a terminal, ^D with one', async () => {
    const plain = connection();
    const a = session(plain.socket, NON_TTY).opened;
    a.stdin!.write('hello\n');
    a.stdin!.end();
    await new Promise((r) => setImmediate(r));
    expect(Buffer.concat(plain.written).toString()).toBe('hello\n');
    expect(plain.halfClosed()).toBe(true);
    const tty = connection();
    const b = session(tty.socket, { ...NON_TTY, tty: true }).opened;
    b.stdin!.end('x');
    await new Promise((r) => setImmediate(r));
    expect(Buffer.concat(tty.written)).toEqual(Buffer.from([0x78, 0x04]));
    expect(tty.halfClosed()).toBe(false);
    plain.send(null);
    tty.send(null);
    await Promise.all([a.done, b.done]);
  });

  it('pauses the connection while a reader is full, and resumes it when read', async () => {
    const engine = connection();
    const { opened } = session(engine.socket, NON_TTY);
    engine.send(frame(1, Buffer.alloc(64 * 1024)));
    await new Promise((r) => setImmediate(r));
    expect(engine.socket.isPaused()).toBe(true);
    opened.stdout!.read();
    await new Promise((r) => setImmediate(r));
    expect(engine.socket.isPaused()).toBe(false);
    opened.close();
  });

  it('close(): ends the outputs, destroys the connection, done without an exit code; once', async () => {
    const engine = connection();
    const { opened, ends } = session(engine.socket, NON_TTY);
    opened.close();
    opened.close();
    expect(await Promise.all([text(opened.stdout), text(opened.stderr), opened.done])).toEqual(['', '', { exitCode: undefined }]);
    expect(engine.socket.destroyed).toBe(true);
    expect(ends).toEqual([{ closed: true, head: '' }]);
    expect(opened.stdin!.destroyed).toBe(true);
  });
});

describe('engineStartFailure: the engine’s words for a command it could not start', () => {
  it('reads Docker’s and Podman’s, and nothing else', () => {
    expect(
      engineStartFailure(
        'OCI runtime exec failed: exec failed: unable to start container process: exec: "nope": executable file not found in $PATH: unknown\r\n',
      ),
    ).toBe(
      'OCI runtime exec failed: exec failed: unable to start container process: exec: "nope": executable file not found in $PATH: unknown',
    );
    expect(
      engineStartFailure(
        'Error: runc: exec failed: unable to start container process: exec: "nope": executable file not found in $PATH: OCI runtime attempted to invoke a command that was not found\n',
      ),
    ).toMatch(/^runc: exec failed: .*"nope": executable file not found/);
    expect(engineStartFailure('sh: nope: not found\n')).toBeUndefined();
  });
});
