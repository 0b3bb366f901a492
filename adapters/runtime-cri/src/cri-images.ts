import {
  KubeletError,
  pullCredentialKey,
  SharedCalls,
  type Clock,
  type ImageRecord,
  type ImageService,
  type Logger,
  type PullCredential,
} from '@kubelet-ts/core';
import type { CriApi, CriImage } from './cri-api.js';
import { imageUserOf } from './cri-security.js';
import { ADAPTER, classifyPullError } from './errors.js';

export interface CriImagesOptions {
  readonly cri: CriApi;
  /** Where the runtime is, for the errors of a pull it did not answer. */
  readonly endpoint: string;
  /** Deadline of one pull. */
  readonly pullTimeoutMs: number;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Runs a CRI call with the runtime's deadline, translating its failures. */
  readonly call: <T>(what: string, fn: (deadline: number) => Promise<T>) => Promise<T>;
}

/**
 * CRI's ImageService (`CriRuntime.images`): ImageStatus and PullImage. One pull of an image at a
 * time: callers of an image already being pulled with the same credentials share its transfer.
 * Credentials go in the request's `auth` as the kubelet sends them (user name and password, no
 * `server_address`: containerd would drop credentials whose address is not the image's host).
 */
export class CriImages implements ImageService {
  private readonly pulls = new SharedCalls<void>();

  constructor(private readonly options: CriImagesOptions) {}

  pull(image: string, credentials?: PullCredential): Promise<void> {
    return this.pulls.run(`${image}\0${pullCredentialKey(credentials)}`, () => this.transfer(image, credentials));
  }

  async hasImage(image: string): Promise<boolean> {
    return (await this.status(image)) !== undefined;
  }

  async list(): Promise<ImageRecord[]> {
    const { images } = await this.options.call('list images', (deadline) => this.options.cri.listImages({}, deadline));
    return images.map((i) => ({ names: [...i.repoTags, ...i.repoDigests], sizeBytes: Number(i.size) }));
  }

  /** The user `image` runs as (see `imageUserOf`); NotFound when it is not here. */
  async userOf(image: string): Promise<string> {
    const found = await this.status(image);
    if (found === undefined) throw new KubeletError('NotFound', `image ${image} is not on this host`, { adapter: ADAPTER });
    return imageUserOf(found);
  }

  /** The runtime's record of `image` (ImageStatus); undefined when it is not here. */
  private async status(image: string): Promise<CriImage | undefined> {
    const { image: found } = await this.options.call(`image status ${image}`, (deadline) =>
      this.options.cri.imageStatus({ image: { image } }, deadline),
    );
    return found === null || found.id === '' ? undefined : found;
  }

  private async transfer(image: string, credentials: PullCredential | undefined): Promise<void> {
    // An imported image is not in any registry: PullImage of it would fail where ImageStatus knows it.
    if (await this.hasImage(image)) return;
    const { cri, clock, logger } = this.options;
    const started = clock.now();
    try {
      const auth = credentials === undefined ? {} : { auth: { username: credentials.username, password: credentials.password } };
      await cri.pullImage({ image: { image }, ...auth }, Date.now() + this.options.pullTimeoutMs);
    } catch (error) {
      throw classifyPullError(image, error, this.options.endpoint);
    }
    logger.info(
      { image, durationMs: clock.now() - started, ...(credentials === undefined ? {} : { credentials: credentials.source }) },
      'image pulled',
    );
  }
}
