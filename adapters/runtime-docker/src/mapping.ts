import { Labels, cpuLimitMillisOf, type Clock, type ContainerDetails, type ContainerState, type ContainerSummary } from '@kubelet-ts/core';
import type { DockerContainerInfo, DockerInspect } from './docker-api.js';

/** Engine records → the core's domain types, and the exec stream → text. */

const MAX_EXEC_OUTPUT = 64 * 1024;

/**
 * Reads an exec's multiplexed stream (8-byte frame headers) until it ends; `undefined` when it
 * has not ended within `timeoutMs` on `clock`.
 */
export function collectExecOutput(stream: NodeJS.ReadableStream, timeoutMs: number, clock: Clock): Promise<string | undefined> {
  return new Promise((resolve) => {
    let buffer = Buffer.alloc(0);
    let output = '';
    const timer = clock.setTimeout(() => {
      (stream as { destroy?: () => void }).destroy?.();
      resolve(undefined);
    }, timeoutMs);
    stream.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      while (buffer.length >= 8) {
        const size = buffer.readUInt32BE(4);
        if (buffer.length < 8 + size) break;
        if (output.length < MAX_EXEC_OUTPUT) output += buffer.subarray(8, 8 + size).toString('utf8');
        buffer = buffer.subarray(8 + size);
      }
    });
    const done = () => {
      clock.clearTimeout(timer);
      resolve(output.slice(0, MAX_EXEC_OUTPUT));
    };
    stream.on('end', done);
    stream.on('close', done);
    stream.on('error', done);
  });
}

function stateOf(docker: string): ContainerState {
  if (docker === 'created') return 'created';
  if (docker === 'running' || docker === 'restarting' || docker === 'paused') return 'running';
  return 'exited';
}

export function summaryOf(c: DockerContainerInfo): ContainerSummary {
  const exit = /^Exited \((-?\d+)\)/.exec(c.Status);
  return {
    id: c.Id,
    name: (c.Names[0] ?? '').replace(/^\//, ''),
    image: c.Image,
    ...(c.ImageID === undefined || c.ImageID === '' ? {} : { imageRef: c.ImageID }),
    labels: c.Labels ?? {},
    state: stateOf(c.State),
    createdAt: c.Created * 1000,
    ...(exit?.[1] === undefined ? {} : { exitCode: Number(exit[1]) }),
  };
}

function time(iso: string): number | undefined {
  const t = Date.parse(iso);
  return Number.isNaN(t) || t <= 0 ? undefined : t;
}

export function detailsOf(info: DockerInspect): ContainerDetails {
  const labels = info.Config.Labels ?? {};
  const state = stateOf(info.State.Status);
  const startedAt = time(info.State.StartedAt);
  const finishedAt = state === 'exited' ? time(info.State.FinishedAt) : undefined;
  const env = Object.fromEntries((info.Config.Env ?? []).map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]));
  // An engine may give a single string for a shell-form entrypoint.
  const raw = info.Config.Entrypoint;
  const entrypoint = raw == null || raw.length === 0 ? undefined : typeof raw === 'string' ? [raw] : raw;
  const cpuLimitMillis = cpuLimitMillisOf(info.HostConfig.CpuPeriod, info.HostConfig.CpuQuota);
  return {
    id: info.Id,
    name: info.Name.replace(/^\//, ''),
    image: info.Config.Image,
    labels,
    state,
    createdAt: Date.parse(info.Created),
    ...(startedAt === undefined ? {} : { startedAt }),
    ...(finishedAt === undefined ? {} : { finishedAt }),
    ...(state === 'exited' ? { exitCode: info.State.ExitCode } : {}),
    // What the engine can tell back; ports live on the pod's infrastructure container.
    spec: {
      name: info.Name.replace(/^\//, ''),
      podId: labels[Labels.manifestId] ?? '',
      image: info.Config.Image,
      ...(info.Config.Cmd == null ? {} : { command: info.Config.Cmd }),
      ...(entrypoint === undefined ? {} : { entrypoint }),
      ...(info.Config.WorkingDir ? { workingDir: info.Config.WorkingDir } : {}),
      ...(info.Config.OpenStdin === true ? { stdin: true, ...(info.Config.StdinOnce === true ? { stdinOnce: true } : {}) } : {}),
      ...(info.Config.Tty === true ? { tty: true } : {}),
      env,
      ports: [],
      mounts: (info.HostConfig.Binds ?? []).map((b) => {
        const [host = '', containerPath = '', mode = 'rw'] = b.split(':');
        return { volume: host.split('/').at(-1) ?? '', containerPath, readOnly: mode.split(',').includes('ro') };
      }),
      ...(info.HostConfig.Memory ? { memory: info.HostConfig.Memory } : {}),
      ...(info.HostConfig.CpuShares ? { cpuShares: info.HostConfig.CpuShares } : {}),
      ...(cpuLimitMillis === undefined ? {} : { cpuLimitMillis }),
      labels,
    },
    raw: info,
  };
}
