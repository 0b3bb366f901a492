import type { AgentView } from '@kubelet-ts/core';
import { renderPodList, type V1PodList } from './pod-list.js';
import type { WatchEvent } from '@kubelet-ts/core';

type V1Pod = V1PodList['items'][number];
/** Hears each render's changes, as one array given to every listener (encoded once for all: see `watchStream`). */
type Listener = (changes: readonly WatchEvent<V1Pod>[]) => void;

/** How long changes are gathered before the pods are rendered again (a pass emits many events). */
const SETTLE_MS = 50;

/**
 * The changes of `/pods` for its watchers (`/pods?watch=1`): while anyone watches, each change the
 * agent signals (`watchChanges`) renders the pods again, at most once every SETTLE_MS, and the
 * difference from the last render goes to every watcher as `ADDED`, `MODIFIED` (anything in the
 * pod changed: its status, a restart count, an annotation) or `DELETED`, keyed by namespace and
 * name. One render serves every watcher; a new watcher starts from the last render, as `ADDED`.
 */
export class PodWatchHub {
  private readonly listeners = new Set<Listener>();
  /** The last render, by `namespace/name`: the pod and its JSON (what a change is compared by). */
  private current = new Map<string, { readonly pod: V1Pod; readonly json: string }>();
  private stopWatching: (() => void) | undefined;
  /** Watchers subscribed or subscribing: the agent's changes are heard while there is one. */
  private members = 0;
  private timer: NodeJS.Timeout | undefined;
  /** Renders are made one at a time, in order. */
  private rendering: Promise<void> = Promise.resolve();

  constructor(private readonly view: AgentView) {}

  /**
   * The pods now, as `ADDED` changes, and every later change to `listener` until the returned
   * function is called.
   */
  async subscribe(listener: Listener): Promise<{ readonly initial: WatchEvent<V1Pod>[]; readonly stop: () => void }> {
    // Changes are heard before the first render, so none after it is missed.
    this.stopWatching ??= this.view.watchChanges(() => this.changed());
    this.members += 1;
    let stopped = false;
    const stop = () => {
      if (stopped) return;
      stopped = true;
      this.listeners.delete(listener);
      this.members -= 1;
      if (this.members > 0) return;
      this.stopWatching?.();
      this.stopWatching = undefined;
      clearTimeout(this.timer);
      this.timer = undefined;
    };
    try {
      // In the queue of renders: the first lines are the pods as they are now, and the listener
      // hears the changes of every render after that one (never the same pod twice as new).
      let initial: WatchEvent<V1Pod>[] = [];
      await this.enqueue(async () => {
        await this.render();
        initial = [...this.current.values()].map(({ pod }) => ({ type: 'ADDED', object: pod }));
        if (!stopped) this.listeners.add(listener);
      });
      return { initial, stop };
    } catch (error) {
      stop();
      throw error;
    }
  }

  /** Watchers now, and whether the agent's changes are being heard. */
  get watchers(): { readonly count: number; readonly hearing: boolean } {
    return { count: this.members, hearing: this.stopWatching !== undefined };
  }

  private changed(): void {
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      void this.enqueue(() => this.render());
    }, SETTLE_MS);
  }

  private enqueue(step: () => Promise<void>): Promise<void> {
    const next = this.rendering.then(step);
    // A failed render (the view threw) is tried again at the next change.
    this.rendering = next.catch(() => undefined);
    return next;
  }

  /** Renders the pods and tells every watcher what differs from the last render. */
  private async render(): Promise<void> {
    const listing = await this.view.podListing();
    const next = new Map<string, { pod: V1Pod; json: string }>();
    for (const pod of renderPodList(listing.pods, listing).items)
      next.set(`${pod.metadata['namespace'] ?? 'default'}/${pod.metadata['name']}`, { pod, json: JSON.stringify(pod) });
    const changes: WatchEvent<V1Pod>[] = [];
    for (const [key, { pod, json }] of next) {
      const before = this.current.get(key);
      if (before === undefined) changes.push({ type: 'ADDED', object: pod });
      else if (before.json !== json) changes.push({ type: 'MODIFIED', object: pod });
    }
    for (const [key, { pod }] of this.current) if (!next.has(key)) changes.push({ type: 'DELETED', object: pod });
    this.current = next;
    if (changes.length > 0) for (const listener of this.listeners) listener(changes);
  }
}
