import { type KubeConfig, Watch } from '@kubernetes/client-node';
import { Retry } from './api-errors.js';
import { getJson } from './api-json.js';

/** An object as a list or watch gives it: what the loop reads of it. */
interface Listed {
  readonly metadata?: { readonly resourceVersion?: string };
}

export interface ListWatchOptions<T extends Listed> {
  readonly kubeConfig: KubeConfig;
  /** The collection, e.g. `/api/v1/pods`. */
  readonly path: string;
  /** A field selector (`spec.nodeName=n1`), for the list and the watch alike. */
  readonly fieldSelector?: string;
  /** Every object there is now, after each list (the first, or one after a watch too old). */
  readonly listed: (items: readonly T[]) => void;
  /** One object added, changed or deleted. */
  readonly changed: (type: 'ADDED' | 'MODIFIED' | 'DELETED', object: T) => void;
  /** A list or watch failed; tried again after `delayMs`, the last good set standing meanwhile. */
  readonly failed?: (error: Error, delayMs: number) => void;
}

/**
 * The list-then-watch loop of the cluster parts, as client-go's reflector runs it: list, then watch
 * from the list's `resourceVersion` (with bookmarks); a watch that ends is resumed from the last
 * version seen, one too old (410 Gone) lists again; a failure is tried again with back-off (1 s
 * doubling to 30 s). Runs from `start()` until `close()`.
 */
export class ListWatch<T extends Listed> {
  private resourceVersion = '';
  private abort: AbortController | undefined;
  private closed = false;
  private readonly retry = new Retry(1_000, 30_000);

  constructor(private readonly options: ListWatchOptions<T>) {}

  start(): void {
    void this.run();
  }

  close(): void {
    this.closed = true;
    this.retry.cancel();
    this.abort?.abort();
  }

  private async run(): Promise<void> {
    while (!this.closed) {
      try {
        if (this.resourceVersion === '') await this.list();
        await this.watch();
        this.retry.reset();
      } catch (error) {
        if (this.closed) return;
        if ((error as { code?: number }).code === 410) this.resourceVersion = '';
        const delay = this.retry.next();
        this.options.failed?.(error as Error, delay);
        await this.retry.wait(delay, () => this.closed);
      }
    }
  }

  private async list(): Promise<void> {
    const { kubeConfig, path, fieldSelector } = this.options;
    const query = fieldSelector === undefined ? '' : `?fieldSelector=${encodeURIComponent(fieldSelector)}`;
    const list = (await getJson(kubeConfig, `${path}${query}`)) as { metadata?: { resourceVersion?: string }; items?: T[] };
    this.resourceVersion = list.metadata?.resourceVersion ?? '';
    if (!this.closed) this.options.listed(list.items ?? []);
  }

  /** One watch, until the server ends it (resolves) or it fails (rejects; `code` 410 when too old). */
  private watch(): Promise<void> {
    const { kubeConfig, path, fieldSelector } = this.options;
    return new Promise((resolve, reject) => {
      let failed: (Error & { code?: number | undefined }) | undefined;
      let controller: AbortController | undefined;
      void new Watch(kubeConfig)
        .watch(
          path,
          { ...(fieldSelector === undefined ? {} : { fieldSelector }), resourceVersion: this.resourceVersion, allowWatchBookmarks: true },
          (type: string, object: T & { code?: number; message?: string }) => {
            if (type === 'ERROR') {
              failed = Object.assign(new Error(`watch: ${object.message ?? 'error'}`), { code: object.code });
              controller?.abort();
              return;
            }
            if (object.metadata?.resourceVersion !== undefined) this.resourceVersion = object.metadata.resourceVersion;
            if (type === 'ADDED' || type === 'MODIFIED' || type === 'DELETED') this.options.changed(type, object);
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
