import { KernelStats } from '@kubelet-ts/cgroup-stats';
import { join, resolve } from 'node:path';
import {
  KubeletError,
  Labels,
  Tokens,
  needsImageUser,
  silentLogger,
  systemClock,
  type Clock,
  type ContainerDetails,
  type ContainerEvent,
  type ContainerEventSource,
  type ContainerRuntime,
  type ContainerSpec,
  type ContainerSummary,
  type ExecResult,
  type ImageService,
  type ListOptions,
  type LogLine,
  type LogTextOptions,
  type LogReadOptions,
  type Logger,
  type Registry,
  type RuntimeCapabilities,
  type SandboxSpec,
  type SandboxSummary,
  ignoreNotFound,
  settledEvents,
} from '@kubelet-ts/core';
import { mountSourceDir, removePodVolumes } from '@kubelet-ts/host-volumes';
import type { ContainerStatus, CriApi, CriMount, PodSandboxConfig, PodSandboxStatus, VersionResponse } from './cri-api.js';
import { ContainerdEvents } from './containerd-events.js';
import { CriImages } from './cri-images.js';
import { criSecurityOf } from './cri-security.js';
import { RecentSandboxes, afterFailedRun, beforeRun } from './sandbox-runs.js';
import { ListedRecords } from './listed-records.js';
import { connectCri } from './cri-client.js';
import { DEFAULT_CRI_ENDPOINT, DEFAULT_LOG_ROTATION, DEFAULT_VOLUMES_ROOT, isUnixEndpoint, type CriRuntimeOptions } from './cri-options.js';
import { CriLogFiles } from './cri-log-files.js';
import { criLogRotation, tellingRotation } from './cri-log-rotation.js';
import { criLogText } from './cri-log-text.js';
import { criLogs } from './cri-logs.js';
import { execSyncIn } from './cri-exec.js';
import { CriStats } from './cri-stats.js';
import { containerdTasks } from './containerd-tasks.js';
import { CriStreams, type CriCall } from './cri-streams.js';
import { ADAPTER, translate } from './errors.js';
import { buildContainerConfig } from './container-config.js';
import { detailsOf, summaryOf } from './mapping.js';
import { buildSandboxConfig, recordOf, sandboxConfigOf } from './sandbox-config.js';

/** The last of `exitShown`'s doubling waits (5, 10, … 1280 ms: about 2.5 s in all). */
const EXIT_SHOWN_LAST_WAIT_MS = 1_280;

/**
 * `ContainerRuntime` over the Container Runtime Interface (CRI v1, gRPC): containerd (≥ 1.6, its
 * `cri` plugin) or CRI-O. A pod is a CRI pod sandbox (RunPodSandbox: its network namespace and
 * host ports), and its containers are made in it (CreateContainer with the sandbox's config).
 *
 * Labels are CRI labels, so ownership and adoption after an agent restart work as on Docker; what
 * the adapter needs beyond them is kept in annotations (`CriAnnotations`). Host ports are checked
 * before a sandbox runs (see `assertHostPortsFree`): CNI's portmap would let two sandboxes share
 * one. Call `close()` (or `dispose()`) to close the gRPC channel.
 */
export class CriRuntime implements ContainerRuntime, ContainerEventSource {
  readonly name = ADAPTER;
  /** containerd's own event service, the log files it writes, its streaming server, CRI's stats calls (see `CriStats`). */
  readonly capabilities: RuntimeCapabilities;
  /** CRI's ImageService (see `CriImages`). */
  readonly images: ImageService;
  private readonly criImages: CriImages;
  private readonly listed = new ListedRecords((id) => this.sandboxStatus(id));
  private readonly recent: RecentSandboxes;
  /** `call`, as the adapter's parts take it. */
  private readonly criCall: CriCall = (what, fn) => this.call(what, fn);
  readonly endpoint: string;
  private readonly cri: CriApi;
  private readonly volumesRoot: string;
  private readonly logFiles: CriLogFiles;
  /** The rotation of the log files, told of every change of the running containers this runtime makes or passes on. */
  private readonly rotation: ReturnType<typeof criLogRotation>;
  private readonly hostIp: string;
  private readonly cgroupParent: string | undefined;
  private readonly runtimeHandler: string | undefined;
  private readonly requestTimeoutMs: number;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly changes: ContainerdEvents;
  private readonly streams: CriStreams;

