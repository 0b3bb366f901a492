import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { watch, type FSWatcher } from 'chokidar';
import {
  KubeletError,
  Tokens,
  derivedManifestId,
  repeatEvery,
  systemClock,
  type Clock,
  type ManifestSource,
  type Registry,
  type SourceSink,
  type TimerHandle,
  hostAccessOf,
  type HostAccess,
} from '@kubelet-ts/core';
import { ManifestIntake, type SourceLimits } from '@kubelet-ts/manifest';

/** With the host access the manifests may take (`HostAccess`: the CLI's `--allow-host-mounts`, `--allow-host-network`). */
export interface FileManifestSourceOptions extends HostAccess {
  /**
   * A manifest file, or a directory whose every regular file is one, whatever its name ends with
   * (`cadvisor.manifest` was the 2014 convention), except dotfiles and editors' swap and backup
   * copies (see `isManifestFileName`).
   */
  readonly path: string;
  /** Re-list this often even without a watch event, so a missed event heals. Default 20 s. */
  readonly checkFrequencyMs?: number;
  /** Wait this long after a watch event before reading, so a burst of events is one read. Default 50 ms. */
  readonly debounceMs?: number;
  /** Default `file`. */
  readonly name?: string;
  /** Time for the debounce and the periodic re-list. Default `systemClock`. */
  readonly clock?: Clock;
  /**
   * What the files together may hold (default 1,000 manifests, 16 MiB as JSON). Over them, the set
   * delivered last stays in force and the problem is reported once, until the files shrink.
   */
  readonly limits?: SourceLimits;
}

/**
 * What editors, merge tools and package managers leave beside a file they change: vim's swap
 * files (`.web.yaml.swp` is a dotfile anyway, `web.yaml.swp` with `directory=.`), Emacs' `web.yaml~`
 * and `#web.yaml#`, `.bak`/`.orig`/`.rej`/`.tmp` copies, dpkg's and rpm's saved configurations.
 */
const EDITOR_LEFTOVERS = /(~|\.sw[a-p]|\.bak|\.orig|\.rej|\.tmp|\.dpkg-(old|new|dist|bak|tmp)|\.rpm(new|save|orig))$|^#.*#$/i;
const ADAPTER = 'file';
/** Longer than chokidar's 50 ms throttle of repeated `change` events for one file. */
const SETTLE_MS = 120;

/**
 * Every file of a `--config` directory is a manifest, as in 2014 (which read every file whose name
 * does not start with a dot), whatever its extension: `cadvisor.manifest`, `web.yaml`, `pods`. What
 * is not one is a dotfile or an editor's swap or backup copy (`.web.yaml.swp`, `web.yaml~`,
 * `web.yaml.bak`), which must never override `web.yaml`; subdirectories are not read either. A
 * file that is read and is not a manifest (a README) is reported, never skipped in silence.
 */
export function isManifestFileName(name: string): boolean {
  return name !== '' && !name.startsWith('.') && !EDITOR_LEFTOVERS.test(name);
}

/**
 * A file changed less than this long before it was read may change again within the same
 * timestamp (file systems stamp times at a coarse tick): its read is not reused (as git's "racy" index).
 */
const STILL_MS = 2_000;

/** The file's identity and times (device, inode, size, mtime, ctime), to the nanosecond. */
async function stamp(path: string): Promise<{ key: string; changedAtMs: number }> {
  const s = await stat(path, { bigint: true });
  return {
    key: `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`,
    changedAtMs: Number((s.ctimeNs > s.mtimeNs ? s.ctimeNs : s.mtimeNs) / 1_000_000n),
  };
}

/**
 * The `--config` source. Watch events only trigger a re-read; the directory itself is the truth,
 * which is what makes rename-saves, missed events and late `unlink`s harmless.
 */
export class FileManifestSource implements ManifestSource {
  readonly name: string;
  private readonly path: string;
  private readonly checkFrequencyMs: number;
  private readonly debounceMs: number;
  private readonly clock: Clock;
  /** Each file is a document of its own: its last good manifests, its problems, its warnings. */
  private readonly intake: ManifestIntake;
  /**
   * Each file's identity and times when it was last read, if it had then been still for a while:
   * a read that finds them unchanged reuses what was read (an idle agent re-lists every 20 s).
   */
  private readonly still = new Map<string, string>();
  private watcher: FSWatcher | undefined;
  private debounce: TimerHandle | undefined;
  private settle: TimerHandle | undefined;
  private stopTicker: (() => void) | undefined;
  private scanning: Promise<void> | undefined;
  private rescan = false;
  private closed = false;
  private reads = 0;
  /** The files of the last read, in order. */
  private lastPaths: readonly string[] | undefined;

  constructor(options: FileManifestSourceOptions) {
    this.path = resolve(options.path);
    this.checkFrequencyMs = options.checkFrequencyMs ?? 20_000;
    this.debounceMs = options.debounceMs ?? 50;
    this.name = options.name ?? ADAPTER;
    this.clock = options.clock ?? systemClock;
    this.intake = new ManifestIntake({
      adapter: ADAPTER,
      limits: options.limits,
      ...hostAccessOf(options),
      describedAs: `${this.path}: the files`,
    });
  }

