import {
  KubeletError,
  type Clock,
  type ContainerStats,
  type ContainerStatsSource,
  type ImageFsUsage,
  type SandboxStats,
  type StatsRequest,
  type StatsSample,
} from '@kubelet-ts/core';
import { containerStatsOfCgroup, ContainerRuns, holderNetworkOf, KernelStats, type KernelStatsOptions } from '@kubelet-ts/cgroup-stats';
import type { DockerApi, DockerStats, DockerVersion } from './docker-api.js';
import { isLocalEndpoint } from './docker-connect.js';
import { containerStatsOf, sandboxStatsOf, statsQuirksOf, type StatsQuirks } from './docker-stats.js';
import { engineKindOf } from './engine-kind.js';

export interface DockerStatsSourceOptions {
  readonly docker: DockerApi;
  readonly clock: Clock;
  /** Runs an engine call, translating its failures (404 → NotFound). */
  readonly call: <T>(what: string, fn: () => Promise<T>) => Promise<T>;
  /** What serves the API (`GET /version`), asked once. */
  readonly version: () => Promise<DockerVersion>;
  /**
   * How many one-shot reads (and inspects) a sample has in flight at once. Default 64: Docker
   * answers reads made at once on the same tick of its 1-second collector, so a sample of N ids
   * takes about N/64 s (200 pods, a container and a holder each: ~7 s, within the 10 s
   * housekeeping interval).
   */
  readonly concurrency?: number;
  /**
   * Where the engine answers. A unix socket means an engine on this host, whose containers'
   * figures are read from the kernel (see `KernelStats`); default none: the API alone.
   */
  readonly endpoint?: string;
  /** Where procfs and the cgroup hierarchies are, for the kernel reads (tests put fixtures there). */
  readonly kernel?: KernelStatsOptions;
}

/**
 * What containers and pods use. For an engine on this host, from the kernel as cAdvisor reads it
 * (`KernelStats`): each container's cgroup files and each holder's `/proc/<pid>/net/dev`, its
 * process learnt by one inspect and kept (`ContainerRuns`). A sample of 200 pods (400 ids) then
 * costs the agent about 25 ms of CPU instead of about 250 ms, and the engine nothing instead of
 * about 350 ms (Docker 20.10, cgroup v1). The figures are the engine's, but for the limit of a
 * container without one: the kernel gives none, where the engine gives the host's memory.
 *
 * Otherwise, and for any container whose files cannot be read, from the engine's one-shot stats
 * (`docker stats --no-stream`); the mapping is `containerStatsOf` either way. The Engine API has
 * no list of stats: a sample reads each container and holder once, many at a time.
 * `one-shot=true` (API 1.41) spares Docker its CPU pre-sample, which halves a read (Docker 20.10:
 * 2 s → 1 s, the period of its collector, which serves reads made at once together); older
 * engines ignore it, and Podman never pre-samples.
 */
export class DockerStatsSource implements ContainerStatsSource {
  private readonly concurrency: number;
  /** What the kernel tells of an engine on this host; undefined for a remote engine, or where procfs cannot be read. */
  private readonly runs: ContainerRuns | undefined;
  /**
   * An engine on this host: its data directory (`DockerRootDir`), asked once, and what its images
   * take (their sizes summed, as the kubelet's image stats count them); none for a remote engine.
   */
  readonly imageFs?: () => Promise<ImageFsUsage>;
  private root: Promise<string> | undefined;

  constructor(private readonly options: DockerStatsSourceOptions) {
    this.concurrency = options.concurrency ?? 64;
    const local = options.endpoint !== undefined && isLocalEndpoint(options.endpoint);
    if (local) this.imageFs = () => this.readImageFs();
    const kernel = local ? KernelStats.open(options.kernel) : undefined;
    this.runs =
      kernel === undefined
        ? undefined
        : new ContainerRuns(kernel, async (id) => {
            const info = await options.call(`inspect ${id}`, () => options.docker.getContainer(id).inspect());
            return { pid: info.State.Pid ?? 0, hostNetwork: info.HostConfig.NetworkMode === 'host' };
          });
  }

  stats(id: string): Promise<ContainerStats> {
    return this.containerStats(id);
  }

