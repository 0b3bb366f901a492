import { createHash } from 'node:crypto';
import { resolve } from 'node:path';
import Docker from 'dockerode';
import {
  KubeletError,
  Labels,
  Tokens,
  canonicalJson,
  escapeNamePart,
  repeatEvery,
  silentLogger,
  systemClock,
  type Clock,
  type ContainerDetails,
  type ContainerRuntime,
  type ContainerSpec,
  type ContainerSummary,
  type ExecResult,
  type ListOptions,
  type Logger,
  type PortBinding,
  type Registry,
} from '@kubelet-ts/core';
import type { DockerApi, DockerContainerInfo, DockerCreateOptions, DockerInspect, PullProgressEvent } from './docker-api.js';
import { ADAPTER, classifyPullError, dockerDetail, isNotModified, translate } from './errors.js';
import { collectExecOutput, detailsOf, summaryOf } from './mapping.js';
import { podVolumeDir } from './volume-dirs.js';

export interface DockerRuntimeOptions {
  /** A ready client; by default one is made for `host`. */
  readonly docker?: DockerApi;
  /** `unix:///path/to/docker.sock` or `tcp://host:port`. Default: `DOCKER_HOST`, else `unix:///var/run/docker.sock`. */
  readonly host?: string;
  /** Pod volumes live in `<volumesRoot>/<manifest id>/<volume name>`. Default `/var/lib/kubelet-ts/volumes`. */
  readonly volumesRoot?: string;
  /** The host address published ports bind to. Default `0.0.0.0`, as a hostPort does in the kubelet. */
  readonly hostIp?: string;
  /** The image of each pod's infrastructure container, which holds its network namespace and ports. */
  readonly podInfraImage?: string;
  readonly logger?: Logger;
  /** How often a long pull logs its progress. Default 10 s. */
  readonly pullProgressIntervalMs?: number;
  /** Time for creation stamps, pull durations and timers (exec deadlines, pull progress). Default `systemClock`. */
  readonly clock?: Clock;
}

export const DEFAULT_POD_INFRA_IMAGE = 'registry.k8s.io/pause:3.10';
export const DEFAULT_VOLUMES_ROOT = '/var/lib/kubelet-ts/volumes';

/** Labels of a pod's infrastructure container (which carries no manifest-id, so `list` never shows it). */
export const InfraLabels = {
  pod: 'io.kubelet-ts.pod-infra',
  portsHash: 'io.kubelet-ts.pod-ports-hash',
} as const;

/**
 * `ContainerRuntime` on a Docker engine. The containers of one manifest share one network
 * namespace, held by an infrastructure container per pod that also publishes the pod's ports, so
 * the containers of a pod reach each other on `localhost` (as every kubelet since mid-2014).
 */
export class DockerRuntime implements ContainerRuntime {
  readonly name = ADAPTER;
  readonly endpoint: string;
  private readonly docker: DockerApi;
  private readonly volumesRoot: string;
  private readonly hostIp: string;
  private readonly podInfraImage: string;
  private readonly logger: Logger;
  private readonly pullProgressIntervalMs: number;
  private readonly clock: Clock;
  private readonly pulls = new Map<string, Promise<void>>();

  constructor(options: DockerRuntimeOptions = {}) {
    const host = options.host ?? process.env['DOCKER_HOST'] ?? 'unix:///var/run/docker.sock';
    this.endpoint = host;
    this.docker = options.docker ?? connect(host);
    this.volumesRoot = resolve(options.volumesRoot ?? DEFAULT_VOLUMES_ROOT);
    this.hostIp = options.hostIp ?? '0.0.0.0';
    this.podInfraImage = options.podInfraImage ?? DEFAULT_POD_INFRA_IMAGE;
    this.logger = options.logger ?? silentLogger;
    this.pullProgressIntervalMs = options.pullProgressIntervalMs ?? 10_000;
    this.clock = options.clock ?? systemClock;
  }

  /** Resolves when the engine answers; rejects with `Unavailable` saying where and how to start one. */
  async ping(): Promise<void> {
    await this.call('ping', () => this.docker.ping());
  }

  async list(options: ListOptions = {}): Promise<ContainerSummary[]> {
    const filters = options.includeForeign === true ? undefined : { label: [Labels.manifestId] };
    const found = await this.call('list containers', () => this.docker.listContainers({ all: true, ...(filters === undefined ? {} : { filters }) }));
    return found.map(summaryOf);
  }

