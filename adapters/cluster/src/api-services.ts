import type { Logger } from '@kubelet-ts/core';
import type { KubeConfig } from '@kubernetes/client-node';
import { ListWatch } from './list-watch.js';
import type { ApiService } from './service-variables.js';

/** What `ApiServices` reads the Services with: the cluster and credentials that may watch them. */
export interface ApiServicesOptions {
  readonly kubeConfig: KubeConfig;
  readonly logger: Logger;
}

/**
 * Every Service of the cluster, as the kubelet's service informer keeps them (a node may list and
 * watch Services): listed once, then watched (`ListWatch`), the last good set kept through a
 * failure. An idle node asks the API server nothing for them.
 */
export class ApiServices {
  private readonly services = new Map<string, ApiService>();
  private watching: ListWatch<ApiService> | undefined;
  private listed = false;
  private readonly listeners = new Set<() => void>();
  /** Settles once the first list has been tried (whatever came of it). */
  private readonly firstTry: Promise<void>;
  private tried!: () => void;

  constructor(private readonly options: ApiServicesOptions) {
    this.firstTry = new Promise((resolve) => (this.tried = resolve));
  }

  /** Tells `listener` when a Service was added, changed or removed (after the first list); returns the way to stop. */
  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The Services, once listed (the first call starts the list and watch); undefined while the first list fails. */
  async current(): Promise<readonly ApiService[] | undefined> {
    if (this.watching === undefined) {
      this.watching = new ListWatch<ApiService>({
        kubeConfig: this.options.kubeConfig,
        path: '/api/v1/services',
        listed: (items) => {
          this.services.clear();
          for (const s of items) this.services.set(keyOf(s), s);
          const first = !this.listed;
          this.listed = true;
          this.tried();
          if (!first) this.changed();
        },
        changed: (type, s) => {
          if (type === 'DELETED') this.services.delete(keyOf(s));
          else this.services.set(keyOf(s), s);
          this.changed();
        },
        failed: (error, delay) => {
          this.tried();
          this.options.logger.debug({ err: error }, `api: cannot watch Services yet; trying again in ${delay} ms`);
        },
      });
      this.watching.start();
    }
    // After the first list, or its first failure (then nothing is known yet).
    await this.firstTry;
    return this.listed ? [...this.services.values()] : undefined;
  }

  close(): void {
    this.watching?.close();
    this.tried();
  }

  private changed(): void {
    for (const listener of this.listeners) listener();
  }
}

function keyOf(s: ApiService): string {
  return `${s.metadata.namespace}/${s.metadata.name}`;
}
