import { type FileHandle, mkdir, open, rename, rm } from 'node:fs/promises';
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
  /** The configuration the set belongs to (absent in checkpoints of agents before it was written). */
  readonly owner?: CheckpointOwner;
  readonly savedAt: string;
  readonly manifests: readonly unknown[];
}

/**
 * Whose a source's set is: the node the agent runs as, and what the source reads (the `--config`
 * path, the URL, the etcd key and servers, the server's address). A set is restored only into
 * the same configuration: another node name or another source would run pods that are not its own
 * (issue 48: a pod run twice on the host, once under each node label).
 */
export interface CheckpointOwner {
  readonly node: string;
  readonly source: string;
}

/** What `FileSourceCheckpoints` restores: for which node and source identities, and up to what size. */
export interface FileSourceCheckpointsOptions {
  /** The node name the agent runs as; a checkpoint written for another node is not restored. */
  readonly node?: string;
  /** Each source's identity by the source's name; a checkpoint written for another identity is not restored. */
  readonly identities?: Readonly<Record<string, string>>;
  /**
   * The largest checkpoint read (default 64 MiB: four times what one source may hold, 16 MiB of
   * manifests as JSON). A larger file is refused before it is read, as every source's input is bounded.
   */
  readonly maxBytes?: number;
}

/** Four times the 16 MiB of manifests one source may hold (`DEFAULT_MAX_MANIFEST_BYTES`). */
const DEFAULT_MAX_CHECKPOINT_BYTES = 64 * 1024 * 1024;

/**
 * Checkpoints as files, one per source (`<dir>/<source>.json`), each replaced atomically: written
 * to a temporary file, flushed to disk, renamed over the old one and the directory flushed, so a
 * crash or a power cut leaves the old set or the new one, never half of one. Saves of one source
 * are coalesced: while one is written, only the newest set waits.
 */
export class FileSourceCheckpoints implements SourceCheckpoints {
  private readonly writers = new Map<string, SourceWriter>();

  constructor(
    readonly dir: string,
    private readonly options: FileSourceCheckpointsOptions = {},
  ) {}

  /** Makes the directory (mode 0700: manifests may carry secrets in their env); rejects when it cannot. */
  async prepare(): Promise<void> {
    await makeDirectory(this.dir);
  }

  /**
   * Rejects, so that the source counts as not seen until it delivers, when the file is larger than
   * `maxBytes`, is not a checkpoint, or was written for another node or another source identity.
   */
  async load(source: string): Promise<readonly unknown[] | undefined> {
    const file = this.fileOf(source);
    let text: string;
    let handle: FileHandle;
    try {
      handle = await open(file, 'r');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
    try {
      const max = this.options.maxBytes ?? DEFAULT_MAX_CHECKPOINT_BYTES;
      const { size } = await handle.stat();
      if (size > max) throw new Error(`${file} has ${size} bytes, more than the ${max} a checkpoint may hold: not read`);
      text = await handle.readFile('utf8');
    } finally {
      await handle.close();
    }
    const saved = JSON.parse(text) as Partial<CheckpointFile> | null;
    if (saved?.kind !== FORMAT || saved.version !== VERSION || !Array.isArray(saved.manifests))
      throw new Error(`${file} is not a ${FORMAT} of version ${VERSION}`);
    const expected = this.ownerOf(source);
    if (expected !== undefined && (saved.owner?.node !== expected.node || saved.owner.source !== expected.source)) {
      const was = saved.owner === undefined ? 'no node or source' : `node ${saved.owner.node}, source ${saved.owner.source}`;
      throw new Error(
        `${file} was kept for another configuration (${was}; this agent is node ${expected.node}, source ${expected.source}): not restored`,
      );
    }
    return saved.manifests;
  }

  save(source: string, manifests: readonly ContainerManifest[]): Promise<void> {
    let writer = this.writers.get(source);
    if (writer === undefined)
      this.writers.set(source, (writer = new SourceWriter(this.dir, this.fileOf(source), source, this.ownerOf(source))));
    return writer.save(manifests);
  }

  /** The owner a checkpoint of `source` is written with and checked against; none without a node name. */
  private ownerOf(source: string): CheckpointOwner | undefined {
    const { node, identities } = this.options;
    return node === undefined ? undefined : { node, source: identities?.[source] ?? source };
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
    private readonly owner: CheckpointOwner | undefined,
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
    const body: CheckpointFile = {
      kind: FORMAT,
      version: VERSION,
      source: this.source,
      ...(this.owner === undefined ? {} : { owner: this.owner }),
      savedAt: new Date().toISOString(),
      manifests,
    };
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
