/** The planner tests' fixtures: manifests, desired pods, and their sandboxes and containers as the runtime lists them. */
import { formatFieldErrors } from '../src/errors.js';
import type { ContainerManifest, DesiredPod } from '../src/manifest.js';
import type { Plan, PlanAction } from '../src/planner.js';
import type { ContainerSpec, ContainerSummary } from '../src/runtime.js';
import { buildSandboxSpec, type SandboxSummary } from '../src/sandbox.js';
import { buildContainerSpec } from '../src/spec.js';
import { validateManifest } from '../src/validate.js';

export const NODE = 'host-1';
export const SOURCE = 'file';

/** A validated manifest with one container per `name:image` pair. */
export function manifest(id: string, ...containers: string[]): ContainerManifest {
  const result = validateManifest({
    id,
    containers: containers.map((c) => {
      const [name, image] = c.split(':');
      return { name, image };
    }),
  });
  if (!result.ok) throw new Error(formatFieldErrors(result.errors));
  return result.manifest;
}

export function desired(m: ContainerManifest): DesiredPod {
  return { manifest: m, source: SOURCE };
}

export function specOf(m: ContainerManifest, container: string, node = NODE): ContainerSpec {
  const c = m.containers.find((x) => x.name === container);
  if (c === undefined) throw new Error(`no container ${container}`);
  return buildContainerSpec(m, c, { node, source: SOURCE });
}

let nextId = 0;

/** A running container as `list` would report it, made from `spec`. */
export function running(spec: ContainerSpec, overrides: Partial<ContainerSummary> = {}): ContainerSummary {
  nextId += 1;
  return {
    id: `c${nextId}`,
    name: spec.name,
    image: spec.image,
    labels: spec.labels,
    state: 'running',
    createdAt: 1_000_000 + nextId,
    startedAt: 1_000_000 + nextId,
    ...overrides,
  };
}

/**
 * The pod's ready sandbox, made with its current ports, as `listSandboxes` would report it: its
 * containers are planned in it, container by container. Its id is `sandbox-<pod id>`.
 */
export function readySandbox(m: ContainerManifest, node = NODE): SandboxSummary {
  const spec = buildSandboxSpec(m, { node, source: SOURCE });
  return { id: `sandbox-${m.id}`, name: spec.name, labels: spec.labels, state: 'ready', createdAt: 1_000_000 };
}

/** The ready sandboxes of these pods. */
export function readySandboxes(...manifests: ContainerManifest[]): SandboxSummary[] {
  return manifests.map((m) => readySandbox(m));
}

/** All containers of `m`, running, as on a host that is in sync. */
export function inSync(m: ContainerManifest): ContainerSummary[] {
  return m.containers.map((c) => running(specOf(m, c.name)));
}

export function actionsOf(p: Plan, podId: string): readonly PlanAction[] {
  return p.pods.find((x) => x.podId === podId)?.actions ?? [];
}

export function allActions(p: Plan): PlanAction[] {
  return p.pods.flatMap((x) => x.actions);
}
