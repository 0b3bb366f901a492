import {
  KubeletError,
  pullCredentialKey,
  repositoryOf,
  repeatEvery,
  SharedCalls,
  type Clock,
  type ImageRecord,
  type ImageService,
  type Logger,
  type PullCredential,
} from '@kubelet-ts/core';
import type { DockerApi, PullProgressEvent } from './docker-api.js';
import { classifyPullError, dockerDetail, translate } from './errors.js';

export interface DockerImagesOptions {
  readonly docker: DockerApi;
  /** Where the engine is, for the errors of a pull it did not answer. */
  readonly endpoint: string;
  readonly clock: Clock;
  readonly logger: Logger;
  /** How often a long pull logs its progress. */
  readonly pullProgressIntervalMs: number;
  /** Runs an engine call, translating its failures. */
  readonly call: <T>(what: string, fn: () => Promise<T>) => Promise<T>;
}

/**
 * The engine's images (`DockerRuntime.images`): `GET /images/{name}/json` and `POST /images/create`.
 * One pull of an image at a time: callers of an image already being pulled with the same
 * credentials share its transfer. Credentials go in the pull's `X-Registry-Auth` header only (the
 * engine's own `docker login` store is neither read nor written); logs name their source.
 */
export class DockerImages implements ImageService {
  private readonly pulls = new SharedCalls<void>();

  constructor(private readonly options: DockerImagesOptions) {}

  pull(image: string, credentials?: PullCredential): Promise<void> {
    return this.pulls.run(`${image}\0${pullCredentialKey(credentials)}`, () => this.transfer(image, credentials));
  }

  async hasImage(image: string): Promise<boolean> {
    try {
      await this.options.call(`inspect image ${image}`, () => this.options.docker.getImage(image).inspect());
      return true;
    } catch (error) {
      if (error instanceof KubeletError && error.code === 'NotFound') return false;
      throw error;
    }
  }

  async list(): Promise<ImageRecord[]> {
    const images = await this.options.call('list images', () => this.options.docker.listImages());
    return images.map((i) => ({
      names: [...(i.RepoTags ?? []).filter((t) => t !== '<none>:<none>'), ...(i.RepoDigests ?? []).filter((d) => d !== '<none>@<none>')],
      sizeBytes: i.Size ?? 0,
    }));
  }

  private async transfer(image: string, credentials: PullCredential | undefined): Promise<void> {
    const { docker, clock, logger } = this.options;
    const started = clock.now();
    let stream: NodeJS.ReadableStream;
    try {
      stream =
        credentials === undefined
          ? await docker.pull(image)
          : await docker.pull(image, {
              authconfig: { username: credentials.username, password: credentials.password, serveraddress: registryOf(image) },
            });
    } catch (error) {
      const t = translate(error, `pull ${image}`, this.options.endpoint);
      if (t.code === 'Unavailable') throw t; // the engine itself does not answer
      throw classifyPullError(image, dockerDetail(error), error);
    }
    let last: PullProgressEvent | undefined;
    const stopTicker = repeatEvery(clock, this.options.pullProgressIntervalMs, () => {
      logger.info({ image, elapsedMs: clock.now() - started, status: last?.status, progress: last?.progress }, 'pulling image');
    });
    try {
      await new Promise<void>((resolvePull, reject) => {
        docker.modem.followProgress(
          stream,
          (error, output) => {
            const failed = output.find((e): e is PullProgressEvent => typeof (e as PullProgressEvent).error === 'string');
            if (error !== null || failed !== undefined)
              reject(classifyPullError(image, failed?.error ?? error?.message ?? 'pull failed', error));
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
    logger.info(
      { image, durationMs: clock.now() - started, ...(credentials === undefined ? {} : { credentials: credentials.source }) },
      'image pulled',
    );
  }
}

/** The registry host[:port] of an image's name (`docker.io` for Docker Hub's), as `docker login` names it. */
function registryOf(image: string): string {
  return repositoryOf(image).split('/')[0]!;
}
