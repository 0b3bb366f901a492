import { objectKey, type Logger, type ObjectRef, type SourceObject } from '@kubelet-ts/core';
import type { KubeConfig } from '@kubernetes/client-node';
import { getJson } from './api-json.js';

/** How often the objects in use are read again (the kubelet's pod sync period: a change reaches a volume within it). */
export const OBJECT_REFRESH_MS = 10_000;

export interface ApiObjectsOptions {
  readonly kubeConfig: KubeConfig;
  readonly logger: Logger;
  /** Told when an object in use changed, appeared or went. */
  readonly changed: () => void;
  readonly refreshMs?: number;
}

interface ApiConfigMap {
  readonly data?: Readonly<Record<string, string>>;
  readonly binaryData?: Readonly<Record<string, string>>;
}

interface ApiSecret {
  readonly data?: Readonly<Record<string, string>>;
}

/**
 * The ConfigMaps and Secrets the node's API pods read, from the API server with the node's own
 * credentials (the Node authorizer lets a node get those of its pods and nothing else), as the
 * kubelet's managers fetch them: each one in use is read when a pod starts to use it, and again every
 * `refreshMs` while one does, so that a change reaches mounted volumes within that time; one no pod
 * uses is forgotten. A missing one (404) is left out (the pod's containers that need it wait, saying
 * which); one that cannot be read (403: the authorizer has not yet seen the pod, or the API server is
 * down) keeps its last good value. Never logs a value.
 */
export class ApiObjects {
  private readonly objects = new Map<string, SourceObject>();
  private wanted = new Map<string, ObjectRef>();
  private timer: NodeJS.Timeout | undefined;
  private reading: Promise<void> | undefined;
  private closed = false;

  constructor(private readonly options: ApiObjectsOptions) {}

  /** What the pods now read: objects not read yet are read at once (then `changed`). */
  use(refs: readonly ObjectRef[]): void {
    const next = new Map(refs.map((r) => [objectKey(r.kind, r.namespace, r.name), r]));
    const fresh = [...next.keys()].some((k) => !this.wanted.has(k));
    for (const key of this.objects.keys()) if (!next.has(key)) this.objects.delete(key);
    this.wanted = next;
    if (fresh) void this.refresh();
    if (this.timer === undefined && next.size > 0) this.schedule();
  }

  /** The objects read so far, of those in use. */
  current(): SourceObject[] {
    return [...this.objects.values()];
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
  }

  private schedule(): void {
    if (this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.refresh().then(() => {
        if (this.wanted.size > 0) this.schedule();
      });
    }, this.options.refreshMs ?? OBJECT_REFRESH_MS);
    this.timer.unref();
  }

  /** Reads every object in use once (one pass at a time; a pass asked for meanwhile follows it). */
  private refresh(): Promise<void> {
    if (this.reading !== undefined) return this.reading.then(() => this.refresh());
    this.reading = this.readAll().finally(() => (this.reading = undefined));
    return this.reading;
  }

  private async readAll(): Promise<void> {
    let changed = false;
    await Promise.all(
      [...this.wanted.entries()].map(async ([key, ref]) => {
        const read = await this.read(ref);
        if (read === 'unknown' || this.closed || !this.wanted.has(key)) return;
        const before = this.objects.get(key);
        if (read === undefined) {
          if (before !== undefined) changed = true;
          this.objects.delete(key);
          return;
        }
        if (before === undefined || !sameData(before, read)) changed = true;
        this.objects.set(key, read);
      }),
    );
    if (changed && !this.closed) this.options.changed();
  }

  /** The object, undefined when it does not exist, `unknown` when it cannot be told (kept as it was). */
  private async read(ref: ObjectRef): Promise<SourceObject | undefined | 'unknown'> {
    const plural = ref.kind === 'ConfigMap' ? 'configmaps' : 'secrets';
    try {
      const object = (await getJson(
        this.options.kubeConfig,
        `/api/v1/namespaces/${encodeURIComponent(ref.namespace)}/${plural}/${encodeURIComponent(ref.name)}`,
      )) as ApiConfigMap & ApiSecret;
      const data: Record<string, Uint8Array> = {};
      if (ref.kind === 'ConfigMap') {
        for (const [k, v] of Object.entries(object.data ?? {})) data[k] = Buffer.from(v, 'utf8');
        for (const [k, v] of Object.entries(object.binaryData ?? {})) data[k] = Buffer.from(v, 'base64');
      } else for (const [k, v] of Object.entries(object.data ?? {})) data[k] = Buffer.from(v, 'base64');
      return { ...ref, data };
    } catch (error) {
      const code = (error as { code?: number }).code;
      if (code === 404) return undefined;
      this.options.logger.debug(
        { kind: ref.kind, namespace: ref.namespace, name: ref.name, status: code },
        `cannot read ${ref.kind} ${ref.namespace}/${ref.name} yet: ${(error as Error).message.slice(0, 200)}`,
      );
      return 'unknown';
    }
  }
}

function sameData(a: SourceObject, b: SourceObject): boolean {
  const keys = Object.keys(a.data);
  if (keys.length !== Object.keys(b.data).length) return false;
  return keys.every((k) => b.data[k] !== undefined && Buffer.from(a.data[k]!).equals(Buffer.from(b.data[k]!)));
}