  async inspect(id: string): Promise<ContainerDetails> {
    const info = await this.call(`inspect ${id}`, () => this.docker.getContainer(id).inspect());
    return detailsOf(info);
  }

  async create(spec: ContainerSpec): Promise<ContainerSummary> {
    // No image check first: the engine answers 404 for a missing image, which is NotFound.
    const binds = await this.prepareVolumes(spec);
    // Pods get a shared namespace; a container without our labels (an embedder's own) gets its
    // ports directly, like `docker run -p`.
    const pod = spec.labels[Labels.manifestId] !== undefined;
    const network = pod ? { NetworkMode: `container:${await this.ensureInfra(spec)}` } : { PortBindings: this.bindings(spec.ports).bindings };
    const options: DockerCreateOptions = {
      name: spec.name,
      Image: spec.image,
      ...(spec.command === undefined ? {} : { Cmd: [...spec.command] }),
      ...(spec.workingDir === undefined ? {} : { WorkingDir: spec.workingDir }),
      Env: Object.entries(spec.env).map(([k, v]) => `${k}=${v}`),
      Labels: { ...spec.labels },
      ...(pod ? {} : { ExposedPorts: this.bindings(spec.ports).exposed }),
      HostConfig: {
        ...network,
        Binds: binds,
        ...(spec.memory === undefined ? {} : { Memory: spec.memory }),
        ...(spec.cpuShares === undefined ? {} : { CpuShares: spec.cpuShares }),
      },
    };
    let created: { id: string };
    try {
      created = await this.call(`create ${spec.name}`, () => this.docker.createContainer(options));
    } catch (error) {
      // A namespace made for a container that could not be created must not outlive it.
      if (pod) await this.removeInfraIfUnused(spec.labels[Labels.manifestId] ?? spec.podId, spec.labels[Labels.node] ?? '').catch(() => undefined);
      throw error;
    }
    return { id: created.id, name: spec.name, image: spec.image, labels: { ...spec.labels }, state: 'created', createdAt: this.clock.now() };
  }

  async start(id: string): Promise<void> {
    try {
      await this.call(`start ${id}`, () => this.docker.getContainer(id).start(), true);
    } catch (error) {
      // A pod container made before its namespace holder stopped (the engine restarted, say)
      // cannot start until that holder runs again. Only a failed start pays for the look.
      const infra = error instanceof KubeletError && error.code === 'Conflict' ? await this.stoppedInfraOf(id) : undefined;
      if (infra === undefined) throw error;
      await this.startInfra(infra);
      await this.call(`start ${id}`, () => this.docker.getContainer(id).start(), true);
    }
  }

  async stop(id: string, timeoutSeconds: number): Promise<void> {
    // The engine sends the stop signal, waits `t` seconds, then kills: the contract's behaviour.
    await this.call(`stop ${id}`, () => this.docker.getContainer(id).stop({ t: Math.max(0, Math.round(timeoutSeconds)) }), true);
  }

  async remove(id: string, options: { readonly force?: boolean } = {}): Promise<void> {
    let info: DockerInspect;
    try {
      info = await this.call(`inspect ${id}`, () => this.docker.getContainer(id).inspect());
    } catch (error) {
      if (error instanceof KubeletError && error.code === 'NotFound') return;
      throw error;
    }
    if (info.State.Status === 'running' && options.force !== true) {
      throw new KubeletError('Conflict', `remove ${info.Name}: the container is running; stop it first or force`, { adapter: ADAPTER });
    }
    try {
      await this.call(`remove ${id}`, () => this.docker.getContainer(id).remove({ force: options.force === true, v: true }));
    } catch (error) {
      if (!(error instanceof KubeletError && error.code === 'NotFound')) throw error;
    }
    const labels = info.Config.Labels ?? {};
    const podId = labels[Labels.manifestId];
    if (podId !== undefined) await this.removeInfraIfUnused(podId, labels[Labels.node] ?? '');
  }

  pull(image: string): Promise<void> {
    let pending = this.pulls.get(image);
    if (pending === undefined) {
      pending = this.transfer(image).finally(() => this.pulls.delete(image));
      this.pulls.set(image, pending);
    }
    return pending;
  }

  async hasImage(image: string): Promise<boolean> {
    try {
      await this.call(`inspect image ${image}`, () => this.docker.getImage(image).inspect());
      return true;
    } catch (error) {
      if (error instanceof KubeletError && error.code === 'NotFound') return false;
      throw error;
    }
  }

