import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Labels } from '@kubelet-ts/core';
import { CriRuntime } from '@kubelet-ts/runtime-cri';
import {
  assertContainerd,
  buildTestImages,
  criCgroupParent,
  criEndpoint,
  dockerSocketPath,
  removeLabelled,
  TEST_IMAGES,
} from '@kubelet-ts/testkit';
import { rawCri } from './cri-raw.js';
import type { LogsRuntimeConfig } from './logs-agent.js';
import { curlRead, openProcess, timedRun, type OpenRead } from './logs-readers.js';

export const LOGS_SCENARIO = '10. container logs';

/** Sizes of the container-logs scenario (issue 22). */
export interface LogsSizes {
  /** Lines of 100 bytes (99 and the newline) the throughput container prints: 1,000,000 is 100 MB. */
  readonly throughputLines: number;
  /** Timed whole reads, each of the agent's beside each of the baseline's. */
  readonly throughputRuns: number;
  /** Lines the followed container prints, one every `followEveryMs`. */
  readonly followLines: number;
  readonly followEveryMs: number;
  /** RSS: readers following one container that prints as fast as it can, for `followSeconds`. */
  readonly readers: number;
  readonly followSeconds: number;
  /** RSS: how long one reader that stopped reading is held open (and the agent with no reader, before). */
  readonly pausedSeconds: number;
  /**
   * RSS: how long the agent runs the printing pod before anything is measured. On CRI the agent
   * rotates the log itself (a pass every 10 s, which gzips the file rotated the pass before): two
   * passes, so that their one-off cost is not counted as a reader's.
   */
  readonly settleSeconds: number;
}

/** A container as the engine's own tools are pointed at it: its id and the runtime's record of it. */
export interface LogsContainer {
  readonly id: string;
  readonly raw: unknown;
}

/** One way of reading a container's whole output that is not the agent's: its name, and one timed read (ms). */
export interface WholeRead {
  readonly name: string;
  read(container: LogsContainer): Promise<number>;
}

/**
 * One engine as the container-logs scenario sees it: how the agent's runtime is made there, how
 * the engine's own tools read a container's output (the baselines), and what cleans up after.
 */
export interface LogsEngine {
  readonly label: string;
  readonly image: string;
  /** The node name the agent labels what it makes with (the in-process agent's and the child's alike). */
  readonly node: string;
  /**
   * The agent's runtime for the in-process rows (`read`: a 100 MB output kept whole, where the
   * default rotation keeps the last 50 MiB) or for the RSS rows (`flood`: a container printing
   * without end, see `keeping`).
   */
  runtime(pods: 'read' | 'flood'): LogsRuntimeConfig;
  /** The baseline of the throughput row. */
  readonly wholeRead: WholeRead;
  /** More reads for reference, each a row of its own. */
  readonly references: readonly WholeRead[];
  /** The engine's own follower, as a user runs it; `onContent` gets each line as the container printed it. */
  readonly followerName: string;
  follower(container: LogsContainer, onContent: (content: string, at: number) => void): OpenRead;
  /** What the rows' notes say of how the output is kept, for the `read` and `flood` pods. */
  readonly keeping: { readonly read: string; readonly flood: string };
  /** Removes every container and sandbox labelled with `node`, whoever made it. */
  removePods(): Promise<void>;
  /** `removePods`, then the engine's temporary folders. */
  dispose(): Promise<void>;
}

/** The Docker engine: `docker logs` (the CLI, on the suites' socket), and its logs API read raw by curl. */
export async function dockerLogsEngine(): Promise<LogsEngine> {
  const images = await buildTestImages();
  const volumes = await mkdtemp(join(tmpdir(), 'kubelet-ts-bench-logs-volumes-'));
  const node = `bench-logs-${process.pid}`;
  const socket = dockerSocketPath();
  const host = ['-H', `unix://${socket}`];
  const api = (id: string, query: string) => `http://localhost/containers/${id}/logs?stdout=1&stderr=1&${query}`;
  const removePods = async () => void (await removeLabelled(`${Labels.node}=${node}`));
  return {
    label: 'Docker',
    image: images.busybox,
    node,
    runtime: (pods) => ({ kind: 'docker', podInfraImage: images.pause, volumesRoot: volumes, keepWhole: pods === 'read' }),
    wholeRead: {
      name: '`docker logs <id> > /dev/null` (the Docker CLI)',
      read: async ({ id }) => (await timedRun('docker', [...host, 'logs', id])).ms,
    },
    references: [
      {
        name: "the engine's logs API read raw by curl, timestamps=1 (what the adapter asks when times are wanted; a plain read asks timestamps=0, as docker logs does)",
        read: async ({ id }) => (await curlRead(api(id, 'timestamps=1'), socket)).ms,
      },
    ],
    followerName: '`docker logs -f <id>`',
    follower: ({ id }, onContent) => openProcess('docker', [...host, 'logs', '-f', id], onContent),
    keeping: {
      read: "json-file log driver, up to 1 GiB in one file (the agent's default, 10 MiB × 5 files, would not hold 100 MB)",
      flood: "json-file log driver at the agent's default (10 MiB × 5 files, rotated by the engine)",
    },
    removePods,
    async dispose() {
      await removePods();
      await rm(volumes, { recursive: true, force: true });
    },
  };
}