  constructor(options: CriRuntimeOptions = {}) {
    this.endpoint = options.endpoint ?? DEFAULT_CRI_ENDPOINT;
    this.cri = options.cri ?? connectCri(this.endpoint);
    this.volumesRoot = resolve(options.volumesRoot ?? DEFAULT_VOLUMES_ROOT);
    this.hostIp = options.hostIp ?? '0.0.0.0';
    this.cgroupParent = options.cgroupParent;
    this.runtimeHandler = options.runtimeHandler;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 120_000;
    this.logger = options.logger ?? silentLogger;
    this.clock = options.clock ?? systemClock;
    this.recent = new RecentSandboxes(this.clock);
    this.images = this.criImages = new CriImages({
      cri: this.cri,
      endpoint: this.endpoint,
      pullTimeoutMs: options.pullTimeoutMs ?? 15 * 60_000,
      clock: this.clock,
      logger: this.logger,
      call: this.criCall,
    });
    this.changes = new ContainerdEvents({
      endpoint: this.endpoint,
      labelsOf: async (id) => (await ignoreNotFound(this.containerStatus(id)))?.labels ?? undefined,
      exitShown: (id) => this.exitShown(id),
      onOtherExit: (id) => this.recent.forget(id),
    });
    this.logFiles = CriLogFiles.of(options, this.logger);
    this.rotation = criLogRotation(this.cri, this.criCall, options.containerLogs ?? DEFAULT_LOG_ROTATION, this.logger);
    // containerd's own task service shares its socket: how an exec's process a caller left is ended
    // (not with a CRI client handed in, which is not a containerd).
    const tasks = options.cri === undefined ? containerdTasks(this.endpoint, this.requestTimeoutMs) : undefined;
    this.streams = new CriStreams(this.cri, this.criCall, this.requestTimeoutMs, tasks, this.logger);
    const onHost = isUnixEndpoint(this.endpoint)
      ? { kernel: options.kernel === false ? undefined : KernelStats.open(options.kernel) }
      : undefined;
    this.capabilities = {
      events: this,
      stats: new CriStats(this.cri, this.criCall, this.clock, this.logger, onHost),
      logs: this,
      streaming: this.streams,
    };
  }

  /** The runtime's name and versions; rejects with `Unavailable` saying where and how to start one. */
  async version(): Promise<VersionResponse> {
    return this.call('version', (deadline) => this.cri.version({}, deadline));
  }

  /** Closes the gRPC channel and any stream session still open; calls after it fail. */
  close(): void {
    void this.rotation?.rotation.close();
    this.cri.close();
    this.changes.close();
    this.streams.close();
  }

  /** `close()`, under the name tsyringe's `container.dispose()` calls. */
  dispose(): void {
    this.close();
  }

  async runSandbox(spec: SandboxSpec): Promise<SandboxSummary> {
    const logDirectory = this.logFiles.podDirectory(spec);
    const config = buildSandboxConfig(spec, {
      // CRI's empty host IP is "every address"; portmap is given no -d for it.
      hostIp: this.hostIp === '0.0.0.0' ? '' : this.hostIp,
      ...(logDirectory === undefined ? {} : { logDirectory }),
      ...(this.cgroupParent === undefined ? {} : { cgroupParent: this.cgroupParent }),
    });
    const portMappings = config.portMappings ?? [];
    await beforeRun(spec.name, portMappings, this.cri, this.criCall);
    if (logDirectory !== undefined) await this.logFiles.makePodDirectory(logDirectory);
    const started = this.clock.now();
    let id: string;
    try {
      // RunPodSandbox resolves once the sandbox is ready (CRI's promise), its failures clean up after themselves.
      ({ podSandboxId: id } = await this.call(`run sandbox ${spec.name}`, (deadline) =>
        this.cri.runPodSandbox({ config, ...(this.runtimeHandler === undefined ? {} : { runtimeHandler: this.runtimeHandler }) }, deadline),
      ));
    } catch (error) {
      // A taken name's sandbox keeps its pod's log folder (the same folder): the check comes first.
      await afterFailedRun(spec.name, spec.podId, portMappings, this.cri, this.criCall);
      await this.logFiles.removePodDirectory(logDirectory);
      throw error;
    }
    this.recent.ran(id, config);
    this.logger.info(
      { podId: spec.podId, sandbox: id.slice(0, 12), ports: portMappings.length, durationMs: this.clock.now() - started },
      'pod sandbox ready',
    );
    // Ready when RunPodSandbox answers: no status call on the way to the pod's first container.
    return { id, name: spec.name, labels: { ...spec.labels }, state: 'ready', createdAt: this.clock.now() };
  }

