import { createReadStream, createWriteStream, statSync } from 'node:fs';
import { readdir, rename, rm, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { Labels, type ContainerEvent, type Logger } from '@kubelet-ts/core';
import type { CriApi } from './cri-api.js';

/** The kubelet's `--container-log-max-size`, `--container-log-max-files` and `--container-log-monitor-interval`. */
export interface LogRotationPolicy {
  /** A file is rotated once it is at least this big. */
  readonly maxSizeBytes: number;
  /** The files kept per container, the one being written included (at least 2). */
  readonly maxFiles: number;
  /** How often the files are looked at. Default 10 s. */
  readonly intervalMs?: number;
}

/** What rotation needs of the runtime. */
export interface RotationTarget {
  /** The running containers of ours and the log file each is written to. */
  logFiles(): Promise<ReadonlyArray<{ readonly id: string; readonly path: string }>>;
  /** CRI `ReopenContainerLog`: the runtime closes the renamed file and opens a new one at the path. */
  reopen(id: string): Promise<void>;
}

/**
 * The rotation of a CRI runtime's container log files as `policy` says (none: `false`), started,
 * with the list it rotates from, which the runtime tells of its changes (`target.changed()`).
 */
export function criLogRotation(
  cri: CriApi,
  call: <T>(what: string, fn: (deadline: number) => Promise<T>) => Promise<T>,
  policy: LogRotationPolicy | false,
  logger: Logger,
): { readonly rotation: CriLogRotation; readonly target: CriRotationTarget } | undefined {
  if (policy === false) return undefined;
  const target = rotationTarget(cri, call);
  const rotation = new CriLogRotation(target, policy, logger);
  rotation.start();
  return { rotation, target };
}

/** `events` as they come, each telling `target` (if any) that the running containers changed. */
export async function* tellingRotation(
  events: AsyncIterable<ContainerEvent>,
  target: CriRotationTarget | undefined,
): AsyncIterable<ContainerEvent> {
  for await (const event of events) {
    target?.changed();
    yield event;
  }
}

/** The rotation's view of a CRI runtime, told when the runtime's containers may have changed. */
export interface CriRotationTarget extends RotationTarget {
  /** A container of ours started, stopped, was removed or ended: the next pass lists again. */
  changed(): void;
}

/**
 * How long the running containers listed for the rotation are kept while nothing says they
 * changed: the kubelet lists every 10 s, which for 200 containers was most of an idle agent's CPU
 * on containerd (the evented relist had taken the same list out of its sync loop).
 */
const RELIST_EVERY_MS = 60_000;

/**
 * The rotation's view of a CRI runtime: its running containers of ours, each with the log file
 * its status names; `call` runs a CRI call with the runtime's deadline and error translation. A
 * container's log path never changes, so its status is asked once. The list is made again when
 * the runtime says its containers changed (`changed`: a start, stop or removal it made, an event
 * it passed on), and at least every `relistEveryMs` for what it did not see; else the last one
 * stands, and a steady pass stats the files only.
 */
export function rotationTarget(
  cri: CriApi,
  call: <T>(what: string, fn: (deadline: number) => Promise<T>) => Promise<T>,
  { relistEveryMs = RELIST_EVERY_MS, now = Date.now }: { readonly relistEveryMs?: number; readonly now?: () => number } = {},
): CriRotationTarget {
  const paths = new Map<string, string>();
  let listed: { readonly at: number; readonly files: ReadonlyArray<{ id: string; path: string }> } | undefined;
  let changed = true;
  return {
    changed() {
      changed = true;
    },
    async logFiles() {
      if (!changed && listed !== undefined && now() - listed.at < relistEveryMs) return listed.files;
      // Cleared before the list: a change while it runs asks for the next one.
      changed = false;
      const at = now();
      const { containers } = await call('list containers', (deadline) =>
        cri.listContainers({ filter: { state: { state: 'CONTAINER_RUNNING' } } }, deadline),
      ).catch((error: unknown) => {
        changed = true;
        throw error;
      });
      const running = new Set<string>();
      const files: Array<{ id: string; path: string }> = [];
      for (const c of containers) {
        if (c.state !== 'CONTAINER_RUNNING' || c.labels?.[Labels.manifestId] === undefined) continue;
        running.add(c.id);
        let path = paths.get(c.id);
        if (path === undefined) {
          // Gone since the list: nothing to rotate.
          path = await call(`container ${c.id}`, (deadline) => cri.containerStatus({ containerId: c.id }, deadline)).then(
            ({ status }) => status?.logPath,
            () => undefined,
          );
          if (path === undefined || path === '') continue;
          paths.set(c.id, path);
        }
        files.push({ id: c.id, path });
      }
      for (const id of paths.keys()) if (!running.has(id)) paths.delete(id);
      listed = { at, files };
      return files;
    },
    async reopen(id) {
      await call(`reopen the log of ${id}`, (deadline) => cri.reopenContainerLog({ containerId: id }, deadline));
    },
  };
}

const GZ = '.gz';
const TMP = '.tmp';

/**
 * The kubelet's container log manager (`pkg/kubelet/logs/container_log_manager.go`), for the log
 * files the CRI runtime writes. Every `intervalMs`, for each running container whose file has
 * reached `maxSizeBytes`:
 *
 * 1. left-overs of an interrupted pass go (`*.tmp`; a rotated file whose `.gz` is whole);
 * 2. the oldest rotated files go, keeping `maxFiles - 2` (room for the current file and the one
 *    about to be rotated);
 * 3. every rotated file is gzipped, but the one rotated next is not (a reader following the
 *    current file may still be reading it);
 * 4. the file is renamed `<path>.<YYYYMMDD-hhmmss>` (UTC), and the runtime asked to reopen its log
 *    (CRI `ReopenContainerLog`); if it cannot, the file is renamed back and tried next pass.
 *
 * So a container has at most `maxFiles` files: the current one, the last rotated one, and gzipped
 * older ones. A file is rotated at most once a second (two in one second would share a name).
 */
export class CriLogRotation {
  private readonly target: RotationTarget;
  private readonly policy: Required<LogRotationPolicy>;
  private readonly logger: Logger;
  private readonly now: () => number;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private closed = false;

  constructor(target: RotationTarget, policy: LogRotationPolicy, logger: Logger, now: () => number = Date.now) {
    if (!(policy.maxFiles >= 2))
      throw new RangeError(
        `container log rotation: maxFiles must be at least 2 (the current file and one rotated), got ${policy.maxFiles}`,
      );
    if (!(policy.maxSizeBytes > 0))
      throw new RangeError(`container log rotation: maxSizeBytes must be positive, got ${policy.maxSizeBytes}`);
    this.target = target;
    this.policy = { intervalMs: 10_000, ...policy };
    this.logger = logger;
    this.now = now;
  }

  /** Starts the passes (the timer keeps no process alive); `close()` ends them. */
  start(): void {
    if (this.timer !== undefined || this.closed) return;
    const tick = () => {
      this.running = this.rotate()
        .catch((error: unknown) => this.logger.warn({ error: (error as Error).message }, 'container log rotation pass failed'))
        .finally(() => {
          this.running = undefined;
          if (!this.closed) this.timer = setTimeout(tick, this.policy.intervalMs).unref();
        });
    };
    this.timer = setTimeout(tick, this.policy.intervalMs).unref();
  }

  /** Stops the passes; resolves when a pass under way has ended. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.running;
  }

  /** One pass over every running container's file (what the timer runs). */
  async rotate(): Promise<void> {
    for (const { id, path } of await this.target.logFiles()) {
      try {
        await this.rotateOne(id, path);
      } catch (error) {
        this.logger.warn({ containerId: id, path, error: (error as Error).message }, 'could not rotate the container log');
      }
    }
  }

  private async rotateOne(id: string, path: string): Promise<void> {
    let size: number;
    try {
      // Synchronous: a pass stats every running container's file, every 10 s, and a stat through
      // the thread pool cost the idle agent 5–10 times the CPU (200 containers: ~50 ms a pass).
      size = statSync(path).size;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      // Renamed by a pass that could not reopen it, or removed: the runtime makes it again.
      await this.target.reopen(id);
      return;
    }
    if (size < this.policy.maxSizeBytes) return;
    const rotated = await this.cleanUp(path);
    const next = `${path}.${stamp(this.now())}`;
    if (rotated.some((file) => file === next || file === `${next}${GZ}`)) return; // rotated this second already
    const kept = rotated.slice(Math.max(0, rotated.length - (this.policy.maxFiles - 2)));
    for (const old of rotated.slice(0, rotated.length - kept.length)) await unlink(old).catch(() => undefined);
    for (const file of kept) if (!file.endsWith(GZ)) await gzip(file);
    await rename(path, next);
    try {
      await this.target.reopen(id);
    } catch (error) {
      await rename(next, path);
      throw error;
    }
    this.logger.debug({ containerId: id, path, rotated: next, sizeBytes: size }, 'container log rotated');
  }

  /** The rotated files of `path`, oldest first, after removing what an interrupted pass left. */
  private async cleanUp(path: string): Promise<string[]> {
    const folder = dirname(path);
    const prefix = `${basename(path)}.`;
    const names = (await readdir(folder)).filter((name) => name.startsWith(prefix));
    const whole = new Set(names.filter((name) => name.endsWith(GZ)).map((name) => name.slice(0, -GZ.length)));
    const rotated: string[] = [];
    for (const name of names) {
      // A .tmp is a gzip cut short; a file beside its .gz was gzipped, then the pass stopped before removing it.
      if (name.endsWith(TMP) || whole.has(name)) await unlink(join(folder, name)).catch(() => undefined);
      else rotated.push(name);
    }
    return rotated.sort((a, b) => stampOf(a).localeCompare(stampOf(b))).map((name) => join(folder, name));
  }
}

/** `<file>` becomes `<file>.gz`, through `<file>.gz.tmp` so that a pass cut short leaves no half `.gz`. */
async function gzip(file: string): Promise<void> {
  const temporary = `${file}${GZ}${TMP}`;
  try {
    await pipeline(createReadStream(file), createGzip(), createWriteStream(temporary, { mode: 0o640 }));
    await rename(temporary, `${file}${GZ}`);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
  await unlink(file);
}

/** The time part of a rotated file's name, which orders them. */
function stampOf(name: string): string {
  return name.endsWith(GZ) ? name.slice(0, -GZ.length) : name;
}

/** `YYYYMMDD-hhmmss` in UTC: the kubelet's rotation stamp (`20060102-150405`). */
function stamp(ms: number): string {
  const iso = new Date(ms).toISOString(); // 2026-12-04T06:44:38.000Z
  return `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}-${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}`;
}
