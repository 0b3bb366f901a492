import type { Logger } from '@kubelet-ts/core';
import { type KubeConfig, Watch } from '@kubernetes/client-node';
import { Retry } from './api-errors.js';
import { getJson } from './api-json.js';
import type { ApiService } from './service-variables.js';

/** What `ApiServices` reads the Services with: the cluster and credentials that may watch them. */
export interface ApiServicesOptions {
  readonly kubeConfig: KubeConfig;
  readonly logger: Logger;
}

/**
 * Every Service of the cluster, as the kubelet's service informer keeps them (a node may list and
 * watch Services): listed once, then watched from the list's `resourceVersion`; a watch that ends
 * is resumed, one too old (410) lists again, a failure is tried again with back-off (1 s doubling
 * to 30 s), the last good set kept. An idle node asks the API server nothing for them.
 */
export class ApiServices {
  private readonly services = new Map<string, ApiService>();
  private resourceVersion = '';
  private abort: AbortController | undefined;
  private closed = false;
  private started = false;
  private listed = false;
  private readonly retry = new Retry(1_000, 30_000);
  /** Settles once the first list has been tried (whatever came of it). */
  private readonly firstTry: Promise<void>;
  private tried!: () => void;

  private readonly listeners = new Set<() => void>();

  /** Tells `listener` when a Service was added, changed or removed (after the first list); returns the way to stop. */
  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private changed(): void {
    for (const listener of this.listeners) listener();
  }

  constructor(private readonly options: ApiServicesOptions) {
    this.firstTry = new Promise((resolve) => (this.tried = resolve));
  }

  /** The Services, once listed (the first call starts the list and watch); undefined while the first list fails. */
  async current(): Promise<readonly ApiService[] | undefined> {
    if (!this.started) {
      this.started = true;
      void this.run();
    }
    // After the first list, or its first failure (then nothing is known yet).
    await this.firstTry;
    return this.listed ? [...this.services.values()] : undefined;
  }

  close(): void {
    this.closed = true;
    this.retry.cancel();
    this.abort?.abort();
    this.tried();
  }

  private async run(): Promise<void> {
    while (!this.closed) {
      try {
        if (this.resourceVersion === '') await this.list();
        await this.watch();
        this.retry.reset();
      } catch (error) {
        this.tried();
        if (this.closed) return;
        if ((error as { code?: number }).code === 410) this.resourceVersion = '';
        const delay = this.retry.next();
        this.options.logger.debug({ err: error }, `api: cannot watch Services yet; trying again in ${delay} ms`);
        await this.retry.wait(delay, () => this.closed);
      }
    }
  }

  private async list(): Promise<void> {
    const list = (await getJson(this.options.kubeConfig, '/api/v1/services')) as {
      metadata?: { resourceVersion?: string };
      items?: ApiService[];
    };
    this.services.clear();
    for (const s of list.items ?? []) this.services.set(keyOf(s), s);
    this.resourceVersion = list.metadata?.resourceVersion ?? '';
    const first = !this.listed;
    this.listed = true;
    this.tried();
    if (!first) this.changed();
  }

  /** One watch, until the server ends it (resolves) or it fails (rejects; `code` 410 when too old). */
  private watch(): Promise<void> {
    return new Promise((resolve, reject) => {
      let failed: (Error & { code?: number | undefined }) | undefined;
      let controller: AbortController | undefined;
      void new Watch(this.options.kubeConfig)
        .watch(
          '/api/v1/services',
          { resourceVersion: this.resourceVersion, allowWatchBookmarks: true },
          (type: string, object: ApiService & { code?: number; message?: string; metadata: { resourceVersion?: string } }) => {
            if (type === 'ERROR') {
              failed = Object.assign(new Error(`watch: ${object.message ?? 'error'}`), { code: object.code });
              controller?.abort();
              return;
            }
            if (object.metadata?.resourceVersion !== undefined) this.resourceVersion = object.metadata.resourceVersion;
            if (type === 'BOOKMARK') return;
            if (type === 'DELETED') this.services.delete(keyOf(object));
            else this.services.set(keyOf(object), object);
            this.changed();
          },
          (error: unknown) => ((failed ?? error) ? reject(failed ?? error) : resolve()),
        )
        .then((c) => {
          controller = c;
          this.abort = c;
          if (this.closed) c.abort();
        }, reject);
    });
  }
}

function keyOf(s: ApiService): string {
  return `${s.metadata.namespace}/${s.metadata.name}`;
}
