import { watch, type FSWatcher } from 'node:fs';
import { open, readdir, stat, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { KubeletError, parseLogTime, type LogLine, type LogReadOptions, type LogStream } from '@kubelet-ts/core';
import type { ContainerStatus } from './cri-api.js';
import { ADAPTER } from './errors.js';

/** What the reader needs of a container: where its log file is, and whether it still runs. */
export interface CriLogTarget {
  readonly id: string;
  /** The file the runtime writes (ContainerStatus `log_path`, absolute). */
  readonly path: string;
  /** Whether the container still runs (ContainerStatus, asked when the reader reaches the end). */
  running(): Promise<boolean>;
}

/** The most read at a time, forward, by a whole read: the bound of what is held ahead of the reader. */
const BLOCK = 256 * 1024;
/**
 * The most read at a time by a follower: one near the end reads a few writes at a time, and ten of
 * them under a flood held 256 KiB blocks twice over (one read ahead) for no speed they could use.
 */
const FOLLOW_BLOCK = 64 * 1024;
/** The least read at a time forward, and the block read backward (`tailLines`). */
const SMALL_BLOCK = 16 * 1024;
/** The longest wait between two looks at a followed file, if no change is signalled (a missed inotify event). */
const POLL_MS = 250;
const NEWLINE = 0x0a;

/**
 * The logs contract on a CRI runtime: the container's status first (`NotFound`, and the file's
 * path), then its log file read by `criLogLines` from the first `next()`.
 */
export async function criLogs(id: string, options: LogReadOptions, status: CriLogStatus): Promise<AsyncIterable<LogLine>> {
  return criLogLines(await criLogTarget(id, status), options);
}

/** A container's status, as the log reader asks it. */
export type CriLogStatus = (id: string) => Promise<Pick<ContainerStatus, 'logPath' | 'state'>>;

/** Where container `id` logs (`Unsupported` when it has no file), and how to ask whether it still runs. */
export async function criLogTarget(id: string, status: CriLogStatus): Promise<CriLogTarget> {
  const { logPath } = await status(id);
  if (logPath === '')
    throw new KubeletError(
      'Unsupported',
      `logs of ${id}: the runtime writes no log file for it (its sandbox was run without a log directory)`,
      {
        adapter: ADAPTER,
      },
    );
  const running = async () => {
    try {
      return (await status(id)).state === 'CONTAINER_RUNNING';
    } catch (error) {
      if (error instanceof KubeletError && error.code === 'NotFound') return false;
      throw error;
    }
  };
  return { id, path: logPath, running };
}

/**
 * A container's output from the log file the runtime writes in the CRI format, as the kubelet reads
 * it (`kuberuntime/logs`): one line per entry, `<RFC 3339 nano> <stdout|stderr> <P|F> <text>`, `P`
 * for a part of a line the runtime cut (no `\n` of its own), `F` for a whole one. An entry that is
 * not in the format (a file cut short) is skipped. The file is read by `criLogBlocks`.
 */
export async function* criLogLines(target: CriLogTarget, options: LogReadOptions): AsyncGenerator<LogLine> {
  const { signal, sinceMs } = options;
  let left = options.limitBytes ?? Number.POSITIVE_INFINITY;
  for await (const block of criLogBlocks(target, options)) {
    let start = 0;
    for (let newline = block.indexOf(NEWLINE); newline !== -1; newline = block.indexOf(NEWLINE, start)) {
      const line = entry(block, start, newline);
      start = newline + 1;
      if (line === undefined || (sinceMs !== undefined && line.time < sinceMs)) continue;
      const content = line.content.length > left ? line.content.subarray(0, left) : line.content;
      left -= content.length;
      yield content === line.content ? line : { ...line, content };
      if (left <= 0 || signal?.aborted === true) return;
    }
  }
}

/**
 * The entries of a CRI log file in blocks of whole entries (each ends with a newline), read as
 * consumed; each block is a buffer of its own, the reader's to change. `tailLines` found by reading
 * back from the end; `follow` waits on the file (inotify, and a look every 250 ms), goes on to the
 * new file when the current one was rotated (read to the end of the old one first), and ends once
 * the container no longer runs and the file is read to its end. Only the current file is read, as
 * the kubelet does: rotated files are the shippers'.
 */
export async function* criLogBlocks(target: CriLogTarget, options: LogReadOptions): AsyncGenerator<Buffer> {
  const { signal, follow = false } = options;
  const aborted = () => signal?.aborted === true;
  if (aborted()) return;
  let file = await openLog(target);
  let changes = follow ? new FileChanges(target.path) : undefined;
  let ahead:
    | { readonly block: Buffer; readonly offset: number; readonly asked: number; readonly early: boolean; readonly read: Promise<number> }
    | undefined;
  try {
    const size = (await file.stat()).size;
    let position = options.tailLines === undefined ? 0 : await tailStart(file, size, options.tailLines);
    const end = follow ? Number.POSITIVE_INFINITY : size;
    // The start of an entry not yet ended, carried to the front of the next block.
    let pending: Buffer = Buffer.alloc(0);
    // What a read asks for: doubled while reads fill it (a whole read, a follower behind), halved
    // when they do not (a follower at the end, given a line at a time): never more than BLOCK
    // (FOLLOW_BLOCK for a follower), and 16 KiB for a follower of a quiet container.
    let want = SMALL_BLOCK;
    const most = follow ? FOLLOW_BLOCK : BLOCK;
    // One read ahead: the next block is read while the reader works on this one (a whole read
    // otherwise waits on the disk and on its reader in turn). At most two blocks are held.
    // A read made `early` (before the reader came back) that found the end is not believed: the
    // file may have grown, or been rotated, since; it is made again.
    const readNext = (early = false): NonNullable<typeof ahead> => {
      const block = Buffer.allocUnsafe(pending.length + want);
      const offset = pending.copy(block);
      const length = Math.min(want, end - position);
      const asked = want;
      const read = length <= 0 ? Promise.resolve(0) : file.read(block, offset, length, position).then((r) => r.bytesRead);
      return { block, offset, asked, early, read };
    };
    ahead = readNext();
    for (;;) {
      const { block, offset, asked, early, read }: NonNullable<typeof ahead> = ahead;
      ahead = undefined;
      const bytesRead = await read;
      if (bytesRead === 0 && early && position < end) {
        ahead = readNext();
        continue;
      }
      want = bytesRead === asked ? Math.min(asked * 2, most) : Math.max(asked / 2, SMALL_BLOCK);
      if (bytesRead > 0) {
        position += bytesRead;
        const filled = offset + bytesRead;
        const last = block.lastIndexOf(NEWLINE, filled - 1);
        pending = block.subarray(last + 1, filled);
        ahead = readNext(true);
        if (last !== -1) {
          yield block.subarray(0, last + 1);
          if (aborted()) return;
        }
        continue;
      }
      if (changes === undefined || position >= end) return;
      // At the end of what is written: a container that no longer runs has written its last line
      // (read once more, for what came between the read and the look); else wait for more.
      if (!(await target.running())) {
        const { size: last } = await file.stat();
        if (last <= position) return;
        ahead = readNext();
        continue;
      }
      // Rotated (renamed, and the runtime asked to reopen): this file is read to its end, so on to the next one.
      const next = await nextFile(target.path, file);
      if (next !== undefined) {
        // The runtime wrote on to this file until it reopened the path, maybe after the read that
        // found its end: once the path names another file, this one gets nothing more, so what is
        // left of it is read first (it was lost under load, between that read and the look).
        if ((await file.stat()).size > position) {
          ahead = readNext();
          continue;
        }
        const opened = await open(next, 'r').catch(() => undefined);
        if (opened !== undefined || next !== target.path) {
          await file.close();
          file = opened ?? (await openLog(target));
          changes.close();
          changes = new FileChanges(next);
          position = 0;
        } // else between the rename and the reopen: a look again
        ahead = readNext();
        continue;
      }
      await changes.next(signal);
      if (aborted()) return;
      ahead = readNext();
    }
  } finally {
    changes?.close();
    // A read ahead the reader did not wait for ends before its file is closed.
    await ahead?.read.catch(() => 0);
    await file.close();
  }
}

async function openLog(target: CriLogTarget): Promise<FileHandle> {
  try {
    return await open(target.path, 'r');
  } catch (error) {
    throw new KubeletError('Unavailable', `logs of ${target.id}: its log file ${target.path} cannot be read: ${(error as Error).message}`, {
      adapter: ADAPTER,
      cause: error,
    });
  }
}

/**
 * Where a follower at the end of `file` goes on, once `path` names another file (a rotation):
 * `path`, or first the newest rotated file when it is not the one read (a follower two rotations
 * behind: the newest rotated file stays plain, see `CriLogRotation`). Undefined while `path` is
 * still the file read (or names none: renamed, not yet reopened). A follower further behind goes on
 * from there: what was gzipped in between is not read, as with the kubelet.
 */
async function nextFile(path: string, file: FileHandle): Promise<string | undefined> {
  const current = await stat(path).catch(() => undefined);
  const reading = (await file.stat()).ino;
  if (current === undefined || current.ino === reading) return undefined;
  const prefix = `${basename(path)}.`;
  const rotated = (await readdir(dirname(path)).catch(() => [] as string[]))
    .filter((name) => name.startsWith(prefix) && !name.endsWith('.gz') && !name.endsWith('.tmp'))
    .sort();
  const newest = rotated.at(-1);
  if (newest === undefined) return path;
  const candidate = join(dirname(path), newest);
  const seen = await stat(candidate).catch(() => undefined);
  return seen === undefined || seen.ino === reading || seen.ino === current.ino ? path : candidate;
}

const SPACE = 0x20;
const F = 0x46;
const P = 0x50;

/**
 * The entry of `buffer` from `start` to the newline at `end`, or undefined when it is not one (a
 * cut-short write). Its content is a view of `buffer` (an F entry's own newline included), never a
 * copy: the reader's per-line cost is what bounds a whole read.
 */
function entry(buffer: Buffer, start: number, end: number): LogLine | undefined {
  const first = buffer.indexOf(SPACE, start);
  if (first === -1 || first >= end) return undefined;
  const stream = streamAt(buffer, first + 1);
  const tagAt = first + 8; // after "stdout " or "stderr "
  if (stream === undefined || buffer[tagAt - 1] !== SPACE || tagAt >= end) return undefined;
  const tag = buffer[tagAt];
  if ((tag !== F && tag !== P) || (tagAt + 1 < end && buffer[tagAt + 1] !== SPACE)) return undefined;
  const time = parseLogTime(buffer.toString('latin1', start, first));
  if (time === undefined) return undefined;
  const text = Math.min(tagAt + 2, end);
  const content = buffer.subarray(text, tag === F ? end + 1 : end);
  return time.nanos === undefined ? { stream, time: time.time, content } : { stream, time: time.time, nanos: time.nanos, content };
}

/** `stdout` or `stderr` at `at`, by its bytes. */
function streamAt(buffer: Buffer, at: number): LogStream | undefined {
  if (buffer[at] !== 0x73 || buffer[at + 1] !== 0x74 || buffer[at + 2] !== 0x64) return undefined; // "std"
  const rest = buffer.toString('latin1', at + 3, at + 6);
  return rest === 'out' ? 'stdout' : rest === 'err' ? 'stderr' : undefined;
}

/** Where the last `lines` whole lines of the file begin: read back from the end, a block at a time. */
async function tailStart(file: FileHandle, size: number, lines: number): Promise<number> {
  if (lines <= 0) return size;
  const block = Buffer.alloc(SMALL_BLOCK);
  let seen = 0;
  let position = size;
  // The file ends with a newline: the last one closes the last line and is not counted as a start.
  let skip = true;
  while (position > 0) {
    const length = Math.min(SMALL_BLOCK, position);
    position -= length;
    const { bytesRead } = await file.read(block, 0, length, position);
    for (let i = bytesRead - 1; i >= 0; i--) {
      if (block[i] !== NEWLINE) continue;
      if (skip) {
        skip = false;
        continue;
      }
      seen += 1;
      if (seen === lines) return position + i + 1;
    }
    skip = false;
  }
  return 0;
}

/**
 * Wakes a follower when the file changes (inotify), or after `POLL_MS` at the latest. The watch is
 * on only while the follower waits at the end of the file: one kept on for a reader that is behind
 * (or stalled) woke the agent at every write of a busy container, half a core for nothing.
 */
class FileChanges {
  private watcher: FSWatcher | undefined;
  private wake: (() => void) | undefined;

  constructor(private readonly path: string) {}

  next(signal: AbortSignal | undefined): Promise<void> {
    if (signal?.aborted === true) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        this.wake = undefined;
        this.unwatch();
        resolve();
      };
      const timer = setTimeout(done, POLL_MS);
      this.wake = done;
      signal?.addEventListener('abort', done, { once: true });
      try {
        this.watcher = watch(this.path, { persistent: false }, () => this.wake?.());
        this.watcher.on('error', () => this.unwatch());
      } catch {
        this.watcher = undefined; // polling alone
      }
    });
  }

  close(): void {
    this.wake?.();
    this.unwatch();
  }

  private unwatch(): void {
    this.watcher?.close();
    this.watcher = undefined;
  }
}
