import { mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { ContainerManifest } from '@kubelet-ts/core';

/**
 * Where the agent keeps each source's last good set, so that it survives a restart: a set the
 * agent was told (the server's) is not lost, and a source that cannot be read at start (an etcd
 * key now empty, a file now invalid, a URL down) keeps running what it last gave. The kubelet's
 * static pods survive as files and its API pods in etcd; these are the sets of a node without an
 * API server.
 */
export interface SourceCheckpoints {
  /**
   * The manifests `source` last delivered, as saved (the agent validates them again), or
   * undefined when none were saved. Rejects when a checkpoint exists but cannot be read.
   */
  load(source: string): Promise<readonly unknown[] | undefined>;
  /** Keeps `manifests` as `source`'s last good set. Resolves once it is durable. */
  save(source: string, manifests: readonly ContainerManifest[]): Promise<void>;
}

const FORMAT = 'kubelet-ts/source-checkpoint';
const VERSION = 1;

interface CheckpointFile {
  readonly kind: typeof FORMAT;
  readonly version: typeof VERSION;
  readonly source: string;
  readonly savedAt: string;
  readonly manifests: readonly unknown[];
}

/**
 * Checkpoints as files, one per source (`<dir>/<source>.json`), each replaced atomically: written
 * to a temporary file, flushed to disk, renamed over the old one and the directory flushed, so a
 * crash or a power cut leaves the old set or the new one, never half of one. Saves of one source
 * are coalesced: while one is written, only the newest set waits.
 */
export class FileSourceCheckpoints implements SourceCheckpoints {
  private readonly writers = new Map<string, SourceWriter>();

  constructor(readonly dir: string) {}

  /** Makes the directory (mode 0700: manifests may carry secrets in their env); rejects when it cannot. */
  async prepare(): Promise<void> {
    await makeDirectory(this.dir);
  }

  async load(source: string): Promise<readonly unknown[] | undefined> {
    let text: string;
    try {
      text = await readFile(this.fileOf(source), 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
    const file = JSON.parse(text) as Partial<CheckpointFile> | null;
    if (file?.kind !== FORMAT || file.version !== VERSION || !Array.isArray(file.manifests))
      throw new Error(`${this.fileOf(source)} is not a ${FORMAT} of version ${VERSION}`);
    return file.manifests;
  }

  save(source: string, manifests: readonly ContainerManifest[]): Promise<void> {
    let writer = this.writers.get(source);
    if (writer === undefined) this.writers.set(source, (writer = new SourceWriter(this.dir, this.fileOf(source), source)));
    return writer.save(manifests);
  }

  /** Resolves once every save asked for so far is on disk (or failed). */
  async flush(): Promise<void> {
    await Promise.all([...this.writers.values()].map((w) => w.idle()));
  }

  fileOf(source: string): string {
    return join(this.dir, `${encodeURIComponent(source)}.json`);
  }
}

/**
 * `mkdir -p`, parent by parent. Node's own `recursive` never returns for a path under /proc (it
 * retries the ENOENT there forever), and a mistyped `--root-dir` must fail, not hang the agent.
 */
async function makeDirectory(dir: string): Promise<void> {
  try {
    await mkdir(dir, { mode: 0o700 });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return;
    const parent = dirname(dir);
    if (code !== 'ENOENT' || parent === dir) throw error;
    await makeDirectory(parent);
    await mkdir(dir, { mode: 0o700 });
  }
}

/** One source's file: one write at a time, and of the sets asked for meanwhile only the newest. */
class SourceWriter {
  private writing: Promise<void> | undefined;
  private next: { manifests: readonly ContainerManifest[]; done: Promise<void>; settle: (error?: unknown) => void } | undefined;

  constructor(
    private readonly dir: string,
    private readonly file: string,
    private readonly source: string,
  ) {}

  save(manifests: readonly ContainerManifest[]): Promise<void> {
    if (this.next !== undefined) {
      this.next.manifests = manifests;
      return this.next.done;
    }
    let settle!: (error?: unknown) => void;
    const done = new Promise<void>((resolve, reject) => (settle = (error) => (error === undefined ? resolve() : reject(error))));
    this.next = { manifests, done, settle };
    if (this.writing === undefined) this.writing = this.drain();
    return done;
  }

  async idle(): Promise<void> {
    while (this.writing !== undefined) await this.writing;
  }

  private async drain(): Promise<void> {
    while (this.next !== undefined) {
      const { manifests, settle } = this.next;
      this.next = undefined;
      try {
        await this.write(manifests);
        settle();
      } catch (error) {
        settle(error);
      }
    }
    this.writing = undefined;
  }

  private async write(manifests: readonly ContainerManifest[]): Promise<void> {
    const body: CheckpointFile = { kind: FORMAT, version: VERSION, source: this.source, savedAt: new Date().toISOString(), manifests };
    const temporary = `${this.file}.${process.pid}.tmp`;
    const handle = await open(temporary, 'w', 0o600);
    try {
      await handle.writeFile(`${JSON.stringify(body)}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
    try {
      await rename(temporary, this.file);
    } catch (error) {
      await rm(temporary, { force: true });
      throw error;
    }
    const dir = await open(this.dir, 'r');
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
  }
}
