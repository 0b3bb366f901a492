import { describe, expect, it } from '@jest/globals';
import { formatFieldErrors } from '../src/errors.js';
import type { ContainerManifest, DesiredPod } from '../src/manifest.js';
import { Labels } from '../src/naming.js';
import { plan, type Plan, type PlanAction } from '../src/planner.js';
import type { ContainerSpec, ContainerSummary } from '../src/runtime.js';
import { buildContainerSpec } from '../src/spec.js';
import { validateManifest } from '../src/validate.js';

const NODE = 'host-1';
const SOURCE = 'file';

/** A validated manifest with one container per `name:image` pair. */
function manifest(id: string, ...containers: string[]): ContainerManifest {
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

function desired(m: ContainerManifest): DesiredPod {
  return { manifest: m, source: SOURCE };
}

function specOf(m: ContainerManifest, container: string, node = NODE): ContainerSpec {
  const c = m.containers.find((x) => x.name === container);
  if (c === undefined) throw new Error(`no container ${container}`);
  return buildContainerSpec(m, c, { node, source: SOURCE });
}

let nextId = 0;

/** A running container as `list` would report it, made from `spec`. */
function running(spec: ContainerSpec, overrides: Partial<ContainerSummary> = {}): ContainerSummary {
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

/** All containers of `m`, running, as on a host that is in sync. */
function inSync(m: ContainerManifest): ContainerSummary[] {
  return m.containers.map((c) => running(specOf(m, c.name)));
}

function actionsOf(p: Plan, podId: string): readonly PlanAction[] {
  return p.pods.find((x) => x.podId === podId)?.actions ?? [];
}

function allActions(p: Plan): PlanAction[] {
  return p.pods.flatMap((x) => x.actions);
}

describe('plan', () => {
  it('plans nothing for nothing', () => {
    expect(plan({ desired: [], actual: [], node: NODE, allowRemovals: true })).toEqual({ pods: [], held: 0 });
  });

  it('creates every container of a new pod, with spec labels carrying the node', () => {
    const web = manifest('web', 'nginx:nginx', 'log:busybox');
    const p = plan({ desired: [desired(web)], actual: [], node: NODE, allowRemovals: true });
    expect(p.pods.map((x) => x.podId)).toEqual(['web']);
    const actions = actionsOf(p, 'web');
    expect(actions.map((a) => [a.type, a.podId, a.container, a.reason])).toEqual([
      ['create', 'web', 'nginx', 'new'],
      ['create', 'web', 'log', 'new'],
    ]);
    for (const a of actions) {
      if (a.type !== 'create') throw new Error('expected create');
      expect(a.spec.labels[Labels.node]).toBe(NODE);
      expect(a.spec.labels[Labels.manifestId]).toBe('web');
      expect(a.spec.labels[Labels.containerName]).toBe(a.container);
      expect(a.spec.labels[Labels.source]).toBe(SOURCE);
      expect(a.spec.labels[Labels.specHash]).toBe(specOf(web, a.container).labels[Labels.specHash]);
    }
    expect(p.held).toBe(0);
  });

  it('plans nothing when everything is in sync', () => {
    const web = manifest('web', 'nginx:nginx', 'log:busybox');
    const db = manifest('db', 'redis:redis');
    const p = plan({ desired: [desired(web), desired(db)], actual: [...inSync(web), ...inSync(db)], node: NODE, allowRemovals: true });
    expect(p.pods).toEqual([]);
    expect(p.held).toBe(0);
  });

  it('starts an exited container that has the current spec', () => {
    const web = manifest('web', 'nginx:nginx');
    const exited = running(specOf(web, 'nginx'), { state: 'exited', finishedAt: 2_000_000, exitCode: 1 });
    const p = plan({ desired: [desired(web)], actual: [exited], node: NODE, allowRemovals: true });
    expect(actionsOf(p, 'web')).toEqual([{ type: 'start', podId: 'web', container: 'nginx', reason: 'exited', id: exited.id }]);
  });

  it('starts a container that was created but never started', () => {
    const web = manifest('web', 'nginx:nginx');
    const created = running(specOf(web, 'nginx'), { state: 'created', startedAt: undefined });
    const p = plan({ desired: [desired(web)], actual: [created], node: NODE, allowRemovals: true });
    expect(allActions(p).map((a) => [a.type, a.reason])).toEqual([['start', 'exited']]);
  });

  it('replaces only the container whose spec changed, removals before creations', () => {
    const v1 = manifest('web', 'nginx:nginx', 'log:busybox');
    const v2 = manifest('web', 'nginx:nginx', 'log:alpine');
    const nginx = running(specOf(v1, 'nginx'));
    const log = running(specOf(v1, 'log'));
    const p = plan({ desired: [desired(v2)], actual: [nginx, log], node: NODE, allowRemovals: true });
    const actions = actionsOf(p, 'web');
    expect(actions).toHaveLength(2);
    expect(actions[0]).toEqual({ type: 'remove', podId: 'web', container: 'log', reason: 'spec-changed', id: log.id, running: true });
    const create = actions[1]!;
    expect(create.type).toBe('create');
    expect(create.container).toBe('log');
    expect(create.reason).toBe('spec-changed');
    if (create.type === 'create') expect(create.spec.image).toBe('alpine');
    expect(allActions(p).some((a) => a.type === 'remove' && a.id === nginx.id)).toBe(false);
  });

  it('orders all removals of a pod before any creation, even across containers', () => {
    // 'a' is new (create), 'b' changed (remove + create), 'gone' is no longer listed (remove).
    const v1 = manifest('web', 'b:nginx', 'gone:busybox');
    const v2 = manifest('web', 'a:redis', 'b:alpine');
    const b = running(specOf(v1, 'b'));
    const gone = running(specOf(v1, 'gone'));
    const p = plan({ desired: [desired(v2)], actual: [b, gone], node: NODE, allowRemovals: true });
    const types = actionsOf(p, 'web').map((a) => a.type);
    expect(types).toEqual(['remove', 'remove', 'create', 'create']);
    expect(
      actionsOf(p, 'web')
        .map((a) => `${a.type}:${a.container}:${a.reason}`)
        .sort(),
    ).toEqual(['create:a:new', 'create:b:spec-changed', 'remove:b:spec-changed', 'remove:gone:not-desired'].sort());
  });

  it('removes an exited container with an old spec as not running', () => {
    const v1 = manifest('web', 'nginx:nginx');
    const v2 = manifest('web', 'nginx:nginx2');
    const old = running(specOf(v1, 'nginx'), { state: 'exited' });
    const p = plan({ desired: [desired(v2)], actual: [old], node: NODE, allowRemovals: true });
    expect(actionsOf(p, 'web').map((a) => (a.type === 'remove' ? [a.type, a.id, a.running] : [a.type]))).toEqual([
      ['remove', old.id, false],
      ['create'],
    ]);
  });

  it('removes the containers of a pod that is no longer desired when removals are allowed', () => {
    const old = manifest('old', 'nginx:nginx', 'log:busybox');
    const actual = inSync(old);
    const p = plan({ desired: [], actual, node: NODE, allowRemovals: true });
    expect(p.held).toBe(0);
    expect(p.pods.map((x) => x.podId)).toEqual(['old']);
    expect(actionsOf(p, 'old')).toEqual(
      actual.map((c) => ({
        type: 'remove',
        podId: 'old',
        container: c.labels[Labels.containerName],
        reason: 'not-desired',
        id: c.id,
        running: true,
      })),
    );
  });

  it('holds the containers of an undesired pod while removals are not allowed', () => {
    const web = manifest('web', 'nginx:nginx');
    const old = manifest('old', 'nginx:nginx', 'log:busybox');
    const p = plan({ desired: [desired(web)], actual: [...inSync(web), ...inSync(old)], node: NODE, allowRemovals: false });
    expect(p.pods).toEqual([]);
    expect(p.held).toBe(2);
  });

  it('removes a container dropped from a desired manifest even while removals are not allowed', () => {
    const v1 = manifest('web', 'nginx:nginx', 'log:busybox');
    const v2 = manifest('web', 'nginx:nginx');
    const [nginx, log] = inSync(v1);
    const p = plan({ desired: [desired(v2)], actual: [nginx!, log!], node: NODE, allowRemovals: false });
    expect(p.held).toBe(0);
    expect(actionsOf(p, 'web')).toEqual([
      { type: 'remove', podId: 'web', container: 'log', reason: 'not-desired', id: log!.id, running: true },
    ]);
  });

  it.each([
    ['older first', false],
    ['newer first', true],
  ])('keeps the newer of two running containers with the current spec (%s)', (_, newerFirst) => {
    const web = manifest('web', 'nginx:nginx');
    const spec = specOf(web, 'nginx');
    const older = running(spec, { id: 'older', createdAt: 100 });
    const newer = running(spec, { id: 'newer', createdAt: 200 });
    const actual = newerFirst ? [newer, older] : [older, newer];
    const p = plan({ desired: [desired(web)], actual, node: NODE, allowRemovals: true });
    expect(actionsOf(p, 'web')).toEqual([
      { type: 'remove', podId: 'web', container: 'nginx', reason: 'duplicate', id: 'older', running: true },
    ]);
  });

  it('prefers a running container over a newer exited one with the same spec', () => {
    const web = manifest('web', 'nginx:nginx');
    const spec = specOf(web, 'nginx');
    const up = running(spec, { id: 'up', createdAt: 100 });
    const down = running(spec, { id: 'down', createdAt: 200, state: 'exited' });
    const p = plan({ desired: [desired(web)], actual: [down, up], node: NODE, allowRemovals: true });
    // The running one is kept; the exited one is not running, so it is neither started nor a duplicate.
    expect(p).toEqual({ pods: [], held: 0 });
  });

  it('never touches foreign containers or containers labelled for another node', () => {
    const web = manifest('web', 'nginx:nginx');
    const foreign = running(specOf(web, 'nginx'), { id: 'foreign', labels: {} });
    const otherNodeSame = running(specOf(web, 'nginx', 'host-2'), { id: 'other-same' });
    const otherNodeOld = running(specOf(manifest('web', 'nginx:old'), 'nginx', 'host-2'), { id: 'other-old' });
    const otherNodeUndesired = running(specOf(manifest('gone', 'x:busybox'), 'x', 'host-2'), { id: 'other-gone' });
    const unlabelledNode = running(specOf(web, 'nginx'), {
      id: 'no-node',
      labels: Object.fromEntries(Object.entries(specOf(web, 'nginx').labels).filter(([k]) => k !== Labels.node)),
    });
    const ours = running(specOf(web, 'nginx'), { id: 'ours' });
    const p = plan({
      desired: [desired(web)],
      actual: [foreign, otherNodeSame, otherNodeOld, otherNodeUndesired, unlabelledNode, ours],
      node: NODE,
      allowRemovals: true,
    });
    expect(p).toEqual({ pods: [], held: 0 });

    // Without our own container, the pod is created rather than adopting another node's container.
    const p2 = plan({ desired: [desired(web)], actual: [foreign, otherNodeSame, otherNodeOld, otherNodeUndesired], node: NODE, allowRemovals: true });
    expect(allActions(p2).map((a) => [a.type, a.reason])).toEqual([['create', 'new']]);
    const ids = new Set(['foreign', 'other-same', 'other-old', 'other-gone', 'no-node']);
    expect(allActions(p2).filter((a) => a.type !== 'create' && ids.has(a.id))).toEqual([]);
  });

  it('handles 10,000 pods that are all in sync', () => {
    const desiredPods: DesiredPod[] = [];
    const actual: ContainerSummary[] = [];
    for (let i = 0; i < 10_000; i++) {
      const m = manifest(`pod-${i}`, 'app:nginx', 'side:busybox');
      desiredPods.push(desired(m));
      actual.push(...inSync(m));
    }
    const p = plan({ desired: desiredPods, actual, node: NODE, allowRemovals: true });
    expect(p.pods).toHaveLength(0);
    expect(p.held).toBe(0);

    // And the same input with one pod gone plans exactly that pod's removal.
    const p2 = plan({ desired: desiredPods.slice(1), actual, node: NODE, allowRemovals: true });
    expect(p2.pods.map((x) => x.podId)).toEqual(['pod-0']);
  });
});
