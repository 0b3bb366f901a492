import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { appendFile, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { logText, type LogTextOptions } from '@kubelet-ts/core';
import { criLogText, criLogTextOf } from '../src/cri-log-text.js';
import { criLogLines } from '../src/cri-logs.js';

const T = '2026-12-04T03:24:06.123456789Z';
const entry = (stream: 'stdout' | 'stderr', tag: 'F' | 'P', text: string, time = T) => `${time} ${stream} ${tag} ${text}\n`;

async function joined(chunks: AsyncIterable<Uint8Array>): Promise<{ text: string; chunks: number }> {
  let text = '';
  let count = 0;
  for await (const chunk of chunks) {
    text += Buffer.from(chunk).toString();
    count += 1;
  }
  return { text, chunks: count };
}

/** Many seconds, times written short and with a zone, parts of lines, entries the line read skips. */
function mixedFile(entries: number): string {
  let file = '';
  for (let i = 0; i < entries; i++) {
    const second = String(Math.floor(i / 700) % 60).padStart(2, '0');
    const time = `2026-12-04T03:24:${second}.${String(i % 1000).padStart(3, '0')}456789Z`;
    const stream = i % 3 === 0 ? 'stderr' : 'stdout';
    if (i % 997 === 5) file += entry(stream, 'F', `short time ${i}`, `2026-12-04T03:24:${second}.5Z`);
    // As containerd writes them (Go's RFC 3339 nano): a fraction's trailing zeros left out, of every length.
    else if (i % 17 === 3) file += entry(stream, 'F', `trimmed ${i}`, `2026-12-04T03:24:${second}.${'123456789'.slice(0, 1 + (i % 9))}Z`);
    else if (i % 89 === 4) file += entry(stream, 'F', `whole second ${i}`, `2026-12-04T03:24:${second}Z`);
    else if (i % 991 === 7) file += entry(stream, 'F', `zoned ${i}`, `2026-12-04T04:24:${second}.1234+01:00`);
    else if (i % 983 === 11) file += entry(stream, 'F', `no such month ${i}`, `2026-13-04T03:24:${second}.123456789Z`);
    else if (i % 971 === 13) file += 'cut short\n';
    else if (i % 13 === 0) file += entry(stream, 'P', `part ${i} `, time);
    else if (i % 101 === 0) file += entry(stream, 'F', '', time).replace(' F \n', ' F\n');
    else file += entry(stream, 'F', `line ${i} ${'y'.repeat(i % 120)}`, time);
  }
  return file;
}

describe('criLogTextOf: a CRI log file as text, its prefixes cut out of each block', () => {
  let dir: string;
  let path: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-cri-text-'));
    path = join(dir, 'main.log');
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  const stopped = { id: 'c1', running: async () => false };

  it('is exactly the text of the line read, for every option, across blocks', async () => {
    await writeFile(path, mixedFile(20_000));
    const target = { ...stopped, path };
    const cases: LogTextOptions[] = [
      {},
      { timestamps: true },
      { tailLines: 1234 },
      { tailLines: 1234, timestamps: true },
      { sinceMs: Date.parse('2026-12-04T03:24:10Z') },
      { sinceMs: Date.parse('2026-12-04T03:24:10Z'), timestamps: true, tailLines: 5000 },
      { limitBytes: 1 },
      { limitBytes: 65_536 },
      { limitBytes: 100_001, timestamps: true },
      { limitBytes: 10_000_000 },
    ];
    for (const options of cases) {
      const { timestamps: _timestamps, limitBytes: _limit, ...read } = options;
      const expected = await joined(logText(criLogLines(target, read), options));
      const actual = await joined(criLogTextOf(target, options));
      expect({ options, text: actual.text }).toEqual({ options, text: expected.text });
    }
    // The file held every kind of entry: the read was not of an empty text.
    const whole = await joined(criLogTextOf(target, { timestamps: true }));
    expect(whole.text).toContain('2026-12-04T03:24:00.500000000Z short time 5\n');
    expect(whole.text).toContain('2026-12-04T03:24:00.123400000Z zoned 7\n');
    expect(whole.text).toContain(' part 26 2026-12-04T03:24:00.027456789Z line 27 ');
    for (let digits = 1; digits <= 9; digits++)
      expect(whole.text).toMatch(new RegExp(`\\.${'123456789'.slice(0, digits)}0{${9 - digits}}Z trimmed `));
    expect(whole.text).toMatch(/:\d\d\.000000000Z whole second /);
    expect(whole.text).not.toContain('no such month');
    expect(whole.text).not.toContain('cut short');
    // In blocks, not a chunk a line.
    const { size } = await stat(path);
    expect(whole.chunks).toBeLessThanOrEqual(Math.ceil(size / 65_536) + 1);
  });

  it('follows: sees what is written after the read began, and ends once the container stopped', async () => {
    await writeFile(path, entry('stdout', 'F', 'first'));
    let running = true;
    const reader = criLogTextOf({ id: 'c1', path, running: async () => running }, { follow: true, timestamps: true })[
      Symbol.asyncIterator
    ]();
    expect(Buffer.from((await reader.next()).value as Uint8Array).toString()).toBe(`${T} first\n`);
    const next = reader.next();
    await appendFile(path, entry('stderr', 'P', 'half ') + entry('stderr', 'F', 'whole'));
    expect(Buffer.from((await next).value as Uint8Array).toString()).toBe(`${T} half ${T} whole\n`);
    running = false;
    await expect(reader.next()).resolves.toMatchObject({ done: true });
  });

  it('asks the status first: Unsupported without a log path, NotFound as the runtime says it', async () => {
    await expect(criLogText('c1', {}, async () => ({ logPath: '', state: 'CONTAINER_RUNNING' }))).rejects.toMatchObject({
      code: 'Unsupported',
    });
    await writeFile(path, entry('stdout', 'F', 'kept'));
    expect((await joined(await criLogText('c1', {}, async () => ({ logPath: path, state: 'CONTAINER_EXITED' })))).text).toBe('kept\n');
  });
});