  async exec(id: string, command: readonly string[], timeoutMs: number): Promise<ExecResult> {
    const container = this.docker.getContainer(id);
    const info = await this.call(`inspect ${id}`, () => container.inspect());
    if (info.State.Status !== 'running') throw new KubeletError('Conflict', `exec in ${info.Name}: the container is ${info.State.Status}`, { adapter: ADAPTER });
    const exec = await this.call(`exec in ${id}`, () => container.exec({ Cmd: [...command], AttachStdout: true, AttachStderr: true }));
    const stream = await this.call(`exec in ${id}`, () => exec.start({}));
    const output = await collectExecOutput(stream, timeoutMs, this.clock);
    if (output === undefined) {
      throw new KubeletError('Timeout', `exec ${command.join(' ')} in ${info.Name}: no exit within ${timeoutMs} ms`, { adapter: ADAPTER });
    }
    const result = await this.call(`exec in ${id}`, () => exec.inspect());
    return { exitCode: result.ExitCode ?? -1, output };
  }

  // ---- pods ----------------------------------------------------------------------------------

  /** The pod's infrastructure container, created and started when missing; returns its id. */
  private async ensureInfra(spec: ContainerSpec): Promise<string> {
    // Keyed by the labels, which is what `remove` can read back from a container.
    const podId = spec.labels[Labels.manifestId] ?? spec.podId;
    const node = spec.labels[Labels.node] ?? '';
    const portsHash = hashPorts(spec.podPorts);
    const existing = await this.findInfra(podId, node);
    let current: DockerContainerInfo | undefined;
    for (const infra of existing) {
      // Ports are fixed when a namespace is made: another port set means a new namespace. The
      // planner has already removed the pod's containers, whose spec hashes cover the pod's ports.
      if (infra.Labels[InfraLabels.portsHash] === portsHash && current === undefined) current = infra;
      else await this.call(`remove pod infra ${infra.Id}`, () => this.docker.getContainer(infra.Id).remove({ force: true, v: true }));
    }
    if (current?.State === 'running') return current.Id;
    if (current !== undefined) {
      try {
        await this.startInfra(current.Id);
        return current.Id;
      } catch (error) {
        // An engine stopped while it started this container can leave it unstartable ("task
        // already exists"): a new namespace is the way out, as the kubelet makes a new sandbox.
        this.logger.warn({ podId, infra: current.Id.slice(0, 12), err: error }, 'pod network namespace cannot start; replacing it');
        await this.call(`remove pod infra ${current.Id}`, () => this.docker.getContainer(current.Id).remove({ force: true, v: true }));
      }
    }
    if (!(await this.hasImage(this.podInfraImage))) await this.pull(this.podInfraImage);
    const { exposed, bindings } = this.bindings(spec.podPorts);
    const name = `POD--${escapeNamePart(podId)}--${randomSuffix()}`;
    const created = await this.call(`create pod infra for ${podId}`, () =>
      this.docker.createContainer({
        name,
        Image: this.podInfraImage,
        Labels: {
          [InfraLabels.pod]: podId,
          [InfraLabels.portsHash]: portsHash,
          [Labels.node]: node,
          ...(spec.labels[Labels.source] === undefined ? {} : { [Labels.source]: spec.labels[Labels.source] }),
        },
        ExposedPorts: exposed,
        HostConfig: { PortBindings: bindings },
      }),
    );
    await this.start(created.id);
    this.logger.info({ podId, infra: created.id.slice(0, 12), ports: spec.podPorts.length }, 'pod network namespace created');
    return created.id;
  }

  private async startInfra(id: string): Promise<void> {
    await this.call(`start pod infra ${id}`, () => this.docker.getContainer(id).start(), true);
  }

  /** The id of the pod infra container whose namespace `id` joins, when that container is not running. */
  private async stoppedInfraOf(id: string): Promise<string | undefined> {
    const info = await this.call(`inspect ${id}`, () => this.docker.getContainer(id).inspect());
    const mode = info.HostConfig.NetworkMode ?? '';
    if (!mode.startsWith('container:')) return undefined;
    const infraId = mode.slice('container:'.length);
    const infra = await this.call(`inspect pod infra ${infraId}`, () => this.docker.getContainer(infraId).inspect());
    return infra.Config.Labels?.[InfraLabels.pod] !== undefined && infra.State.Status !== 'running' ? infra.Id : undefined;
  }

  private bindings(ports: readonly PortBinding[]) {
    const exposed: Record<string, Record<string, never>> = {};
    const bindings: Record<string, Array<{ HostIp: string; HostPort: string }>> = {};
    for (const p of ports) {
      const key = `${p.containerPort}/${p.protocol.toLowerCase()}`;
      exposed[key] = {};
      if (p.hostPort !== undefined) (bindings[key] ??= []).push({ HostIp: this.hostIp, HostPort: String(p.hostPort) });
    }
    return { exposed, bindings };
  }

