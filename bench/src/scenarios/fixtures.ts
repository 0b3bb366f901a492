import { validateManifest, type ContainerManifest, type KubeletEvent, type ManifestSource } from '@kubelet-ts/core';
import { StaticManifestSource } from '@kubelet-ts/manifest';
import { createKubelet, type Kubelet, type KubeletOptions } from '@kubelet-ts/runner';

/** A manifest with `containers` containers, all running `image` with `command`. */
export function manifest(id: string, image: string, containers = 1, command?: readonly string[], grace?: number): ContainerManifest {
  const r = validateManifest({
    id,
    ...(grace === undefined ? {} : { terminationGracePeriodSeconds: grace }),
    containers: Array.from({ length: containers }, (_, i) => ({ name: `c${i}`, image, ...(command === undefined ? {} : { command }) })),
  });
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.manifest;
}

/**
 * The Node flags the agent's launcher runs with (the shebang of `packages/cli/bin/kubelet-ts.js`,
 * and `npm start`): a process the bench runs as "the agent" gets them too.
 */
export const AGENT_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=2'];

/**
 * An agent on one StaticManifestSource whose events can be awaited, and on `moreSources` beside it
 * (the agent's own server, for the scenarios that read it over HTTP).
 */
export class BenchAgent {
  readonly source = new StaticManifestSource('bench', []);
  readonly kubelet: Kubelet;
  private readonly listeners = new Set<(e: KubeletEvent) => void>();

  constructor(options: Omit<KubeletOptions, 'sources' | 'events'> & { readonly moreSources?: readonly ManifestSource[] }) {
    const { moreSources = [], ...kubeletOptions } = options;
    this.kubelet = createKubelet({
      ...kubeletOptions,
      sources: [this.source, ...moreSources],
      events: { emit: (e) => this.listeners.forEach((l) => l(e)) },
    });
  }

  /** How many pods the agent starts at once now (its `kubelet_ts_start_concurrency` gauge). */
  async pace(): Promise<number | undefined> {
    const { body } = await this.kubelet.metrics();
    const found = /^kubelet_ts_start_concurrency (\d+(?:\.\d+)?)$/m.exec(body);
    return found === null ? undefined : Number(found[1]);
  }

  /**
   * The start concurrency (`pace()`) every 250 ms until `done` settles, and once after: how the
   * adaptive limit moved through a run, repeats folded (`[4, 5, 3]`).
   */
  async paceWhile(done: Promise<void>): Promise<number[]> {
    const limits: number[] = [];
    const note = async () => {
      const limit = await this.pace();
      if (limit !== undefined && limits.at(-1) !== limit) limits.push(limit);
    };
    let finished = false;
    const stop = () => void (finished = true);
    done.then(stop, stop);
    while (!finished) {
      await note();
      await Promise.race([done, new Promise((resolve) => setTimeout(resolve, 250))]);
    }
    await note();
    return limits;
  }

  /** Resolves when `count` events of `type` have arrived after this call. */
  expect(type: KubeletEvent['type'], count: number): Promise<void> {
    return new Promise((resolve) => {
      let seen = 0;
      const listener = (e: KubeletEvent) => {
        if (e.type !== type || ++seen < count) return;
        this.listeners.delete(listener);
        resolve();
      };
      this.listeners.add(listener);
    });
  }
}