  async listSandboxes(options: ListOptions = {}): Promise<SandboxSummary[]> {
    // CRI's label selector matches values only; "has our label" is decided here.
    const filter = options.podId === undefined ? {} : { filter: { labelSelector: { [Labels.sandbox]: options.podId } } };
    const { items } = await this.call('list sandboxes', (deadline) => this.cri.listPodSandbox(filter, deadline));
    const listed = items.filter((s) => options.includeForeign === true || s.labels?.[Labels.sandbox] !== undefined);
    for (const s of listed) if (s.state !== 'SANDBOX_READY') this.recent.forget(s.id);
    return this.listed.sandboxesOf(listed, options.podId === undefined);
  }

  async stopSandbox(id: string): Promise<void> {
    this.recent.forget(id);
    await this.call(`stop sandbox ${id}`, (deadline) => this.cri.stopPodSandbox({ podSandboxId: id }, deadline));
  }

  async removeSandbox(id: string, options: { readonly volumes?: boolean } = {}): Promise<void> {
    this.recent.forget(id);
    let status: PodSandboxStatus;
    try {
      status = await this.sandboxStatus(id);
    } catch (error) {
      if (error instanceof KubeletError && error.code === 'NotFound') return;
      throw error;
    }
    const name = status.metadata?.name ?? id;
    // The kubelet's order: stop (ends its containers at once, releases its network), remove its containers, remove it.
    await ignoreNotFound(this.call(`stop sandbox ${name}`, (deadline) => this.cri.stopPodSandbox({ podSandboxId: id }, deadline)));
    const { containers } = await this.call(`list containers of ${name}`, (deadline) =>
      this.cri.listContainers({ filter: { podSandboxId: id } }, deadline),
    );
    for (const c of containers) {
      await ignoreNotFound(
        this.call(`remove ${c.metadata?.name ?? c.id}`, (deadline) => this.cri.removeContainer({ containerId: c.id }, deadline)),
      );
      await this.logFiles.remove(undefined, c); // its link; its file goes with the pod's folder
    }
    await this.call(`remove sandbox ${name}`, (deadline) => this.cri.removePodSandbox({ podSandboxId: id }, deadline));
    await this.logFiles.removePodDirectory(recordOf(status.annotations)?.logDirectory);
    const podId = status.labels?.[Labels.sandbox];
    if (options.volumes === true && podId !== undefined) await removePodVolumes(this.volumesRoot, podId);
  }

  // ---- containers ----------------------------------------------------------------------------

  async list(options: ListOptions = {}): Promise<ContainerSummary[]> {
    const filter = options.podId === undefined ? {} : { filter: { labelSelector: { [Labels.manifestId]: options.podId } } };
    const { containers } = await this.call('list containers', (deadline) => this.cri.listContainers(filter, deadline));
    for (const c of containers) this.changes.remember(c.id, c.labels ?? undefined);
    const ours = containers.filter((c) => options.includeForeign === true || c.labels?.[Labels.manifestId] !== undefined);
    return this.listed.containersOf(ours, options.podId === undefined);
  }

  async inspect(id: string): Promise<ContainerDetails> {
    const { status, info } = await this.call(`inspect ${id}`, (deadline) =>
      this.cri.containerStatus({ containerId: id, verbose: true }, deadline),
    );
    if (status === null) throw new KubeletError('NotFound', `inspect ${id}: the runtime has no status for it`, { adapter: ADAPTER });
    return detailsOf(status, info);
  }