  private findInfra(podId: string, node: string): Promise<DockerContainerInfo[]> {
    return this.call(`list pod infra for ${podId}`, () =>
      this.docker.listContainers({ all: true, filters: { label: [`${InfraLabels.pod}=${podId}`, `${Labels.node}=${node}`] } }),
    );
  }

  /** The last container of a pod gone, its namespace goes too. */
  private async removeInfraIfUnused(podId: string, node: string): Promise<void> {
    const members = await this.call(`list pod ${podId}`, () =>
      this.docker.listContainers({ all: true, filters: { label: [`${Labels.manifestId}=${podId}`, `${Labels.node}=${node}`] } }),
    );
    if (members.length > 0) return;
    for (const infra of await this.findInfra(podId, node)) {
      try {
        await this.call(`remove pod infra ${infra.Id}`, () => this.docker.getContainer(infra.Id).remove({ force: true, v: true }));
      } catch (error) {
        if (!(error instanceof KubeletError && error.code === 'NotFound')) throw error;
      }
    }
  }

  /** Makes `<root>/<pod>/<volume>` for each mount (see `podVolumeDir`: nothing outside the root). */
  private async prepareVolumes(spec: ContainerSpec): Promise<string[]> {
    const binds: string[] = [];
    for (const m of spec.mounts) {
      const dir = await podVolumeDir(this.volumesRoot, spec.podId, m.volume);
      binds.push(`${dir}:${m.containerPath}:${m.readOnly ? 'ro' : 'rw'}`);
    }
    return binds;
  }

  // ---- plumbing --------------------------------------------------------------------------------

  private async transfer(image: string): Promise<void> {
    const started = this.clock.now();
    let stream: NodeJS.ReadableStream;
    try {
      stream = await this.docker.pull(image);
    } catch (error) {
      const t = translate(error, `pull ${image}`, this.endpoint);
      if (t.code === 'Unavailable') throw t; // the engine itself does not answer
      throw classifyPullError(image, dockerDetail(error), error);
    }
    let last: PullProgressEvent | undefined;
    const stopTicker = repeatEvery(this.clock, this.pullProgressIntervalMs, () => {
      this.logger.info({ image, elapsedMs: this.clock.now() - started, status: last?.status, progress: last?.progress }, 'pulling image');
    });
    try {
      await new Promise<void>((resolvePull, reject) => {
        this.docker.modem.followProgress(
          stream,
          (error, output) => {
            const failed = output.find((e): e is PullProgressEvent => typeof (e as PullProgressEvent).error === 'string');
            if (error !== null || failed !== undefined) reject(classifyPullError(image, failed?.error ?? error?.message ?? 'pull failed', error));
            else resolvePull();
          },
          (event) => {
            last = event;
          },
        );
      });
    } finally {
      stopTicker();
    }
    this.logger.info({ image, durationMs: this.clock.now() - started }, 'image pulled');
  }

  /** Runs an engine call, translating failures; `notModifiedIsSuccess` for start/stop's 304. */
  private async call<T>(what: string, fn: () => Promise<T>, notModifiedIsSuccess = false): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      if (notModifiedIsSuccess && isNotModified(error)) return undefined as T;
      throw translate(error, what, this.endpoint);
    }
  }
}

function connect(host: string): DockerApi {
  if (host.startsWith('unix://')) return new Docker({ socketPath: host.slice('unix://'.length) });
  if (host.startsWith('/')) return new Docker({ socketPath: host });
  const url = new URL(host.replace(/^tcp:/, 'http:'));
  return new Docker({ host: url.hostname, port: Number(url.port || 2375), protocol: url.protocol === 'https:' ? 'https' : 'http' });
}

function randomSuffix(): string {
  return Math.floor(Math.random() * 0x1_0000_0000).toString(16).padStart(8, '0');
}

function hashPorts(ports: readonly PortBinding[]): string {
  return createHash('sha256').update(canonicalJson(ports)).digest('hex').slice(0, 16);
}

/** Registers a `DockerRuntime` as the agent's runtime and returns it. */
export function registerDockerRuntime(registry: Registry, options: DockerRuntimeOptions = {}): DockerRuntime {
  const runtime = new DockerRuntime(options);
  registry.register(Tokens.Runtime, { useValue: runtime });
  return runtime;
}
