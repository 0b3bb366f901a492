import { basename } from 'node:path';
import {
  Labels,
  cpuLimitMillisOf,
  type ContainerDetails,
  type ContainerState,
  type ContainerSummary,
  type SandboxSummary,
} from '@kubelet-ts/core';
import type { ContainerStateName, ContainerStatus, CriContainer, Int64, PodSandbox } from './cri-api.js';

/** CRI records → the core's domain types. */

/** Annotations the adapter writes beside the labels (labels are returned unchanged, so extras go here). */
export const CriAnnotations = {
  /** On a container: the image as the agent named it (containerd reports it normalised, `docker.io/…`). */
  image: 'io.kubelet-ts.image',
  /** On a sandbox: the config it was run with, which CreateContainer needs again (see `SandboxConfigRecord`). */
  sandboxConfig: 'io.kubelet-ts.sandbox-config',
} as const;

/** CRI times are nanoseconds since the epoch (int64 as text); the core's are milliseconds. 0 is "not set". */
export function millis(ns: Int64 | undefined | null): number | undefined {
  if (ns === undefined || ns === null || ns === '' || ns === '0' || ns === 0) return undefined;
  return Number(BigInt(ns) / 1_000_000n);
}

/** UNKNOWN (containerd lost the task) counts as exited: the agent replaces it, never waits on it. */
export function stateOf(state: ContainerStateName): ContainerState {
  if (state === 'CONTAINER_CREATED') return 'created';
  if (state === 'CONTAINER_RUNNING') return 'running';
  return 'exited';
}

export function sandboxSummaryOf(s: PodSandbox): SandboxSummary {
  return {
    id: s.id,
    name: s.metadata?.name ?? '',
    labels: s.labels ?? {},
    state: s.state === 'SANDBOX_READY' ? 'ready' : 'notready',
    createdAt: millis(s.createdAt) ?? 0,
  };
}

/** ListContainers has no times of start and end nor exit code: the runner inspects exited containers for them. */
export function summaryOf(c: CriContainer): ContainerSummary {
  return {
    id: c.id,
    name: c.metadata?.name ?? '',
    image: c.annotations?.[CriAnnotations.image] ?? c.image?.image ?? '',
    ...(c.imageRef === '' ? {} : { imageRef: c.imageRef }),
    labels: c.labels ?? {},
    state: stateOf(c.state),
    createdAt: millis(c.createdAt) ?? 0,
  };
}

/** What containerd's verbose ContainerStatus tells of the config (other runtimes: nothing, and that is fine). */
interface VerboseConfig {
  command?: string[];
  args?: string[];
  working_dir?: string;
  stdin?: boolean;
  stdin_once?: boolean;
  tty?: boolean;
  envs?: Array<{ key: string; value: string }>;
  linux?: { resources?: { cpu_period?: number; cpu_quota?: number } };
}

function verboseConfig(info: Record<string, string>): VerboseConfig {
  try {
    const parsed = JSON.parse(info['info'] ?? '{}') as { config?: VerboseConfig };
    return parsed.config ?? {};
  } catch {
    return {};
  }
}

function positive(n: Int64 | undefined | null): number | undefined {
  const v = n === undefined || n === null ? 0 : Number(n);
  return v > 0 ? v : undefined;
}

export function detailsOf(status: ContainerStatus, info: Record<string, string>): ContainerDetails {
  const labels = status.labels ?? {};
  const state = stateOf(status.state);
  const name = status.metadata?.name ?? '';
  const image = status.annotations?.[CriAnnotations.image] ?? status.image?.image ?? '';
  const startedAt = millis(status.startedAt);
  // containerd stamps startedAt when its StartContainer has started the task, and finishedAt with
  // the exit event's own time: a process that ends inside the start call (a container that fails at
  // once) is reported as ending a few ms before it started. It ran for no time: finished = started.
  const exitedAt = state === 'exited' ? millis(status.finishedAt) : undefined;
  const finishedAt = exitedAt !== undefined && startedAt !== undefined ? Math.max(exitedAt, startedAt) : exitedAt;
  const config = verboseConfig(info);
  const resources = status.resources?.linux ?? undefined;
  const memory = positive(resources?.memoryLimitInBytes);
  const cpuShares = positive(resources?.cpuShares);
  // containerd 1.6 may leave the status's resources out: the config it was created with says too.
  const asCreated = config.linux?.resources;
  const cpuLimitMillis = cpuLimitMillisOf(
    positive(resources?.cpuPeriod) ?? asCreated?.cpu_period,
    positive(resources?.cpuQuota) ?? asCreated?.cpu_quota,
  );
  return {
    id: status.id,
    name,
    image,
    labels,
    state,
    createdAt: millis(status.createdAt) ?? 0,
    ...(startedAt === undefined ? {} : { startedAt }),
    ...(finishedAt === undefined ? {} : { finishedAt }),
    ...(state === 'exited' ? { exitCode: status.exitCode } : {}),
    // What the runtime can tell back; ports are the sandbox's.
    spec: {
      name,
      podId: labels[Labels.manifestId] ?? '',
      image,
      // CRI `args` is our command (the image's CMD replaced), CRI `command` our entrypoint.
      ...(Array.isArray(config.args) && config.args.length > 0 ? { command: config.args } : {}),
      ...(Array.isArray(config.command) && config.command.length > 0 ? { entrypoint: config.command } : {}),
      ...(config.working_dir ? { workingDir: config.working_dir } : {}),
      ...(config.stdin === true ? { stdin: true, ...(config.stdin_once === true ? { stdinOnce: true } : {}) } : {}),
      ...(config.tty === true ? { tty: true } : {}),
      env: Object.fromEntries((config.envs ?? []).map((e) => [e.key, e.value])),
      ports: [],
      mounts: (status.mounts ?? []).map((m) => ({ volume: basename(m.hostPath), containerPath: m.containerPath, readOnly: m.readonly })),
      ...(memory === undefined ? {} : { memory }),
      ...(cpuShares === undefined ? {} : { cpuShares }),
      ...(cpuLimitMillis === undefined ? {} : { cpuLimitMillis }),
      labels,
    },
    raw: { status, info: parseInfo(info) },
  };
}

/** The verbose info values are JSON text; shown parsed. */
function parseInfo(info: Record<string, string>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(info ?? {})) {
    try {
      out[key] = JSON.parse(value) as unknown;
    } catch {
      out[key] = value;
    }
  }
  return out;
}
