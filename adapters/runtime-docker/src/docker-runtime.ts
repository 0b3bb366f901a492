import { resolve } from 'node:path';
import {
  KubeletError,
  Labels,
  Tokens,
  silentLogger,
  systemClock,
  type Clock,
  type ContainerDetails,
  type ContainerEvent,
  type ContainerEventSource,
  type ContainerRuntime,
  type ContainerSpec,
  type ContainerStats,
  type ContainerStatsSource,
  type ContainerSummary,
  type ExecResult,
  type ImageService,
  type ListOptions,
  type Logger,
  type Registry,
  type RuntimeCapabilities,
  type SandboxSpec,
  type SandboxSummary,
  type StatsRequest,
  type StatsSample,
  CFS_PERIOD_US,
  cfsQuotaOf,
  settledEvents,
} from '@kubelet-ts/core';
import { mountSourceDir } from '@kubelet-ts/host-volumes';
import type { DockerApi, DockerCreateOptions, DockerInspect, DockerVersion } from './docker-api.js';
import { connectDocker } from './docker-connect.js';
import { dockerEvents } from './docker-events.js';
import { DockerLogSource } from './docker-logs.js';
import { DockerImages } from './docker-images.js';
import { DockerSandboxes } from './docker-sandboxes.js';
import { DockerStatsSource } from './docker-stats-source.js';
import { DockerStreams } from './docker-streams.js';
import { engineKindOf, engineRefusal, familiarImageName, type EngineKind } from './engine-kind.js';
import { securityOptionsOf } from './docker-security.js';
import { ADAPTER, isNotModified, translate } from './errors.js';
import { collectExecOutput, detailsOf, summaryOf } from './mapping.js';

/** What `DockerRuntime` needs: the engine, where volumes go, the address ports are published on, the sandbox image, and the engine's log limits. */
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
  /**
   * What the engine keeps of each container's output: its `json-file` log, rotated at `maxSizeBytes`
   * and at most `maxFiles` files (the kubelet's `--container-log-max-size`, 10 MiB, and
   * `--container-log-max-files`, 5). Without a bound, a container flooding stdout grew Docker's log
   * to 1.3 GB in 15 s (issue 22).
   */
  readonly containerLogs?: { readonly maxSizeBytes: number; readonly maxFiles: number };
  /**
   * How long a pod's port-forward helper (one process in its network namespace, however many
   * connections) is kept after the last connection it made. Default 10 s.
   */
  readonly portForwardHelperIdleMs?: number;
}

/** The kubelet's defaults: 10 MiB a file, 5 files. */
export const DEFAULT_CONTAINER_LOGS = { maxSizeBytes: 10 * 1024 * 1024, maxFiles: 5 } as const;

/** The image of a pod's sandbox container unless told otherwise (the kubelet's pause image). */
export const DEFAULT_POD_INFRA_IMAGE = 'registry.k8s.io/pause:3.10';
/** Where pods' volume directories are made unless told otherwise. */
export const DEFAULT_VOLUMES_ROOT = '/var/lib/kubelet-ts/volumes';

/**
 * `ContainerRuntime` on a Docker engine. A pod's sandbox is an infrastructure container that holds
 * its network namespace and publishes its ports (see `DockerSandboxes`); the pod's containers join
 * it, so they reach each other on `localhost` (as every kubelet since mid-2014).
 */
export class DockerRuntime implements ContainerRuntime, ContainerStatsSource, ContainerEventSource {
  readonly name = ADAPTER;
  /** The engine's events, one-shot figures, logs, and exec/attach/port-forward (`DockerStreams`): Docker and Podman serve all four. */
  readonly capabilities: RuntimeCapabilities;
  /** The engine's images (see `DockerImages`). */
  readonly images: ImageService;
  readonly endpoint: string;
  private readonly docker: DockerApi;
  private readonly volumesRoot: string;
  private readonly podInfraImage: string;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly sandboxes: DockerSandboxes;
  private readonly statsSource: DockerStatsSource;
  private readonly streaming: DockerStreams;
  private readonly logConfig: { Type: string; Config: Record<string, string> };
  private engineVersion: Promise<DockerVersion> | undefined;

