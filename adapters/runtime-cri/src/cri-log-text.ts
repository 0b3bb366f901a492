import { cutAtLimit, formatLogTime, parseLogTime, type LogTextOptions } from '@kubelet-ts/core';
import { criLogBlocks, criLogTarget, type CriLogStatus, type CriLogTarget } from './cri-logs.js';

/** The logs contract's text read on a CRI runtime (`ContainerLogSource.text`): the status first, as for `criLogs`. */
export async function criLogText(id: string, options: LogTextOptions, status: CriLogStatus): Promise<AsyncIterable<Uint8Array>> {
  return criLogTextOf(await criLogTarget(id, status), options);
}

const NEWLINE = 0x0a;
const SPACE = 0x20;
const F = 0x46;
const P = 0x50;
const Z = 0x5a;
const DOT = 0x2e;
/** `2026-12-04T03:24:06.123456789Z`: the length of the time both containerd and the kubelet write. */
const CANONICAL = 30;

/**
 * A CRI log file's output as text, as `logText` would give it from `criLogLines`, without a line
 * object a line: each block of whole entries (`criLogBlocks`) has its prefixes cut out in place
 * (`<time> <stream> <tag> `, and a `P` entry's newline), the contents left joined, and is handed
 * on as one chunk. With `timestamps` each content follows its time and a space (the file's own
 * bytes when it wrote nine digits in UTC). Entries the line read skips (not in the format, a time
 * that does not parse) are skipped; `sinceMs` is checked entry by entry; `limitBytes` counts the
 * text and ends the read (`cutAtLimit`).
 */
export function criLogTextOf(target: CriLogTarget, options: LogTextOptions): AsyncIterable<Uint8Array> {
  return cutAtLimit(blockTexts(target, options), options.limitBytes);
}

/** Each block's text (see `criLogTextOf`), the limit not applied. */
async function* blockTexts(target: CriLogTarget, options: LogTextOptions): AsyncGenerator<Uint8Array> {
  const { signal, sinceMs, timestamps = false } = options;
  const times = new EntryTimes();
  for await (const block of criLogBlocks(target, options)) {
    // Without times the text is never longer than the entries, so it is written over them; with
    // them a time the file wrote short is written whole (at most one byte more an entry).
    const out = timestamps ? Buffer.allocUnsafe(block.length + Math.ceil(block.length / 16) + 64) : block;
    let size = 0;
    let start = 0;
    for (let newline = block.indexOf(NEWLINE); newline !== -1; newline = block.indexOf(NEWLINE, start)) {
      const from = start;
      start = newline + 1;
      // Where the time of nine digits ends; else (a fraction written short, a zone) found.
      let space = from + CANONICAL;
      if (block[space] !== SPACE || block[space - 1] !== Z) {
        space = block.indexOf(SPACE, from);
        if (space === -1 || space >= newline) continue;
      }
      const tagAt = space + 8; // after "stdout " or "stderr "
      if (!isStream(block, space + 1) || block[tagAt - 1] !== SPACE || tagAt >= newline) continue;
      const tag = block[tagAt];
      if ((tag !== F && tag !== P) || (tagAt + 1 < newline && block[tagAt + 1] !== SPACE)) continue;
      const time = times.of(block, from, space);
      if (time === undefined || (sinceMs !== undefined && time < sinceMs)) continue;
      if (timestamps) size = writeTime(block, from, space, out, size);
      const text = Math.min(tagAt + 2, newline);
      const end = tag === F ? newline + 1 : newline;
      if (timestamps) size += block.copy(out, size, text, end);
      else {
        out.copyWithin(size, text, end);
        size += end - text;
      }
    }
    if (size === 0) continue;
    yield out.subarray(0, size);
    if (signal?.aborted === true) return;
  }
}

/**
 * Writes the entry's time (`from` to `to`, one `EntryTimes` read) at `size` of `out` as
 * `formatLogTime` writes it, and a space: a UTC time by its bytes, its fraction padded to nine
 * digits; a time with a zone through a string. Returns the new size.
 */
function writeTime(block: Buffer, from: number, to: number, out: Buffer, size: number): number {
  if (block[to - 1] !== Z) return size + out.write(`${formatLogTime(parseLogTime(block.toString('latin1', from, to))!)} `, size, 'latin1');
  const fraction = block[from + 19] === DOT;
  let at = size + block.copy(out, size, from, fraction ? to - 1 : from + 19);
  if (!fraction) out[at++] = DOT;
  while (at < size + CANONICAL - 1) out[at++] = 0x30;
  out[at++] = Z;
  out[at++] = SPACE;
  return at;
}

/** `stdout` or `stderr` at `at`. */
function isStream(block: Buffer, at: number): boolean {
  if (block[at] !== 0x73 || block[at + 1] !== 0x74 || block[at + 2] !== 0x64) return false; // "std"
  const a = block[at + 3];
  const b = block[at + 4];
  const c = block[at + 5];
  return (a === 0x6f && b === 0x75 && c === 0x74) || (a === 0x65 && b === 0x72 && c === 0x72); // "out", "err"
}

/**
 * The times of entries, in milliseconds, as `parseLogTime` reads them, with the second of the last
 * UTC time kept as bytes: an entry in that second is read by comparing 20 bytes and reading its
 * digits, without a string. Entries come many to a second.
 */
class EntryTimes {
  private second: Uint8Array | undefined;
  private secondMs = 0;

  of(block: Buffer, from: number, to: number): number | undefined {
    // `2026-12-04T03:24:06.` of the kept second, then one to nine digits and `Z` (containerd
    // writes Go's RFC 3339 nano: the fraction's trailing zeros left out).
    const length = to - from;
    if (length > 21 && length <= CANONICAL && block[to - 1] === Z && this.sameSecond(block, from)) {
      let ms = 0;
      for (let i = from + 20; i < to - 1; i++) {
        const digit = block[i]! - 48;
        if (digit < 0 || digit > 9) return undefined;
        if (i < from + 23) ms = ms * 10 + digit;
      }
      for (let i = to - 1; i < from + 23; i++) ms *= 10; // `06.5Z` is 500 ms
      return this.secondMs + ms;
    }
    const parsed = parseLogTime(block.toString('latin1', from, to));
    if (parsed === undefined) return undefined;
    if (length > 21 && block[to - 1] === Z && block[from + 19] === DOT) {
      this.second = Buffer.from(block.subarray(from, from + 20));
      this.secondMs = parsed.time - (((parsed.time % 1000) + 1000) % 1000);
    }
    return parsed.time;
  }

  /** Whether the 20 bytes at `from` are the kept second's, compared from its last digit (the one that changes). */
  private sameSecond(block: Buffer, from: number): boolean {
    const second = this.second;
    if (second === undefined) return false;
    for (let i = 19; i >= 0; i--) if (block[from + i] !== second[i]) return false;
    return true;
  }
}
