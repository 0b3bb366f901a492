import { mkdir, open, readdir, rm, symlink, unlink } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { Labels, podNameOf, type ContainerSpec, type Logger, type SandboxSpec } from '@kubelet-ts/core';
import { DEFAULT_LOG_LINKS_DIR, DEFAULT_LOGS_ROOT, type CriRuntimeOptions } from './cri-options.js';

// What may be one part of a file name here: no separator, no `..`, not empty, not too long.
const SAFE_PART = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,252}$/;
// The kubelet keeps a link's name within what a file name may be (255 bytes).
const MAX_LINK_NAME = 255;

/** Where the runtime writes containers' output, and the links log shippers tail. */
export interface CriLogFilesOptions {
  /** The kubelet's `podLogsDir`: each pod's logs in `<podLogsDir>/<namespace>_<pod>_<uid>/`. */
  readonly podLogsDir: string;
  /** Where a link to each container's current log file is kept (the kubelet's `/var/log/containers`); `undefined`: none. */
  readonly linksDir: string | undefined;
  readonly logger: Logger;
}

/**
 * The kubelet's log file layout (`kuberuntime` `BuildPodLogsDirectory`, `BuildContainerLogsDirectory`):
 *
 *     <podLogsDir>/<namespace>_<pod>_<uid>/<container>/<restart count>.log
 *     /var/log/containers/<pod>_<namespace>_<container>-<container id>.log -> that file
 *
 * The runtime (containerd) writes the file where a sandbox's `log_directory` and a container's
 * `log_path` say; the agent makes the folders, keeps the links, and removes a container's files
 * with the container. A restart count whose file is still there (a container replaced without a
 * restart: a changed spec) takes the next free number, so no two runs ever share a file.
 */
export class CriLogFiles {
  readonly podLogsDir: string;
  private readonly linksDir: string | undefined;
  private readonly logger: Logger;

  /** The layout a runtime made with `options` uses (its defaults: `/var/log/pods`, `/var/log/containers`). */
  static of(options: Pick<CriRuntimeOptions, 'logsRoot' | 'containerLogLinksDir'>, logger: Logger): CriLogFiles {
    const links = options.containerLogLinksDir ?? DEFAULT_LOG_LINKS_DIR;
    return new CriLogFiles({
      podLogsDir: resolve(options.logsRoot ?? DEFAULT_LOGS_ROOT),
      linksDir: links === false ? undefined : resolve(links),
      logger,
    });
  }

  constructor(options: CriLogFilesOptions) {
    this.podLogsDir = options.podLogsDir;
    this.linksDir = options.linksDir;
    this.logger = options.logger;
  }

  /** The pod's log directory, or `undefined` when its names cannot be a folder's (the pod then gets no log file). */
  podDirectory(spec: SandboxSpec): string | undefined {
    const namespace = spec.pod?.namespace ?? spec.labels[Labels.namespace] ?? 'default';
    const name = spec.pod?.name ?? podNameOf(spec.podId, namespace);
    const uid = spec.pod?.uid ?? spec.podId;
    const folder = `${namespace}_${name}_${uid}`;
    return [namespace, name, uid].every((part) => SAFE_PART.test(part)) && folder.length <= 255 ? join(this.podLogsDir, folder) : undefined;
  }

  /** Makes the pod's log directory (before RunPodSandbox). */
  async makePodDirectory(directory: string): Promise<void> {
    await mkdir(directory, { recursive: true });
  }

  /**
   * Before CreateContainer: the container's folder made and its file reserved (created empty,
   * exclusively: the runtime appends to it). Returns the `log_path` to give, relative to the pod's
   * directory, or `undefined` when the container's name cannot be a folder's.
   */
  async reserve(podDirectory: string, spec: ContainerSpec): Promise<string | undefined> {
    const container = spec.labels[Labels.containerName];
    if (container === undefined || !SAFE_PART.test(container)) return undefined;
    await mkdir(join(podDirectory, container), { recursive: true });
    const restarts = Number(spec.labels[Labels.restartCount] ?? 0);
    for (let n = Number.isSafeInteger(restarts) && restarts >= 0 ? restarts : 0; ; n++) {
      const logPath = join(container, `${n}.log`);
      try {
        await (await open(join(podDirectory, logPath), 'wx', 0o640)).close();
        return logPath;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
    }
  }

  /** After CreateContainer: the link to its file (replacing a stale one of the same name). */
  async link(file: string, container: { readonly id: string; readonly labels: Readonly<Record<string, string>> }): Promise<void> {
    const link = this.linkOf(container);
    if (link === undefined) return;
    try {
      await mkdir(dirname(link), { recursive: true });
      await rm(link, { force: true });
      await symlink(file, link);
    } catch (error) {
      // A link is for shippers: its failure leaves the container and its log as they are.
      this.logger.warn({ link, error: (error as Error).message }, 'could not link the container log');
    }
  }

  /**
   * After RemoveContainer (or a CreateContainer that failed): its file, its rotated files and its
   * link; a file outside the pod log directory (someone else's container) is left alone.
   */
  async remove(
    file: string | undefined,
    container: { readonly id: string; readonly labels: Readonly<Record<string, string>> },
  ): Promise<void> {
    const link = this.linkOf(container);
    if (link !== undefined) await rm(link, { force: true });
    if (file === undefined || file === '' || !this.owns(file)) return;
    const folder = dirname(file);
    const entries = await readdir(folder).catch(() => [] as string[]);
    const name = basename(file);
    for (const entry of entries)
      if (entry === name || entry.startsWith(`${name}.`)) await unlink(join(folder, entry)).catch(() => undefined);
  }

  /** After RemovePodSandbox: the pod's log directory, when it is one of ours. */
  async removePodDirectory(directory: string | undefined): Promise<void> {
    if (directory === undefined || dirname(directory) !== this.podLogsDir || !SAFE_PART.test(basename(directory))) return;
    await rm(directory, { recursive: true, force: true });
  }

  /** Whether `file` is in a pod log directory of ours: `<podLogsDir>/<pod>/<container>/<file>`. */
  private owns(file: string): boolean {
    const parts = relative(this.podLogsDir, file).split(sep);
    return parts.length === 3 && parts.every((part) => SAFE_PART.test(part));
  }

  /** `<pod>_<namespace>_<container>-<id>.log` in the links folder (the kubelet's `legacyLogSymlink`), cut to a file name's length. */
  private linkOf(container: { readonly id: string; readonly labels: Readonly<Record<string, string>> }): string | undefined {
    const { labels } = container;
    const podId = labels[Labels.manifestId];
    const name = labels[Labels.containerName];
    if (this.linksDir === undefined || podId === undefined || name === undefined || !/^[0-9a-f]+$/.test(container.id)) return undefined;
    const namespace = labels[Labels.namespace] ?? 'default';
    const prefix = `${podNameOf(podId, namespace)}_${namespace}_${name}`;
    const suffix = `-${container.id}.log`;
    const link = `${prefix.slice(0, MAX_LINK_NAME - suffix.length)}${suffix}`;
    return SAFE_PART.test(prefix.replace(/_/g, '-')) ? join(this.linksDir, link) : undefined;
  }
}
