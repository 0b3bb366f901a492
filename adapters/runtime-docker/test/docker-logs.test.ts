import { describe, expect, it } from '@jest/globals';
import { Readable } from 'node:stream';
import { formatLogTime, type LogLine } from '@kubelet-ts/core';
import type { DockerApi } from '../src/docker-api.js';
import { dockerLogText, dockerLogs } from '../src/docker-logs.js';

/** One frame of Docker's multiplexed stream: stream 1 (stdout) or 2 (stderr), then its bytes. */
const frame = (stream: 1 | 2, text: string) => {
  const body = Buffer.from(text);
  const header = Buffer.alloc(8);
  header[0] = stream;
  header.writeUInt32BE(body.length, 4);
  return Buffer.concat([header, body]);
};

/** An engine that answers `logs` with `chunks`, recording what was asked. */
function engine(chunks: readonly Buffer[], answer: { error?: unknown; tty?: boolean } = {}) {
  const asked: Array<Record<string, unknown>> = [];
  let destroyed = false;
  const api = {
    getContainer: (id: string) => ({
      inspect: async () => {
        if (id === 'gone')
          throw Object.assign(new Error('(HTTP code 404) no such container'), {
            statusCode: 404,
            json: { message: 'No such container: gone' },
          });
        return answer.tty === true ? { Config: { Tty: true } } : {};
      },
    }),
    modem: {
      dial: (options: { options: Record<string, unknown> }, callback: (error: unknown, stream?: unknown) => void) => {
        asked.push(options.options);
        if (answer.error !== undefined) return callback(answer.error);
        const stream = Readable.from(chunks);
        stream.on('close', () => (destroyed = true));
        callback(null, stream);
      },
    },
  } as unknown as DockerApi;
  return { api, asked, destroyed: () => destroyed };
}

const text = (lines: readonly LogLine[]) => lines.map((l) => `${l.stream}:${Buffer.from(l.content).toString()}`);
async function all(stream: AsyncIterable<LogLine>): Promise<LogLine[]> {
  const lines: LogLine[] = [];
  for await (const line of stream) lines.push(line);
  return lines;
}

describe('dockerLogs: the engine’s multiplexed log stream, taken apart', () => {
  const t1 = '2026-12-04T03:24:06.123456789Z';
  const t2 = '2026-12-04T03:24:07.000000001Z';

  it('demultiplexes stdout and stderr across chunk boundaries, with each line’s time to the nanosecond', async () => {
    const bytes = Buffer.concat([frame(1, `${t1} hello\n`), frame(2, `${t2} oops\n`), frame(1, `${t2} part`)]);
    // Cut into 3-byte chunks: headers and messages split anywhere.
    const chunks = Array.from({ length: Math.ceil(bytes.length / 3) }, (_, i) => bytes.subarray(i * 3, i * 3 + 3));
    const { api, asked } = engine(chunks);
    const lines = await all(await dockerLogs(api, 'unix:///x', 'c1', { tailLines: 2 }));
    expect(text(lines)).toEqual(['stdout:hello\n', 'stderr:oops\n', 'stdout:part']);
    expect(lines.map((l) => formatLogTime(l))).toEqual([t1, t2, t2]);
    expect(asked).toEqual([{ stdout: true, stderr: true, timestamps: true, follow: false, tail: 2 }]);
  });

  it('asks the engine for whole seconds since, and leaves out lines before the exact time', async () => {
    const { api, asked } = engine([frame(1, `${t1} early\n`), frame(1, `${t2} late\n`)]);
    const sinceMs = Date.parse('2026-12-04T03:24:06.500Z');
    const lines = await all(await dockerLogs(api, 'unix:///x', 'c1', { sinceMs, follow: true }));
    expect(text(lines)).toEqual(['stdout:late\n']);
    expect(asked[0]).toMatchObject({ since: Math.floor(sinceMs / 1000), follow: true, tail: 'all' });
  });

  it('cuts at limitBytes and closes the engine’s stream', async () => {
    const { api, destroyed } = engine([frame(1, `${t1} 0123456789\n`), frame(1, `${t2} more\n`)]);
    const lines = await all(await dockerLogs(api, 'unix:///x', 'c1', { limitBytes: 4 }));
    expect(text(lines)).toEqual(['stdout:0123']);
    await new Promise((r) => setImmediate(r));
    expect(destroyed()).toBe(true);
  });

  it('is NotFound for an unknown container before any stream is opened, and Unsupported for an unreadable log driver', async () => {
    const { api, asked } = engine([]);
    await expect(dockerLogs(api, 'unix:///x', 'gone', {})).rejects.toMatchObject({ code: 'NotFound' });
    expect(asked).toEqual([]);
    const none = engine([], {
      error: Object.assign(new Error('(HTTP code 501) unexpected'), {
        statusCode: 501,
        json: { message: 'configured logging driver does not support reading' },
      }),
    });
    const stream = await dockerLogs(none.api, 'unix:///x', 'c1', {});
    await expect(all(stream)).rejects.toMatchObject({
      code: 'Unsupported',
      message: expect.stringContaining('json-file or local log driver'),
    });
  });
});