  constructor(options: DockerRuntimeOptions = {}) {
    const host = options.host ?? process.env['DOCKER_HOST'] ?? 'unix:///var/run/docker.sock';
    this.endpoint = host;
    this.docker = options.docker ?? connectDocker(host);
    this.volumesRoot = resolve(options.volumesRoot ?? DEFAULT_VOLUMES_ROOT);
    this.podInfraImage = options.podInfraImage ?? DEFAULT_POD_INFRA_IMAGE;
    this.logger = options.logger ?? silentLogger;
    this.clock = options.clock ?? systemClock;
    const logs = options.containerLogs ?? DEFAULT_CONTAINER_LOGS;
    this.logConfig = { Type: 'json-file', Config: { 'max-size': String(logs.maxSizeBytes), 'max-file': String(logs.maxFiles) } };
    this.images = new DockerImages({
      docker: this.docker,
      endpoint: host,
      clock: this.clock,
      logger: this.logger,
      pullProgressIntervalMs: options.pullProgressIntervalMs ?? 10_000,
      call: (what, fn) => this.call(what, fn),
    });
    const streaming = new DockerStreams({
      docker: this.docker,
      endpoint: host,
      clock: this.clock,
      logger: this.logger,
      call: (what, fn) => this.call(what, fn),
      engine: () => this.engine(),
      ...(options.portForwardHelperIdleMs === undefined ? {} : { portForwardHelperIdleMs: options.portForwardHelperIdleMs }),
    });
    this.streaming = streaming;
    this.statsSource = new DockerStatsSource({
      docker: this.docker,
      clock: this.clock,
      call: (what, fn) => this.call(what, fn),
      version: () => this.version(),
      endpoint: host,
    });
    this.capabilities = { events: this, stats: this.statsSource, logs: new DockerLogSource(this.docker, host), streaming };
    this.sandboxes = new DockerSandboxes({
      docker: this.docker,
      hostIp: options.hostIp ?? '0.0.0.0',
      podInfraImage: this.podInfraImage,
      volumesRoot: this.volumesRoot,
      clock: this.clock,
      logger: this.logger,
      call: (what, fn, notModifiedIsSuccess) => this.call(what, fn, notModifiedIsSuccess),
      engine: () => this.engine(),
      ensureImage: async (image) => {
        if (!(await this.images.hasImage(image))) await this.images.pull(image);
      },
    });
  }

  /** Resolves when the engine answers; rejects with `Unavailable` saying where and how to start one. */
  async ping(): Promise<void> {
    await this.call('ping', () => this.docker.ping());
  }

  runSandbox(spec: SandboxSpec): Promise<SandboxSummary> {
    return this.sandboxes.run(spec);
  }

  listSandboxes(options?: ListOptions): Promise<SandboxSummary[]> {
    return this.sandboxes.list(options);
  }

  stopSandbox(id: string): Promise<void> {
    this.streaming.forgetSandbox(id);
    return this.sandboxes.stop(id);
  }

  removeSandbox(id: string, options?: { readonly volumes?: boolean }): Promise<void> {
    this.streaming.forgetSandbox(id);
    return this.sandboxes.remove(id, options);
  }

  /** Ends what the runtime runs of its own (port-forward helpers); the engine's client needs no closing. */
  async close(): Promise<void> {
    this.streaming.close();
  }

  async list(options: ListOptions = {}): Promise<ContainerSummary[]> {
    const filters =
      options.podId !== undefined
        ? { label: [`${Labels.manifestId}=${options.podId}`] }
        : options.includeForeign === true
          ? undefined
          : { label: [Labels.manifestId] };
    const [found, engine] = await Promise.all([
      this.call('list containers', () => this.docker.listContainers({ all: true, ...(filters === undefined ? {} : { filters }) })),
      this.engine(),
    ]);
    const summaries = found.map((c) => summaryOf(c));
    // Podman writes image names out in full; show them as Docker does.
    return engine === 'podman' ? summaries.map((c) => ({ ...c, image: familiarImageName(c.image) })) : summaries;
  }

  async inspect(id: string): Promise<ContainerDetails> {
    const [info, engine] = await Promise.all([this.call(`inspect ${id}`, () => this.docker.getContainer(id).inspect()), this.engine()]);
    const details = detailsOf(info);
    if (engine === 'docker') return details;
    const image = familiarImageName(details.image);
    return { ...details, image, spec: { ...details.spec, image } };
  }