  async create(spec: ContainerSpec, sandboxId: string): Promise<ContainerSummary> {
    // Both at once: they are on the path of every container start. The names the agent makes carry
    // their pod's id (`buildContainerName`), so a taken name is one of that pod's: only those are
    // listed (the whole host's list, every create, cost containerd and the agent a decode of every
    // container: bench §9).
    const podId = spec.labels[Labels.manifestId];
    const samePod = podId === undefined ? {} : { filter: { labelSelector: { [Labels.manifestId]: podId } } };
    const [sandboxConfig, { containers }] = await Promise.all([
      // A sandbox this runtime has just run is ready with the config it was run with (see RecentSandboxes).
      this.recent.configOf(sandboxId) ?? this.readySandboxConfig(spec.name, sandboxId),
      this.call('list containers', (deadline) => this.cri.listContainers(samePod, deadline)),
    ]);
    // CRI keeps names unique within a sandbox only; the contract (and Docker) across the runtime.
    const taken = containers.find((c) => c.metadata?.name === spec.name);
    if (taken !== undefined)
      throw new KubeletError('Conflict', `create ${spec.name}: the name is taken by container ${taken.id}`, { adapter: ADAPTER });
    const imageUser = needsImageUser(spec.security) ? await this.criImages.userOf(spec.image) : undefined;
    const security = criSecurityOf(spec, imageUser);
    const mounts: CriMount[] = [];
    for (const m of spec.mounts)
      mounts.push({
        containerPath: m.containerPath,
        hostPath: await mountSourceDir(this.volumesRoot, spec.podId, m),
        readonly: m.readOnly,
      });
    const podLogs = sandboxConfig.logDirectory;
    const logPath = podLogs === undefined ? undefined : await this.logFiles.reserve(podLogs, spec);
    const logFile = podLogs === undefined || logPath === undefined ? undefined : join(podLogs, logPath);
    const config = buildContainerConfig(spec, sandboxConfig, mounts, logPath, security);
    let containerId: string;
    try {
      // No image check first: CreateContainer answers NOT_FOUND for a missing image.
      ({ containerId } = await this.call(`create ${spec.name}`, (deadline) =>
        this.cri.createContainer({ podSandboxId: sandboxId, config, sandboxConfig }, deadline),
      ));
    } catch (error) {
      await this.logFiles.remove(logFile, { id: '', labels: spec.labels });
      throw error;
    }
    if (logFile !== undefined) await this.logFiles.link(logFile, { id: containerId, labels: spec.labels });
    this.changes.remember(containerId, spec.labels);
    return {
      id: containerId,
      name: spec.name,
      image: spec.image,
      labels: { ...spec.labels },
      state: 'created',
      createdAt: this.clock.now(),
    };
  }

  async start(id: string): Promise<void> {
    try {
      await this.call(`start ${id}`, (deadline) => this.cri.startContainer({ containerId: id }, deadline));
      this.rotation?.target.changed();
    } catch (error) {
      // containerd refuses to start a running container (UNKNOWN, in words): that start succeeds.
      if (error instanceof KubeletError && error.code === 'NotFound') throw error;
      const status = await this.containerStatus(id).catch(() => undefined);
      if (status?.state === 'CONTAINER_RUNNING') return;
      throw error;
    }
  }

  async stop(id: string, timeoutSeconds: number): Promise<void> {
    // The runtime signals, waits `timeout` seconds, then kills (the contract); stopping a stopped one succeeds.
    const timeout = Math.max(0, Math.round(timeoutSeconds));
    try {
      await this.call(
        `stop ${id}`,
        (deadline) => this.cri.stopContainer({ containerId: id, timeout }, deadline),
        timeout * 1000 + this.requestTimeoutMs,
      );
    } finally {
      this.rotation?.target.changed();
    }
  }

  async remove(id: string, options: { readonly force?: boolean } = {}): Promise<void> {
    let status: ContainerStatus;
    try {
      status = await this.containerStatus(id);
    } catch (error) {
      if (error instanceof KubeletError && error.code === 'NotFound') return;
      throw error;
    }
    // CRI's RemoveContainer removes a running container by force: the contract's refusal is ours.
    if (status.state === 'CONTAINER_RUNNING' && options.force !== true) {
      throw new KubeletError('Conflict', `remove ${status.metadata?.name ?? id}: the container is running; stop it first or force`, {
        adapter: ADAPTER,
      });
    }
    await ignoreNotFound(this.call(`remove ${id}`, (deadline) => this.cri.removeContainer({ containerId: id }, deadline)));
    this.rotation?.target.changed();
    await this.logFiles.remove(status.logPath, { id, labels: status.labels ?? {} });
  }