/** A CRI log file's line: `<time> <stream> <P|F> <content>`; the content. */
function criContent(line: string): string {
  let at = -1;
  for (let i = 0; i < 3; i++) at = line.indexOf(' ', at + 1);
  return at === -1 ? '' : line.slice(at + 1);
}

/** The path of the CRI log file containerd writes for the container (ContainerStatus `log_path`). */
function logPathOf(container: LogsContainer): string {
  const path = (container.raw as { status?: { logPath?: string } }).status?.logPath;
  if (path === undefined || path === '') throw new Error(`container ${container.id}: the runtime names no log file`);
  return path;
}

/** The private containerd over CRI: its log file read by `cat`, and followed by `tail -f`. */
export async function criLogsEngine(): Promise<LogsEngine> {
  const endpoint = criEndpoint();
  await assertContainerd(endpoint);
  // An image missing here would send the agent to a registry this machine cannot reach.
  const probe = new CriRuntime({ endpoint, containerLogLinksDir: false, containerLogs: false });
  try {
    if (!(await probe.images.hasImage(TEST_IMAGES.busybox)))
      throw new Error(`containerd at ${endpoint} lacks ${TEST_IMAGES.busybox}: \`bash scripts/containerd.sh start\` imports it`);
  } finally {
    probe.close();
  }
  const volumes = await mkdtemp(join(tmpdir(), 'kubelet-ts-bench-logs-cri-volumes-'));
  const logs = await mkdtemp(join(tmpdir(), 'kubelet-ts-bench-logs-cri-logs-'));
  const node = `bench-logs-cri-${process.pid}`;
  const removePods = async () => {
    const raw = rawCri(endpoint);
    try {
      for (const id of await raw.sandboxes({ [Labels.node]: node }).catch(() => [])) await raw.removePod(id).catch(() => undefined);
    } finally {
      raw.close();
    }
  };
  return {
    label: 'containerd (CRI)',
    image: TEST_IMAGES.busybox,
    node,
    // Logs and their links in a temporary folder, never the host's /var/log.
    runtime: () => ({
      kind: 'cri',
      endpoint,
      volumesRoot: volumes,
      logsRoot: join(logs, 'pods'),
      containerLogLinksDir: join(logs, 'links'),
      cgroupParent: criCgroupParent(),
      // Rotation is the agent's own work on CRI (each pass gzips the file rotated before: at this
      // flood, a few seconds of CPU and MBs of RSS per pass), which would be counted as the readers'.
      keepWhole: true,
    }),
    wholeRead: {
      name: '`cat <its CRI log file> > /dev/null`',
      read: async (container) => (await timedRun('cat', [logPathOf(container)])).ms,
    },
    references: [
      {
        name: '`cut -d " " -f 4- <its CRI log file> > /dev/null` (the CRI prefixes stripped: the least a reader of the file does)',
        read: async (container) => (await timedRun('cut', ['-d', ' ', '-f', '4-', logPathOf(container)])).ms,
      },
    ],
    followerName: '`tail -f -n +1 <its CRI log file>` (inotify)',
    follower: (container, onContent) =>
      openProcess('tail', ['-f', '-n', '+1', logPathOf(container)], (line, at) => onContent(criContent(line), at)),
    keeping: {
      read: "a CRI log file written by containerd (the kubelet's layout, in a temporary folder), not rotated",
      flood:
        "a CRI log file written by containerd, not rotated: rotation is the agent's own work here (a pass every 10 s gzips the file rotated before), whose cost would be counted as the readers'",
    },
    removePods,
    async dispose() {
      await removePods();
      await rm(volumes, { recursive: true, force: true });
      await rm(logs, { recursive: true, force: true });
    },
  };
}