  private async readImageFs(): Promise<ImageFsUsage> {
    const { call, docker } = this.options;
    this.root ??= call('info', () => docker.info()).then(
      ({ DockerRootDir }) => {
        if (DockerRootDir === undefined || DockerRootDir === '')
          throw new KubeletError('Unsupported', 'the engine names no data directory (DockerRootDir)');
        return DockerRootDir;
      },
      (error: unknown) => {
        this.root = undefined; // asked again next time
        throw error;
      },
    );
    const [mountpoint, images] = await Promise.all([this.root, call('list images', () => docker.listImages())]);
    return { mountpoint, usedBytes: images.reduce((sum, image) => sum + (image.Size ?? 0), 0) };
  }

  /** Each id read once, at most `concurrency` at a time; a gone one (NotFound) is left out, any other failure fails the sample. */
  async sample(request: StatsRequest): Promise<StatsSample> {
    const version = await this.options.version();
    const quirks = statsQuirksOf(version);
    const podman = engineKindOf(version) === 'podman';
    // Each in its slot, so that the sample lists them in the order asked whatever order they end in.
    const containers: Array<[string, ContainerStats]> = [];
    const sandboxes: Array<[string, SandboxStats]> = [];
    const jobs = [
      ...request.containers.map((id, i) => async () => {
        const figures = await gone(this.containerStats(id));
        if (figures !== undefined) containers[i] = [id, figures];
      }),
      ...request.sandboxes.map((id, i) => async () => {
        const figures = await gone(this.sandboxStats(id, quirks, podman));
        if (figures !== undefined) sandboxes[i] = [id, figures];
      }),
    ];
    await atMost(this.concurrency, jobs);
    this.runs?.keepOnly(new Set([...request.containers, ...request.sandboxes]));
    // The gone ones are holes, which filter skips.
    return { containers: new Map(containers.filter(Boolean)), sandboxes: new Map(sandboxes.filter(Boolean)) };
  }

  private async containerStats(id: string): Promise<ContainerStats> {
    const fromKernel = await this.runs?.read(id, (kernel, run) => kernel.container(run.cgroup), { byProcess: false });
    if (fromKernel?.figures !== undefined) return containerStatsOfCgroup(fromKernel.figures, this.options.clock.now());
    return containerStatsOf(await this.read(id), this.options.clock.now());
  }

  private async sandboxStats(id: string, quirks: StatsQuirks, podman: boolean): Promise<SandboxStats> {
    // The kernel's figures are the namespace's own, with no engine's quirk to make up for.
    const fromKernel = await this.runs?.read(id, holderNetworkOf, { byProcess: true });
    if (fromKernel?.figures !== undefined) return { timestamp: this.options.clock.now(), ...fromKernel.figures };
    // Podman reports zeros for a holder on the host's network where Docker names no network: its
    // inspect tells (the one that found its process, where the kernel is read).
    const [figures, hostNetwork] = await Promise.all([
      this.read(id),
      fromKernel === undefined ? podman && this.onHostNetwork(id) : fromKernel.run.hostNetwork,
    ]);
    return sandboxStatsOf(figures, this.options.clock.now(), { quirks, hostNetwork });
  }

  private async read(id: string): Promise<DockerStats> {
    const answer = await this.options.call(`stats ${id}`, () =>
      this.options.docker.getContainer(id).stats({ stream: false, 'one-shot': true }),
    );
    // Podman answers a container that is not running with an empty body: zero figures, as Docker's.
    return Buffer.isBuffer(answer) ? {} : answer;
  }

  private async onHostNetwork(id: string): Promise<boolean> {
    const info = await this.options.call(`inspect sandbox ${id}`, () => this.options.docker.getContainer(id).inspect());
    return info.HostConfig.NetworkMode === 'host';
  }
}

/** Undefined for a container the engine no longer knows. */
async function gone<T>(call: Promise<T>): Promise<T | undefined> {
  try {
    return await call;
  } catch (error) {
    if (error instanceof KubeletError && error.code === 'NotFound') return undefined;
    throw error;
  }
}

/** Runs `jobs` with at most `limit` in flight; after a failure no more start, and it is thrown. */
async function atMost(limit: number, jobs: ReadonlyArray<() => Promise<void>>): Promise<void> {
  let next = 0;
  let failed = false;
  const worker = async (): Promise<void> => {
    while (!failed && next < jobs.length) {
      const index = next++;
      try {
        await jobs[index]!();
      } catch (error) {
        failed = true;
        throw error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, jobs.length) }, worker));
}
