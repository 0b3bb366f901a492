import type { Container, ContainerManifest } from './manifest.js';
import { Labels } from './naming.js';
import type { ContainerSummary } from './runtime.js';

/**
 * Where a pod's init containers stand (the kubelet's `computeInitContainerActions`, in short):
 * - `done`: each init container that runs to completion has exited 0 with its current spec, and
 *   each sidecar before the app containers runs (or an app container has already run in this
 *   sandbox, as the kubelet then never runs the init containers again): the app containers go;
 * - `next`: init container `index` is the one to run now (or restart, or wait for); none after it
 *   is started, nor any app container;
 * - `failed`: an init container failed under `restartPolicy: Never`: the pod runs nothing more.
 */
export type InitStep = { readonly kind: 'done' } | { readonly kind: 'next'; readonly index: number } | { readonly kind: 'failed' };

const DONE: InitStep = { kind: 'done' };
const FAILED: InitStep = { kind: 'failed' };

/** Whether an init container is a sidecar: started in its turn, kept running beside the app containers. */
export function isSidecar(container: Container): boolean {
  return container.restartPolicy === 'Always';
}

/** `list` is the pod's containers in its current sandbox; `hashes` the init containers' spec hashes, in order. */
export function initStep(manifest: ContainerManifest, list: readonly ContainerSummary[], hashes: readonly string[]): InitStep {
  const inits = manifest.initContainers;
  if (inits === undefined || inits.length === 0) return DONE;
  for (const c of list) if (isAppContainer(manifest, c.labels[Labels.containerName])) return DONE;
  for (let i = 0; i < inits.length; i++) {
    const init = inits[i]!;
    const newest = newestOf(list, init.name, hashes[i]!);
    if (isSidecar(init)) {
      if (newest?.state === 'running') continue;
      return { kind: 'next', index: i };
    }
    if (newest?.state === 'exited' && newest.exitCode === 0) continue;
    if (newest?.state === 'exited' && manifest.restartPolicy === 'Never') return FAILED;
    return { kind: 'next', index: i };
  }
  return DONE;
}

function isAppContainer(manifest: ContainerManifest, name: string | undefined): boolean {
  for (const c of manifest.containers) if (c.name === name) return true;
  return false;
}

/** The newest container of manifest container `name` made with spec `hash`. */
export function newestOf(list: readonly ContainerSummary[], name: string, hash: string): ContainerSummary | undefined {
  let newest: ContainerSummary | undefined;
  for (const c of list)
    if (
      c.labels[Labels.containerName] === name &&
      c.labels[Labels.specHash] === hash &&
      (newest === undefined || c.createdAt >= newest.createdAt)
    )
      newest = c;
  return newest;
}
