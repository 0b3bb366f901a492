import {
  KubeletError,
  pullCredentialKey,
  SharedCalls,
  sleep,
  type Clock,
  type ImageRecord,
  type ImageService,
  type PullCredential,
  type RuntimeOperation,
} from '@kubelet-ts/core';

export interface MemoryImagesOptions {
  readonly clock: Clock;
  /** Images present from the start. */
  readonly images?: readonly string[];
  /** Which images `pull` can fetch: `'any'` (default) or a list. */
  readonly pullable?: 'any' | readonly string[];
  /** Milliseconds each pull takes on the clock. Default 0. */
  readonly pullLatencyMs?: number;
  /** Images only the given credentials may pull (see `MemoryRuntimeOptions.privateImages`). */
  readonly privateImages?: Readonly<Record<string, { readonly username: string; readonly password: string }>>;
  /** The runtime's call log: each call is logged, delayed and faulted there first. */
  readonly enter: (op: RuntimeOperation, target: string) => Promise<void>;
  /** The name errors carry. */
  readonly adapter: string;
}

/**
 * The memory runtime's images (its `images`): a set of names. A pull of one `pullable` refuses is
 * `NotFound`, as an engine with no registry would answer, and so is one of `privateImages` without
 * its credentials, as a registry's refusal; concurrent pulls of one image with the same credentials
 * share one transfer, as the contract asks. Which credentials each pull carried is kept by their
 * source (`pulledWith`), never their password.
 */
export class MemoryImages implements ImageService {
  private readonly present: Set<string>;
  private readonly pullable: 'any' | ReadonlySet<string>;
  private readonly pulls = new SharedCalls<void>();
  /** The user each image runs as, where it is not root (see `add`). */
  private readonly users = new Map<string, string>();

  constructor(private readonly options: MemoryImagesOptions) {
    this.present = new Set(options.images ?? []);
    this.pullable = options.pullable === undefined || options.pullable === 'any' ? 'any' : new Set(options.pullable);
  }

  async pull(image: string, credentials?: PullCredential): Promise<void> {
    await this.options.enter('pull', image);
    return this.pulls.run(`${image}\0${pullCredentialKey(credentials)}`, async () => {
      this.pulledWith.push({ image, source: credentials?.source });
      const latency = this.options.pullLatencyMs ?? 0;
      if (latency > 0) await sleep(this.options.clock, latency);
      const required = this.options.privateImages?.[image];
      if (required !== undefined) {
        if (credentials === undefined) throw this.refused(image, 'unauthorized: authentication required');
        if (credentials.username !== required.username || credentials.password !== required.password)
          throw this.refused(image, 'unauthorized: incorrect username or password');
      } else if (this.pullable !== 'any' && !this.pullable.has(image)) {
        throw this.refused(image, 'repository does not exist or no registry is reachable');
      }
      this.present.add(image);
    });
  }

  /** Each pull that went to the registry, with the source of the credentials it carried (none: `undefined`). */
  readonly pulledWith: Array<{ readonly image: string; readonly source: string | undefined }> = [];

  private refused(image: string, why: string): KubeletError {
    return new KubeletError('NotFound', `pull ${image}: ${why}`, { adapter: this.options.adapter });
  }

  /** The images it holds, each with its name; an in-memory image has no size. */
  async list(): Promise<ImageRecord[]> {
    await this.options.enter('listImages', '');
    return [...this.present].map((name) => ({ names: [name], sizeBytes: 0 }));
  }

  async hasImage(image: string): Promise<boolean> {
    await this.options.enter('hasImage', image);
    return this.present.has(image);
  }

  /** Whether the image is there, without a call (what `create` checks). */
  has(image: string): boolean {
    return this.present.has(image);
  }

  /** Adds an image as if it had been built locally, running as `user` (its `USER`: a uid, a name, `uid:gid`; default root). */
  add(image: string, user?: string): void {
    this.present.add(image);
    if (user !== undefined) this.users.set(image, user);
  }

  /** The user an image runs as, as an image config writes it (empty for root). */
  userOf(image: string): string {
    return this.users.get(image) ?? '';
  }
}
