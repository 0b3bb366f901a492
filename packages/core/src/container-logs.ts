/** Which of a container's two output streams a line was printed on. */
export type LogStream = 'stdout' | 'stderr';

/**
 * One line of a container's output, as the runtime keeps it (a line of a CRI log file, a line of a
 * Docker log stream).
 */
export interface LogLine {
  readonly stream: LogStream;
  /** When the runtime took the line in, in milliseconds since the epoch. */
  readonly time: number;
  /**
   * The nanoseconds past `time`'s millisecond (0 to 999,999), when the runtime's clock is that fine:
   * Docker and containerd write nanoseconds, and `formatLogTime` gives them back as they were.
   */
  readonly nanos?: number;
  /**
   * The bytes printed, with the line's `\n` when it is a whole line, without one when it is part of
   * a line (CRI's `P` tag: a long line the runtime cut, or the last output of a container that ended
   * without a newline). The contents of a container's lines, joined in order, are its output.
   */
  readonly content: Uint8Array;
}

/**
 * Where a read of a container's output starts and whether it goes on: the kubelet's `PodLogOptions`
 * (virtual-kubelet's `ContainerLogOpts`) less what is not the runtime's to do. `previous` picks
 * another container (a restart is a new container here), which the agent does before it asks the
 * runtime; `timestamps` is how a reader shows a line, and every line carries its time.
 */
export interface LogReadOptions {
  /**
   * Only the last `tailLines` lines already printed when the read starts (0: none of them; with
   * `follow`, only what comes). Absent: every line.
   */
  readonly tailLines?: number | undefined;
  /** Only lines whose time is at or after this (ms since the epoch). With `tailLines`: the lines both allow. */
  readonly sinceMs?: number | undefined;
  /** Go on yielding lines as they are printed, until the container ends or `signal` aborts. */
  readonly follow?: boolean | undefined;
  /** At most this many bytes of content in all: the line that reaches it is cut there, and the read ends. */
  readonly limitBytes?: number | undefined;
  /** Ends the read (a `follow` above all): the stream then returns at once, a pending `next()` included. */
  readonly signal?: AbortSignal | undefined;
}

/**
 * An optional power of a runtime (`capabilities.logs`): what its containers printed, read from a
 * point and, optionally, followed. Without it the agent's log routes answer 501.
 *
 * The contract:
 * - `logs(id, options)` rejects with `NotFound` for an unknown container (and `Unavailable` when the
 *   runtime cannot be reached), and otherwise resolves with the stream. The stream holds nothing
 *   (no connection, no file) until its first `next()`: a stream that is never read leaks nothing,
 *   and "already printed" (for `tailLines`, and the end of a read without `follow`) means printed
 *   by then.
 * - Lines come in the order the runtime took them in, stdout and stderr interleaved as printed.
 *   Whatever its state, a container that is not removed keeps its output (an exited one included).
 * - Without `follow`, the stream ends after the last line already printed. With it, it goes on,
 *   and ends once the container is not running (or is removed) and every line it printed has been
 *   given: at once, after its lines, for a container that has already ended.
 * - It ends early when `signal` aborts, and when the reader stops (`return()` on the iterator,
 *   `break` out of `for await`); either way it lets go of what it holds.
 * - Back-pressure: a stream reads no further ahead of its reader than a bounded buffer (a paused
 *   engine stream, a file read in blocks); a reader that stops reading stops the reading, and a
 *   container's whole output is never held in memory.
 * - A runtime connection lost in the middle throws a `KubeletError` (`Unavailable`) from `next()`.
 */
export interface ContainerLogSource {
  logs(id: string, options?: LogReadOptions): Promise<AsyncIterable<LogLine>>;
  /**
   * Optional: the same read as the text a reader shows (`kubectl logs`, the agent's
   * `/containerLogs`), in blocks: exactly `logText(await logs(id, options), options)`, without a
   * line object a line. A runtime declares it when it can hand on its output by the block (the
   * content of a CRI log file with the prefixes cut out in place, the payloads of Docker's
   * multiplexed stream): the hot path of a whole read, where a line object a line bounded the
   * agent to a fraction of what the engine reads. Rejects and ends as `logs` does, holds nothing
   * until its first `next()`, and reads no further ahead than a bounded block.
   */
  text?(id: string, options?: LogTextOptions): Promise<AsyncIterable<Uint8Array>>;
}

/** A read shown as text: `LogReadOptions`, how each line is shown, and `limitBytes` counting the text. */
export interface LogTextOptions extends LogReadOptions {
  /** Each line after its time (`formatLogTime`) and a space, as `kubectl logs --timestamps` shows it. */
  readonly timestamps?: boolean | undefined;
  /** At most this many bytes of text in all, the times included (as the kubelet counts `limitBytes`). */
  readonly limitBytes?: number | undefined;
}

