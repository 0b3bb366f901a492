import { describe, expect, it } from '@jest/globals';
import { PassThrough } from 'node:stream';
import { systemClock, type Clock } from '@kubelet-ts/core';
import { collectExecOutput } from '../src/mapping.js';

/** One exec stream frame: stdout (1), the payload's length, the payload. */
const frame = (text: string) => {
  const payload = Buffer.from(text);
  const header = Buffer.alloc(8);
  header.writeUInt8(1, 0);
  header.writeUInt32BE(payload.length, 4);
  return Buffer.concat([header, payload]);
};

describe('collectExecOutput (no engine)', () => {
  it('reads the frames of a stream until it ends', async () => {
    const stream = new PassThrough();
    const output = collectExecOutput(stream, 5000, systemClock);
    stream.write(frame('probe-'));
    stream.end(frame('ok\n'));
    await expect(output).resolves.toBe('probe-ok\n');
  });

  it('gives up when the clock it is given says the deadline passed', async () => {
    const asked: number[] = [];
    // The deadline falls due at once, whatever it is: only the injected clock can make it so.
    const clock: Clock = { ...systemClock, setTimeout: (callback, ms) => (asked.push(ms), systemClock.setTimeout(callback, 0)) };
    const stream = new PassThrough();
    await expect(collectExecOutput(stream, 3_600_000, clock)).resolves.toBeUndefined();
    expect(asked).toEqual([3_600_000]);
    expect(stream.destroyed).toBe(true);
  });
});
