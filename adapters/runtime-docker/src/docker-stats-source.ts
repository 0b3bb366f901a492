import {
  KubeletError,
  type Clock,
  type ContainerStats,
  type ContainerStatsSource,
  type SandboxStats,
  type StatsRequest,
  type StatsSample,
} from '@kubelet-ts/core';
import type { DockerApi, DockerStats, DockerVersion } from './docker-api.js';
import { containerStatsOf, sandboxStatsOf, statsQuirksOf } from './docker-stats.js';
import { engineKindOf } from './engine-kind.js';

export interface DockerStatsSourceOptions {
  readonly docker: DockerApi;
  readonly clock: Clock;
  /** Runs an engine call, translating its failures (404 → NotFound). */
  readonly call: <T>(what: string, fn: () => Promise<T>) => Promise<T>;
  /** What serves the API (`GET /version`), asked once. */
  readonly version: () => Promise<DockerVersion>;
  /**
   * How many one-shot reads a sample has in flight at once. Default 64: Docker answers reads made at
   * once on the same tick of its 1-second collector, so a sample of N ids takes about N/64 s (200
   * pods, a container and a holder each: ~7 s, within the 10 s housekeeping interval).
   */
  readonly concurrency?: number;
}

/**
 * What containers and pods use, from the engine's one-shot stats (`docker stats --no-stream`; the
 * mapping is `containerStatsOf`). The Engine API has no list of stats: a sample reads each
 * container and sandbox holder once, many at a time. `one-shot=true` (API 1.41) spares Docker its
 * CPU pre-sample, which halves a read (Docker 20.10: 2 s → 1 s, the period of its collector, which
 * serves reads made at once together); older engines ignore it, and Podman never pre-samples.
 */
export class DockerStatsSource implements ContainerStatsSource {
  private readonly concurrency: number;

  constructor(private readonly options: DockerStatsSourceOptions) {
    this.concurrency = options.concurrency ?? 64;
  }

  async stats(id: string): Promise<ContainerStats> {
    return containerStatsOf(await this.read(id), this.options.clock.now());
  }

  /** Each id read once, at most `concurrency` at a time; a gone one (NotFound) is left out, any other failure fails the sample. */
  async sample(request: StatsRequest): Promise<StatsSample> {
    const version = await this.options.version();
    const quirks = statsQuirksOf(version);
    const podman = engineKindOf(version) === 'podman';
    // Each in its slot, so that the sample lists them in the order asked whatever order they end in.
    const containers: Array<[string, ContainerStats]> = [];
    const sandboxes: Array<[string, SandboxStats]> = [];
    const now = () => this.options.clock.now();
    const jobs = [
      ...request.containers.map((id, i) => async () => {
        const figures = await gone(this.read(id));
        if (figures !== undefined) containers[i] = [id, containerStatsOf(figures, now())];
      }),
      ...request.sandboxes.map((id, i) => async () => {
        // Podman reports zeros for a holder on the host's network where Docker names no network:
        // its inspect tells (a holder's network mode never changes, but nothing is kept here).
        const [figures, hostNetwork] = await Promise.all([gone(this.read(id)), podman ? gone(this.onHostNetwork(id)) : false]);
        if (figures !== undefined && hostNetwork !== undefined)
          sandboxes[i] = [id, sandboxStatsOf(figures, now(), { quirks, hostNetwork })];
      }),
    ];
    await atMost(this.concurrency, jobs);
    // The gone ones are holes, which filter skips.
    return { containers: new Map(containers.filter(Boolean)), sandboxes: new Map(sandboxes.filter(Boolean)) };
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
