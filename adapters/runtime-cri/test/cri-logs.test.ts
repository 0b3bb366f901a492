import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { appendFile, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { formatLogTime, type LogLine } from '@kubelet-ts/core';
import { criLogLines, criLogs } from '../src/cri-logs.js';

const T = '2026-12-04T03:24:06.123456789Z';
const entry = (stream: 'stdout' | 'stderr', tag: 'F' | 'P', text: string, time = T) => `${time} ${stream} ${tag} ${text}\n`;
const text = (lines: readonly LogLine[]) => lines.map((l) => `${l.stream}:${Buffer.from(l.content).toString()}`);
async function all(stream: AsyncIterable<LogLine>): Promise<LogLine[]> {
  const lines: LogLine[] = [];
  for await (const line of stream) lines.push(line);
  return lines;
}

describe('criLogLines: the CRI log file, read as the kubelet reads it', () => {
  let dir: string;
  let path: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-cri-logs-'));
    path = join(dir, 'main.log');
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  const stopped = { id: 'c1', running: async () => false };

  it('reads F lines whole and P lines as parts, both streams, each with its time; skips a cut-short entry', async () => {
    await writeFile(
      path,
      entry('stdout', 'F', 'hello') + entry('stderr', 'P', 'long ') + entry('stderr', 'F', 'line') + 'garbage\n' + entry('stdout', 'F', ''),
    );
    const lines = await all(criLogLines({ ...stopped, path }, {}));
    expect(text(lines)).toEqual(['stdout:hello\n', 'stderr:long ', 'stderr:line\n', 'stdout:\n']);
    expect(formatLogTime(lines[0]!)).toBe(T);
  });

  it('finds the last lines by reading back from the end, across blocks', async () => {
    const many = Array.from({ length: 5000 }, (_, i) => entry('stdout', 'F', `line-${i}-${'x'.repeat(40)}`)).join('');
    await writeFile(path, many);
    const lines = await all(criLogLines({ ...stopped, path }, { tailLines: 3 }));
    expect(text(lines).map((l) => l.slice(0, 16))).toEqual(['stdout:line-4997', 'stdout:line-4998', 'stdout:line-4999']);
    expect(await all(criLogLines({ ...stopped, path }, { tailLines: 0 }))).toEqual([]);
    expect(await all(criLogLines({ ...stopped, path }, { tailLines: 9999 }))).toHaveLength(5000);
  });

  it('leaves out lines before sinceMs, and cuts at limitBytes', async () => {
    await writeFile(path, entry('stdout', 'F', 'early', '2026-12-04T03:00:00.000000000Z') + entry('stdout', 'F', 'late-and-long'));
    expect(text(await all(criLogLines({ ...stopped, path }, { sinceMs: Date.parse('2026-12-04T03:10:00Z') })))).toEqual([
      'stdout:late-and-long\n',
    ]);
    expect(text(await all(criLogLines({ ...stopped, path }, { limitBytes: 9 })))).toEqual(['stdout:early\n', 'stdout:lat']);
  });

  it('follows: sees a line written after the read began, and ends once the container stopped and the file is read', async () => {
    await writeFile(path, entry('stdout', 'F', 'first'));
    let running = true;
    const reader = criLogLines({ id: 'c1', path, running: async () => running }, { follow: true })[Symbol.asyncIterator]();
    expect(text([(await reader.next()).value as LogLine])).toEqual(['stdout:first\n']);
    const second = reader.next();
    await appendFile(path, entry('stdout', 'F', 'second'));
    expect(text([(await second).value as LogLine])).toEqual(['stdout:second\n']);
    await appendFile(path, entry('stderr', 'F', 'last words'));
    running = false;
    expect(text([(await reader.next()).value as LogLine])).toEqual(['stderr:last words\n']);
    expect((await reader.next()).done).toBe(true);
  });

  it('follows across a rotation: reads the renamed file to its end, then the new one the runtime opened at the path', async () => {
    await writeFile(path, entry('stdout', 'F', 'one'));
    let running = true;
    const reader = criLogLines({ id: 'c1', path, running: async () => running }, { follow: true })[Symbol.asyncIterator]();
    expect(text([(await reader.next()).value as LogLine])).toEqual(['stdout:one\n']);
    const next = reader.next();
    // The runtime writes one more line to the file after it was renamed, before it reopens.
    await rename(path, `${path}.20261204-032406`);
    await appendFile(`${path}.20261204-032406`, entry('stdout', 'F', 'two'));
    await writeFile(path, entry('stderr', 'F', 'three'));
    expect(text([(await next).value as LogLine])).toEqual(['stdout:two\n']);
    expect(text([(await reader.next()).value as LogLine])).toEqual(['stderr:three\n']);
    const after = reader.next();
    await appendFile(path, entry('stdout', 'F', 'four'));
    expect(text([(await after).value as LogLine])).toEqual(['stdout:four\n']);
    running = false;
    expect(await reader.next()).toMatchObject({ done: true });
  });

  it('follows a reader two rotations behind through the newest rotated file, then on to the current one', async () => {
    await writeFile(path, entry('stdout', 'F', 'one'));
    let running = true;
    const reader = criLogLines({ id: 'c1', path, running: async () => running }, { follow: true })[Symbol.asyncIterator]();
    expect(text([(await reader.next()).value as LogLine])).toEqual(['stdout:one\n']);
    // Two rotations while the reader does not read: the first rotated file is gzipped (gone by
    // name), the second is the newest rotated, plain.
    await rename(path, `${path}.20261204-032406`);
    await appendFile(`${path}.20261204-032406`, entry('stdout', 'F', 'two'));
    await writeFile(path, entry('stdout', 'F', 'three'));
    await rm(`${path}.20261204-032406`);
    await rename(path, `${path}.20261204-032407`);
    await appendFile(`${path}.20261204-032407`, entry('stdout', 'F', 'four'));
    await writeFile(path, entry('stdout', 'F', 'five'));
    const seen: string[] = [];
    for (let i = 0; i < 4; i++) seen.push(...text([(await reader.next()).value as LogLine]));
    expect(seen).toEqual(['stdout:two\n', 'stdout:three\n', 'stdout:four\n', 'stdout:five\n']);
    running = false;
    expect(await reader.next()).toMatchObject({ done: true });
  });

  it('ends a follow at once when its signal aborts', async () => {
    await writeFile(path, '');
    const abort = new AbortController();
    const reader = criLogLines({ id: 'c1', path, running: async () => true }, { follow: true, signal: abort.signal })[
      Symbol.asyncIterator
    ]();
    const pending = reader.next();
    abort.abort();
    expect((await pending).done).toBe(true);
  });

  it('criLogs: NotFound from the status, Unsupported without a log path, Unavailable for a file that is gone', async () => {
    const notFound = Object.assign(new Error('gone'), { code: 'NotFound' });
    await expect(criLogs('c1', {}, async () => Promise.reject(notFound))).rejects.toBe(notFound);
    await expect(criLogs('c1', {}, async () => ({ logPath: '', state: 'CONTAINER_RUNNING' }))).rejects.toMatchObject({
      code: 'Unsupported',
    });
    const stream = await criLogs('c1', {}, async () => ({ logPath: join(dir, 'missing.log'), state: 'CONTAINER_EXITED' }));
    await expect(all(stream)).rejects.toMatchObject({ code: 'Unavailable' });
  });
});