  async create(spec: ContainerSpec, sandboxId: string): Promise<ContainerSummary> {
    // No image check first: the engine answers 404 for a missing image, which is NotFound.
    const binds = await this.prepareVolumes(spec);
    // The engine creates a container that names an unknown container's network (it fails only at
    // start): one inspect gives the contract's NotFound at create.
    await this.call(`inspect sandbox ${sandboxId}`, () => this.docker.getContainer(sandboxId).inspect());
    // The container joins the sandbox's namespace, whose holder publishes the pod's ports. On Podman it
    // also joins its UTS namespace for the pod's hostname (it would keep its own; Docker shares it).
    const engine = await this.engine();
    const refused = engineRefusal(spec, engine);
    if (refused !== undefined) throw new KubeletError('InvalidManifest', refused, { adapter: ADAPTER });
    const uts = engine === 'podman' ? { UTSMode: `container:${sandboxId}` } : {};
    const inspectImage = () => this.call(`inspect image ${spec.image}`, () => this.docker.getImage(spec.image).inspect());
    const { User, HostConfig: security } = await securityOptionsOf(spec, inspectImage, sandboxId, engine);
    const options: DockerCreateOptions = {
      name: spec.name,
      Image: spec.image,
      // The 2014 command is the image's CMD replaced; a v1 command (entrypoint) its ENTRYPOINT,
      // and the engine then leaves the image's CMD out unless Cmd is given, as Kubernetes does.
      ...(spec.command === undefined ? {} : { Cmd: [...spec.command] }),
      ...(spec.entrypoint === undefined ? {} : { Entrypoint: [...spec.entrypoint] }),
      ...(spec.workingDir === undefined ? {} : { WorkingDir: spec.workingDir }),
      // v1 stdin/stdinOnce/tty: what `docker run -i -t` asks (no client attached: stdin waits for one).
      ...(spec.stdin === true ? { OpenStdin: true, ...(spec.stdinOnce === true ? { StdinOnce: true } : {}) } : {}),
      ...(spec.tty === true ? { Tty: true } : {}),
      Env: Object.entries(spec.env).map(([k, v]) => `${k}=${v}`),
      ...(User === undefined ? {} : { User }),
      Labels: { ...spec.labels },
      HostConfig: {
        ...security,
        NetworkMode: `container:${sandboxId}`,
        ...uts,
        Binds: binds,
        ...(spec.memory === undefined ? {} : { Memory: spec.memory }),
        ...(spec.cpuShares === undefined ? {} : { CpuShares: spec.cpuShares }),
        ...(spec.cpuLimitMillis === undefined ? {} : { CpuPeriod: CFS_PERIOD_US, CpuQuota: cfsQuotaOf(spec.cpuLimitMillis) }),
        LogConfig: this.logConfig,
      },
    };
    const created = await this.call(`create ${spec.name}`, () => this.docker.createContainer(options));
    return {
      id: created.id,
      name: spec.name,
      image: spec.image,
      labels: { ...spec.labels },
      state: 'created',
      createdAt: this.clock.now(),
    };
  }

  async start(id: string): Promise<void> {
    // A container whose sandbox is down cannot start (Conflict): the agent replaces the sandbox,
    // with its containers; a holder is never started again here.
    if ((await this.engine()) === 'podman') await this.refuseDownSandbox(id);
    await this.call(`start ${id}`, () => this.docker.getContainer(id).start(), true);
  }