async function joined(stream: AsyncIterable<Uint8Array>): Promise<{ text: string; chunks: number }> {
  let text = '';
  let chunks = 0;
  for await (const chunk of stream) {
    text += Buffer.from(chunk).toString();
    chunks += 1;
  }
  return { text, chunks };
}

describe('dockerLogText: the same read as text', () => {
  const t1 = '2026-12-04T03:24:06.123456789Z';

  it('asks the engine without times and hands on its payloads a chunk at a time, frames split anywhere', async () => {
    const stdin = Buffer.concat([frame(1, 'x'), Buffer.from('')]);
    stdin[0] = 0; // a stdin frame: never asked for, dropped
    const bytes = Buffer.concat([frame(1, 'hello\n'), frame(2, 'oops\n'), stdin, frame(1, 'a part'), frame(1, ' and its end\n')]);
    for (const size of [1, 3, 8, 9, bytes.length]) {
      const chunks = Array.from({ length: Math.ceil(bytes.length / size) }, (_, i) =>
        Buffer.from(bytes.subarray(i * size, i * size + size)),
      );
      const { api, asked } = engine(chunks);
      const read = await joined(await dockerLogText(api, 'unix:///x', 'c1', { tailLines: 5, follow: true }));
      expect(read.text).toBe('hello\noops\na part and its end\n');
      expect(read.chunks).toBeLessThanOrEqual(chunks.length);
      expect(asked).toEqual([{ stdout: true, stderr: true, timestamps: false, follow: true, tail: 5 }]);
    }
    // One chunk of many frames is one chunk of text.
    const { api } = engine([bytes]);
    expect(await joined(await dockerLogText(api, 'unix:///x', 'c1', {}))).toEqual({ text: 'hello\noops\na part and its end\n', chunks: 1 });
  });

  it('cuts at limitBytes of text and closes the engine’s stream', async () => {
    const { api, destroyed } = engine([Buffer.concat([frame(1, '0123456789\n'), frame(2, 'more\n')]), frame(1, 'never read\n')]);
    expect((await joined(await dockerLogText(api, 'unix:///x', 'c1', { limitBytes: 13 }))).text).toBe('0123456789\nmo');
    await new Promise((r) => setImmediate(r));
    expect(destroyed()).toBe(true);
  });

  it('renders the lines when times are asked, or a time to start from', async () => {
    const { api, asked } = engine([frame(1, `${t1} hello\n`), frame(2, `${t1} oops\n`)]);
    expect((await joined(await dockerLogText(api, 'unix:///x', 'c1', { timestamps: true, limitBytes: 40 }))).text).toBe(
      `${t1} hello\n${t1.slice(0, 3)}`,
    );
    expect(asked[0]).toMatchObject({ timestamps: true });
    const since = engine([frame(1, `${t1} hello\n`)]);
    expect((await joined(await dockerLogText(since.api, 'unix:///x', 'c1', { sinceMs: Date.parse(t1) }))).text).toBe('hello\n');
    expect(since.asked[0]).toMatchObject({ timestamps: true, since: Math.floor(Date.parse(t1) / 1000) });
  });

  it('is NotFound for an unknown container before any stream is opened', async () => {
    const { api, asked } = engine([]);
    await expect(dockerLogText(api, 'unix:///x', 'gone', {})).rejects.toMatchObject({ code: 'NotFound' });
    expect(asked).toEqual([]);
  });
});

describe('dockerLogs of a container with a terminal (v1 tty): the engine’s stream as it is, no frames', () => {
  const t1 = '2026-12-05T05:24:06.123456789Z';
  const t2 = '2026-12-05T05:24:07.000000001Z';

  it('reads stdout lines each after its time, a line cut between chunks carried over, the last one without its end', async () => {
    const bytes = Buffer.from(`${t1} $ ls\r\n${t2} bin  etc\r\n${t2} $ `);
    const chunks = Array.from({ length: Math.ceil(bytes.length / 5) }, (_, i) => bytes.subarray(i * 5, i * 5 + 5));
    const lines = await all(await dockerLogs(engine(chunks, { tty: true }).api, 'unix:///x', 'c1', {}));
    expect(text(lines)).toEqual(['stdout:$ ls\r\n', 'stdout:bin  etc\r\n', 'stdout:$ ']);
    expect(lines.map((l) => formatLogTime(l))).toEqual([t1, t2, t2]);
  });

  it('hands its text on as the engine sent it, asked without times', async () => {
    const chunks = [Buffer.from('$ ls\r\nbin'), Buffer.from('  etc\r\n')];
    const { api, asked } = engine(chunks, { tty: true });
    let whole = '';
    for await (const chunk of await dockerLogText(api, 'unix:///x', 'c1', {})) whole += Buffer.from(chunk).toString();
    expect(whole).toBe('$ ls\r\nbin  etc\r\n');
    expect(asked[0]).toMatchObject({ timestamps: false });
  });
});