/**
 * The text of `lines` as a reader shows it: their contents joined, each after `<time> ` with
 * `timestamps`; cut at `limitBytes` bytes of text (`cutAtLimit`), and then the read is ended. What
 * a runtime's `text` gives for the same read.
 */
export function logText(lines: AsyncIterable<LogLine>, options: LogTextOptions = {}): AsyncIterable<Uint8Array> {
  return cutAtLimit(rendered(lines, options.timestamps === true), options.limitBytes);
}

async function* rendered(lines: AsyncIterable<LogLine>, timestamps: boolean): AsyncGenerator<Uint8Array> {
  for await (const line of lines) yield timestamps ? Buffer.concat([Buffer.from(`${formatLogTime(line)} `), line.content]) : line.content;
}

/**
 * `chunks` cut at `limitBytes` bytes in all (`LogTextOptions.limitBytes`): the chunk that reaches
 * it is cut there and the read ends, letting go of its source (a file closed, an engine's request
 * destroyed). Without a limit, `chunks` as they are.
 */
export function cutAtLimit(chunks: AsyncIterable<Uint8Array>, limitBytes: number | undefined): AsyncIterable<Uint8Array> {
  return limitBytes === undefined ? chunks : cut(chunks, limitBytes);
}

async function* cut(chunks: AsyncIterable<Uint8Array>, limitBytes: number): AsyncGenerator<Uint8Array> {
  let left = limitBytes;
  if (left <= 0) return;
  for await (const chunk of chunks) {
    if (chunk.length >= left) {
      yield chunk.subarray(0, left);
      return;
    }
    left -= chunk.length;
    yield chunk;
  }
}

/**
 * A container's output as text (see `ContainerLogSource.text`): the runtime's own block read when
 * it has one, else its lines rendered by `logText`.
 */
export async function readLogText(
  source: ContainerLogSource,
  id: string,
  options: LogTextOptions = {},
): Promise<AsyncIterable<Uint8Array>> {
  if (source.text !== undefined) return source.text(id, options);
  // Content never outgrows its text, so the text's limit bounds the lines read too.
  const { timestamps: _timestamps, ...read } = options;
  return logText(await source.logs(id, read), options);
}

/**
 * A line's time as the kubelet writes it beside a line (`--timestamps`; the CRI log format's first
 * field): RFC 3339 in UTC with nine fractional digits, `2026-12-04T03:24:06.123456789Z`.
 */
export function formatLogTime(line: Pick<LogLine, 'time' | 'nanos'>): string {
  const iso = new Date(Math.floor(line.time)).toISOString(); // …T03:24:06.123Z
  const nanos = String(Math.trunc(line.nanos ?? 0)).padStart(6, '0');
  return `${iso.slice(0, -1)}${nanos}Z`;
}

// Never a prefix of a timestamp until a first one is parsed the long way.
let lastSecond = { key: '\u0000', ms: Number.NaN };
const RFC3339 = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/;

/**
 * The time of an RFC 3339 timestamp with up to nine fractional digits, as Docker (`timestamps=1`)
 * and CRI log files write them, to the nanosecond; `undefined` for anything else. The inverse of
 * `formatLogTime`.
 */
export function parseLogTime(text: string): Pick<LogLine, 'time' | 'nanos'> | undefined {
  // The hot path of a log read: the form both engines write (nine digits, UTC) in a second already
  // seen, read digit by digit. Lines come many to a second.
  if (text.length === 30 && text.charCodeAt(19) === 46 && text.charCodeAt(29) === 90 && text.startsWith(lastSecond.key)) {
    let ms = 0;
    let nanos = 0;
    for (let i = 20; i < 29; i++) {
      const digit = text.charCodeAt(i) - 48;
      if (digit < 0 || digit > 9) return undefined;
      if (i < 23) ms = ms * 10 + digit;
      else nanos = nanos * 10 + digit;
    }
    return nanos === 0 ? { time: lastSecond.ms + ms } : { time: lastSecond.ms + ms, nanos };
  }
  const match = RFC3339.exec(text);
  if (match === null) return undefined;
  const [, seconds, fraction = '', zone] = match;
  const whole = Date.parse(`${seconds}${zone}`);
  // Kept for the next line (the fast path above takes UTC seconds only).
  if (zone === 'Z' && !Number.isNaN(whole)) lastSecond = { key: `${seconds}.`, ms: whole };
  if (Number.isNaN(whole)) return undefined;
  const digits = fraction.padEnd(9, '0');
  const nanos = Number(digits.slice(3));
  return { time: whole + Number(digits.slice(0, 3)), ...(nanos === 0 ? {} : { nanos }) };
}