  async start(sink: SourceSink): Promise<void> {
    this.closed = false;
    this.intake.start(sink); // a (re)started source delivers its first read and says what stands
    this.still.clear(); // every file is read again, to say its warnings again
    this.lastPaths = undefined;
    this.watcher = watch(this.path, {
      ignoreInitial: true,
      depth: 0,
      ignored: (path, stats) => path !== this.path && (stats?.isDirectory() === true || !isManifestFileName(basename(path))),
    });
    this.watcher.on('all', () => this.onWatchEvent());
    this.watcher.on('error', (error) =>
      sink.error(new KubeletError('Unavailable', `watching ${this.path}: ${String(error)}`, { adapter: ADAPTER, cause: error })),
    );
    await this.scan();
    this.stopTicker = repeatEvery(this.clock, this.checkFrequencyMs, () => this.schedule(0));
  }

  async close(): Promise<void> {
    this.closed = true;
    this.intake.close();
    this.cancel(this.debounce);
    this.cancel(this.settle);
    this.stopTicker?.();
    this.stopTicker = undefined;
    await this.watcher?.close();
    this.watcher = undefined;
    await this.scanning;
  }

  /**
   * Files read and parsed since this source was made. A re-list reads only files that changed (by
   * inode, size, mtime and ctime) or that had changed within 2 s of their last read.
   */
  get readCount(): number {
    return this.reads;
  }

  /** Reads now (or after the current read), for callers that know the files changed. */
  refresh(): Promise<void> {
    return this.scan();
  }

  private schedule(delay = this.debounceMs): void {
    if (this.closed) return;
    this.cancel(this.debounce);
    this.debounce = this.clock.setTimeout(() => void this.scan(), delay);
  }

  private cancel(timer: TimerHandle | undefined): void {
    if (timer !== undefined) this.clock.clearTimeout(timer);
  }

  /**
   * A watch event: read soon, and once more after chokidar's 50 ms per-file `change` throttle has
   * passed, because a second write inside that window (a rename-save right after an edit) raises
   * no event of its own.
   */
  private onWatchEvent(): void {
    this.schedule();
    this.cancel(this.settle);
    if (!this.closed) this.settle = this.clock.setTimeout(() => void this.scan(), this.debounceMs + SETTLE_MS);
  }

  /** One read at a time; a request during a read makes exactly one more read after it. */
  private scan(): Promise<void> {
    if (this.scanning !== undefined) {
      this.rescan = true;
      return this.scanning;
    }
    this.scanning = (async () => {
      do {
        this.rescan = false;
        await this.readAll();
      } while (this.rescan && !this.closed);
    })().finally(() => {
      this.scanning = undefined;
    });
    return this.scanning;
  }

  private async readAll(): Promise<void> {
    let paths: string[];
    try {
      paths = await this.list();
    } catch (error) {
      // The last good set stays in force meanwhile; a single file path is read again once it can be.
      this.still.delete(this.path);
      this.intake.fail(
        this.path,
        new KubeletError('Unavailable', `cannot read ${this.path}: ${(error as Error).message}`, { adapter: ADAPTER, cause: error }),
      );
      this.intake.commit();
      return;
    }
    for (const known of this.still.keys()) if (!paths.includes(known)) this.still.delete(known);
    let read = false;
    for (const path of paths) if (await this.readFile(path)) read = true;
    if (this.closed) return;
    // Path order decides which of two files giving one manifest id is taken.
    this.intake.keep(paths);
    // The same files, none of them read again: the same manifests, nothing to compare or deliver.
    const same =
      !read && this.lastPaths !== undefined && paths.length === this.lastPaths.length && paths.every((p, i) => p === this.lastPaths![i]);
    this.lastPaths = paths;
    if (!same) this.intake.commit();
  }

  private async list(): Promise<string[]> {
    let info: Awaited<ReturnType<typeof stat>>;
    try {
      info = await stat(this.path);
    } catch (error) {
      // A missing path is "nothing to run", not an error loop: the directory may come later.
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
    if (!info.isDirectory()) return [this.path];
    const entries = await readdir(this.path, { withFileTypes: true });
    return entries
      .filter((e) => (e.isFile() || e.isSymbolicLink()) && isManifestFileName(e.name))
      .map((e) => join(this.path, e.name))
      .sort();
  }

  /** Reads `path` unless it is unchanged since its last read (see `still`); false when its last read was reused. */
  private async readFile(path: string): Promise<boolean> {
    // Bytes, so that a file that is not UTF-8 is unreadable rather than read with replacement characters.
    let bytes: Buffer;
    let seen: { key: string; changedAtMs: number };
    try {
      seen = await stamp(path);
      if (this.still.get(path) === seen.key) return false;
      bytes = await readFile(path);
    } catch (error) {
      this.still.delete(path);
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'EISDIR') {
        this.intake.drop(path); // gone between list and read: the next event re-reads
        return true;
      }
      this.intake.fail(
        path,
        new KubeletError('Unavailable', `cannot read ${path}: ${(error as Error).message}`, { adapter: ADAPTER, cause: error }),
      );
      return true;
    }
    // A manifest without an id is named after its file (and its place in it), as in 2014: the
    // same file gives the same id on every read, and two files never give one id.
    this.intake.read(path, bytes, (position) => derivedManifestId(basename(path), path, position));
    this.reads += 1;
    // Reused next time only when it had been still for a while.
    if (this.clock.now() - seen.changedAtMs >= STILL_MS) this.still.set(path, seen.key);
    else this.still.delete(path);
    return true;
  }
}

/** Registers a file source (`--config`) and returns it. */
export function registerFileSource(registry: Registry, options: FileManifestSourceOptions): FileManifestSource {
  const source = new FileManifestSource(options);
  registry.register(Tokens.Source, { useValue: source });
  return source;
}
