import { describe, expect, it } from '@jest/globals';
import { Readable } from 'node:stream';
import { formatLogTime, type LogLine } from '@kubelet-ts/core';
import type { DockerApi } from '../src/docker-api.js';
import { dockerLogs } from '../src/docker-logs.js';

/** One frame of Docker's multiplexed stream: stream 1 (stdout) or 2 (stderr), then its bytes. */
const frame = (stream: 1 | 2, text: string) => {
  const body = Buffer.from(text);
  const header = Buffer.alloc(8);
  header[0] = stream;
  header.writeUInt32BE(body.length, 4);
  return Buffer.concat([header, body]);
};

/** An engine that answers `logs` with `chunks`, recording what was asked. */
function engine(chunks: readonly Buffer[], answer: { error?: unknown } = {}) {
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
        return {};
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