  /**
   * Podman starts the container whose namespace another joins along with it, so starting a pod's
   * container would bring its stopped sandbox back (Docker refuses with 409). The sandbox must
   * stay down until the agent replaces it: on Podman, its holder is checked first.
   */
  private async refuseDownSandbox(id: string): Promise<void> {
    const info = await this.call(`inspect ${id}`, () => this.docker.getContainer(id).inspect());
    const holder = /^container:(.+)$/.exec(info.HostConfig.NetworkMode ?? '')?.[1];
    if (holder === undefined) return;
    const sandbox = await this.call(`inspect sandbox ${holder}`, () => this.docker.getContainer(holder).inspect());
    if (sandbox.State.Status !== 'running') {
      throw new KubeletError(
        'Conflict',
        `start ${info.Name.replace(/^\//, '')}: its sandbox ${sandbox.Name.replace(/^\//, '')} is ${sandbox.State.Status}`,
        { adapter: ADAPTER },
      );
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
  }

  async exec(id: string, command: readonly string[], timeoutMs: number): Promise<ExecResult> {
    const container = this.docker.getContainer(id);
    const info = await this.call(`inspect ${id}`, () => container.inspect());
    if (info.State.Status !== 'running')
      throw new KubeletError('Conflict', `exec in ${info.Name}: the container is ${info.State.Status}`, { adapter: ADAPTER });
    const exec = await this.call(`exec in ${id}`, () => container.exec({ Cmd: [...command], AttachStdout: true, AttachStderr: true }));
    const stream = await this.call(`exec in ${id}`, () => exec.start({}));
    const output = await collectExecOutput(stream, timeoutMs, this.clock);
    if (output === undefined) {
      throw new KubeletError('Timeout', `exec ${command.join(' ')} in ${info.Name}: no exit within ${timeoutMs} ms`, { adapter: ADAPTER });
    }
    const result = await this.call(`exec in ${id}`, () => exec.inspect());
    return { exitCode: result.ExitCode ?? -1, output };
  }

  /** The bind of each mount (see `mountSourceDir`: a pod volume or a claim, nothing outside the root). */
  private async prepareVolumes(spec: ContainerSpec): Promise<string[]> {
    const binds: string[] = [];
    for (const m of spec.mounts) {
      // A HOST mount (2014's mountType: HOST, allowed by --allow-host-mounts) binds the host path as it is.
      const dir = await mountSourceDir(this.volumesRoot, spec.podId, m);
      binds.push(`${dir}:${m.containerPath}:${m.readOnly ? 'ro' : 'rw'}`);
    }
    return binds;
  }

  /** Figures from the kernel for a local engine, else the engine's one-shot ones (see `DockerStatsSource`). */
  stats(id: string): Promise<ContainerStats> {
    return this.statsSource.stats(id);
  }

  /** Each container and sandbox holder read once, a few at once; gone ones are left out. */
  sample(request: StatsRequest): Promise<StatsSample> {
    return this.statsSource.sample(request);
  }

  /** Started, exited and removed events of the agent's containers, from `GET /events` (see `dockerEvents`). */
  events(signal: AbortSignal): AsyncIterable<ContainerEvent> {
    const docker = this.docker;
    const stream = dockerEvents(signal, {
      getEvents: async (options) => {
        if (docker.getEvents === undefined)
          throw new KubeletError('Unavailable', 'the client given as options.docker has no getEvents: pass a dockerode client', {
            adapter: ADAPTER,
          });
        return docker.getEvents(options);
      },
      engine: () => this.engine(),
      endpoint: this.endpoint,
      logger: this.logger,
    });
    // Docker logs `die` and `destroy` before its list (read from a copy the daemon updates
    // afterwards) shows them: each waits until the list agrees.
    return settledEvents(stream, signal, {
      listedState: async (id) => {
        const [found] = await this.call('list containers', () => this.docker.listContainers({ all: true, filters: { id: [id] } }));
        return found === undefined ? undefined : summaryOf(found).state;
      },
      onUnsettled: (event, why) =>
        this.logger.debug(
          { endpoint: this.endpoint, containerId: event.containerId, type: event.type },
          `event passed on unchecked: ${why}`,
        ),
    });
  }

  // ---- plumbing --------------------------------------------------------------------------------

  /**
   * What serves the API (`GET /version`), asked once; a failed ask is asked again next time. The
   * few answers of Podman that differ from Docker's are handled where they arise (see `EngineKind`).
   */
  private async engine(): Promise<EngineKind> {
    return engineKindOf(await this.version());
  }

  /** The engine as a Node's `nodeInfo.containerRuntimeVersion` says it: `docker://20.10.24`, `podman://4.3.1`. */
  async runtimeVersion(): Promise<string> {
    const version = await this.version();
    return `${engineKindOf(version)}://${version.Version}`;
  }

  /** `GET /version`, asked once (see `engine`); its Podman version tells a quirk of its stats. */
  private version(): Promise<DockerVersion> {
    this.engineVersion ??= this.call('version', () => this.docker.version()).then(
      (version) => {
        if (engineKindOf(version) === 'podman')
          this.logger.info({ endpoint: this.endpoint, version: version.Version }, 'the Docker API is served by Podman');
        return version;
      },
      (error: unknown) => {
        this.engineVersion = undefined;
        throw error;
      },
    );
    return this.engineVersion;
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

/** Registers a `DockerRuntime` as the agent's runtime and returns it. */
export function registerDockerRuntime(registry: Registry, options: DockerRuntimeOptions = {}): DockerRuntime {
  const runtime = new DockerRuntime(options);
  registry.register(Tokens.Runtime, { useValue: runtime });
  return runtime;
}