  /** What the container printed, from the log file the runtime writes (see `criLogs`). */
  logs(id: string, options: LogReadOptions = {}): Promise<AsyncIterable<LogLine>> {
    return criLogs(id, options, async (which) => this.containerStatus(which));
  }

  /** The same as text, the file's blocks with their prefixes cut out (see `criLogTextOf`). */
  text(id: string, options: LogTextOptions = {}): Promise<AsyncIterable<Uint8Array>> {
    return criLogText(id, options, async (which) => this.containerStatus(which));
  }

  /** CRI `ExecSync` in a running container (the prober's exec; see `execSyncIn`). */
  async exec(id: string, command: readonly string[], timeoutMs: number): Promise<ExecResult> {
    return execSyncIn(id, await this.containerStatus(id), command, timeoutMs, (what, fn, ms) => this.call(what, fn, ms), this.cri);
  }

  /** Started, exited and removed events of the agent's containers, from containerd's event service (see `ContainerdEvents`). */
  events(signal: AbortSignal): AsyncIterable<ContainerEvent> {
    // containerd publishes a task's exit before its CRI plugin (which handles the same event)
    // updates the store ListContainers reads: each exit and removal waits until the list agrees.
    return settledEvents(tellingRotation(this.changes.stream(signal), this.rotation?.target), signal, {
      listedState: async (id) => {
        const { containers } = await this.call(`list container ${id}`, (deadline) => this.cri.listContainers({ filter: { id } }, deadline));
        const found = containers.find((c) => c.id === id);
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

  private async sandboxStatus(id: string): Promise<PodSandboxStatus> {
    const { status } = await this.call(`sandbox ${id}`, (deadline) => this.cri.podSandboxStatus({ podSandboxId: id }, deadline));
    if (status === null) throw new KubeletError('NotFound', `sandbox ${id}: the runtime has no status for it`, { adapter: ADAPTER });
    return status;
  }

  /** The config a sandbox was run with, read back from its status; Conflict when it is no longer ready. */
  private async readySandboxConfig(name: string, id: string): Promise<PodSandboxConfig> {
    const sandbox = await this.sandboxStatus(id);
    if (sandbox.state === 'SANDBOX_READY') return sandboxConfigOf(sandbox);
    const what = `create ${name}: sandbox ${sandbox.metadata?.name ?? id} is not ready (its namespace is gone); the agent runs a new one`;
    throw new KubeletError('Conflict', what, { adapter: ADAPTER });
  }

  /**
   * Waits until CRI no longer says the container runs (its plugin has handled the exit that
   * containerd's event service told first), polling from 5 ms, doubling, about 2.5 s at most: a
   * CRI that never catches up costs the event that long, and the agent's relist is the net.
   */
  private async exitShown(id: string): Promise<void> {
    for (let waitMs = 5; waitMs <= EXIT_SHOWN_LAST_WAIT_MS; waitMs *= 2) {
      const status = await ignoreNotFound(this.containerStatus(id)).catch(() => undefined);
      if (status?.state !== 'CONTAINER_RUNNING') return;
      await new Promise<void>((resolve) => this.clock.setTimeout(resolve, waitMs));
    }
  }

  private async containerStatus(id: string): Promise<ContainerStatus> {
    const { status } = await this.call(`container ${id}`, (deadline) => this.cri.containerStatus({ containerId: id }, deadline));
    if (status === null) throw new KubeletError('NotFound', `container ${id}: the runtime has no status for it`, { adapter: ADAPTER });
    return status;
  }

  /** Runs a CRI call with a deadline `timeoutMs` from now, translating failures. */
  private async call<T>(what: string, fn: (deadline: number) => Promise<T>, timeoutMs = this.requestTimeoutMs): Promise<T> {
    try {
      return await fn(Date.now() + timeoutMs);
    } catch (error) {
      throw translate(error, what, this.endpoint);
    }
  }
}

/** Registers a `CriRuntime` as the agent's runtime and returns it (close it with the agent). */
export function registerCriRuntime(registry: Registry, options: CriRuntimeOptions = {}): CriRuntime {
  const runtime = new CriRuntime(options);
  registry.register(Tokens.Runtime, { useValue: runtime });
  return runtime;
}
