import { describe, expect, it } from '@jest/globals';
import { batched } from '../src/container-logs-route.js';

const line = (text: string) => new TextEncoder().encode(text);

async function chunks(source: AsyncIterable<Uint8Array>): Promise<string[]> {
  const out: string[] = [];
  for await (const chunk of batched(source)) out.push(Buffer.from(chunk).toString());
  return out;
}

describe('the log route sends the lines that are ready together as one chunk', () => {
  it('joins a burst, and sends a line that comes alone at once', async () => {
    async function* source() {
      yield line('a\n');
      yield line('b\n');
      yield line('c\n');
      await new Promise((resolve) => setTimeout(resolve, 20));
      yield line('d\n');
    }
    expect(await chunks(source())).toEqual(['a\nb\nc\n', 'd\n']);
  });

  it('cuts chunks at 64 KiB', async () => {
    async function* source() {
      for (let i = 0; i < 200; i++) yield line(`${'x'.repeat(1023)}\n`);
    }
    const sent = await chunks(source());
    expect(sent.join('')).toBe(`${'x'.repeat(1023)}\n`.repeat(200));
    expect(sent.map((c) => c.length)).toEqual([65536, 65536, 65536, 8192]);
  });

  it('sends what came before a failure, then fails; and lets go of its source when its reader stops', async () => {
    async function* failing() {
      yield line('partial\n');
      throw new Error('engine gone');
    }
    const seen: string[] = [];
    await expect(
      (async () => {
        for await (const chunk of batched(failing())) seen.push(Buffer.from(chunk).toString());
      })(),
    ).rejects.toThrow('engine gone');
    expect(seen).toEqual(['partial\n']);
    let closed = false;
    async function* endless() {
      try {
        for (;;) {
          yield line('y\n');
          await new Promise((resolve) => setTimeout(resolve, 1));
        }
      } finally {
        closed = true;
      }
    }
    for await (const _chunk of batched(endless())) break;
    expect(closed).toBe(true);
  });
});
