import type { LogLine, LogReadOptions, LogStream } from '@kubelet-ts/core';

/** One container's output and who waits for more of it. */
interface Output {
  readonly lines: LogLine[];
  /** Readers following it, woken by a new line and by the container's end. */
  readonly waiting: Set<() => void>;
}

const encoder = new TextEncoder();

/**
 * What the in-memory runtime's containers printed: tests make a container print (`print`), and
 * `read` serves it by the logs contract (`ContainerLogSource`). Each printed text is cut into
 * lines, each with its stream and the clock's time; a text that does not end in `\n` leaves a
 * part of a line, as a runtime flushing an unterminated write does. A line once printed is never
 * copied: readers walk the container's list as it grows.
 */
export class MemoryLogs {
  private readonly outputs = new Map<string, Output>();
  /** Reads begun and not yet ended (see `openStreams`). */
  private open = 0;

  /** Appends what the container printed on `stream` at `time`, and wakes its followers. */
  print(id: string, stream: LogStream, text: string | Uint8Array, time: number): void {
    const bytes = typeof text === 'string' ? encoder.encode(text) : text;
    const output = this.outputOf(id);
    let start = 0;
    while (start < bytes.length) {
      const newline = bytes.indexOf(0x0a, start);
      const end = newline === -1 ? bytes.length : newline + 1;
      output.lines.push({ stream, time, content: bytes.slice(start, end) });
      start = end;
    }
    this.wake(output);
  }

  /** The container stopped running (exited, or removed): its followers read to the end, then end. */
  ended(id: string): void {
    const output = this.outputs.get(id);
    if (output !== undefined) this.wake(output);
  }

  /** The container is gone, and its output with it; readers already going keep what they walk. */
  forget(id: string): void {
    this.ended(id);
    this.outputs.delete(id);
  }

  /** How many reads have begun (a first `next()`) and not ended: one a reader let go of must not stay open. */
  get openStreams(): number {
    return this.open;
  }

  /**
   * The contract's stream of the container `id` (which the caller made sure exists): it begins at
   * its first `next()` (where `tailLines` counts back from and, without `follow`, where it ends),
   * and `running` says whether more may come.
   */
  read(id: string, options: LogReadOptions, running: () => boolean): AsyncIterable<LogLine> {
    return this.walk(this.outputOf(id), options, running);
  }

  private async *walk(output: Output, options: LogReadOptions, running: () => boolean): AsyncGenerator<LogLine> {
    const { signal, sinceMs, follow = false } = options;
    // A function, so that each look reads the signal anew (it aborts while the read waits).
    const aborted = () => signal?.aborted === true;
    if (aborted()) return;
    this.open += 1;
    const lines = output.lines;
    try {
      const end = follow ? Number.POSITIVE_INFINITY : lines.length;
      let next = options.tailLines === undefined ? 0 : Math.max(0, lines.length - options.tailLines);
      let left = options.limitBytes ?? Number.POSITIVE_INFINITY;
      for (;;) {
        while (next < Math.min(end, lines.length)) {
          if (left <= 0) return;
          const line = lines[next++]!;
          if (sinceMs !== undefined && line.time < sinceMs) continue;
          const content = line.content.length > left ? line.content.subarray(0, left) : line.content;
          left -= content.length;
          yield content === line.content ? line : { ...line, content };
          if (aborted()) return;
        }
        if (!follow || left <= 0 || !running()) return;
        await this.change(output, signal);
        if (aborted()) return;
      }
    } finally {
      this.open -= 1;
    }
  }

  private outputOf(id: string): Output {
    let output = this.outputs.get(id);
    if (output === undefined) {
      output = { lines: [], waiting: new Set() };
      this.outputs.set(id, output);
    }
    return output;
  }

  /** Resolves at the next line or end of `output`, or when `signal` aborts; leaves no listener behind. */
  private change(output: Output, signal: AbortSignal | undefined): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        output.waiting.delete(done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      output.waiting.add(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  private wake(output: Output): void {
    for (const resolve of [...output.waiting]) resolve();
  }
}
