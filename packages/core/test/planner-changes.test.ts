import { describe, expect, it } from '@jest/globals';
import type { DesiredPod } from '../src/manifest.js';
import { Labels } from '../src/naming.js';
import { plan } from '../src/planner.js';
import type { ContainerSummary } from '../src/runtime.js';
import type { SandboxSummary } from '../src/sandbox.js';
import {
  NODE,
  manifest,
  desired,
  specOf,
  running,
  inSync,
  actionsOf,
  allActions,
  readySandbox,
  readySandboxes,
} from './planner-fixtures.js';

describe('plan: changed specs, removals and ownership', () => {
  it('replaces only the container whose spec changed, removals before creations', () => {
    const v1 = manifest('web', 'nginx:nginx', 'log:busybox');
    const v2 = manifest('web', 'nginx:nginx', 'log:alpine');
    const nginx = running(specOf(v1, 'nginx'));
    const log = running(specOf(v1, 'log'));
    const p = plan({
      desired: [desired(v2)],
      actual: [nginx, log],
      sandboxes: [readySandbox(v2)],
      node: NODE,
      allowRemovals: true,
      now: 0,
    });
    const actions = actionsOf(p, 'web');
    expect(actions).toHaveLength(2);
    expect(actions[0]).toEqual({
      type: 'remove',
      podId: 'web',
      container: 'log',
      reason: 'spec-changed',
      id: log.id,
      running: true,
      graceSeconds: 30,
    });
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
    const p = plan({ desired: [desired(v2)], actual: [b, gone], sandboxes: [readySandbox(v2)], node: NODE, allowRemovals: true, now: 0 });
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
    const p = plan({ desired: [desired(v2)], actual: [old], sandboxes: [readySandbox(v2)], node: NODE, allowRemovals: true, now: 0 });
    expect(actionsOf(p, 'web').map((a) => (a.type === 'remove' ? [a.type, a.id, a.running] : [a.type]))).toEqual([
      ['remove', old.id, false],
      ['create'],
    ]);
  });

  it('removes the containers of a pod that is no longer desired when removals are allowed', () => {
    const old = manifest('old', 'nginx:nginx', 'log:busybox');
    const actual = inSync(old);
    const p = plan({ desired: [], actual, sandboxes: [readySandbox(old)], node: NODE, allowRemovals: true, now: 0 });
    expect(p.held).toBe(0);
    expect(p.pods.map((x) => x.podId)).toEqual(['old']);
    expect(actionsOf(p, 'old')).toEqual([
      ...actual.map((c) => ({
        type: 'remove',
        podId: 'old',
        container: c.labels[Labels.containerName],
        reason: 'not-desired',
        id: c.id,
        running: true,
        graceSeconds: 30,
      })),
      // The sandbox after its containers, and the pod's volumes with it.
      { type: 'remove-sandbox', podId: 'old', container: 'POD', reason: 'not-desired', id: 'sandbox-old', volumes: true },
    ]);
  });

  it('holds the containers of an undesired pod while removals are not allowed', () => {
    const web = manifest('web', 'nginx:nginx');
    const old = manifest('old', 'nginx:nginx', 'log:busybox');
    const p = plan({
      desired: [desired(web)],
      actual: [...inSync(web), ...inSync(old)],
      sandboxes: readySandboxes(web, old),
      node: NODE,
      allowRemovals: false,
      now: 0,
    });
    expect(p.pods).toEqual([]);
    // Its two containers, and its sandbox.
    expect(p.held).toBe(3);
  });

  it('removes a container dropped from a desired manifest even while removals are not allowed', () => {
    const v1 = manifest('web', 'nginx:nginx', 'log:busybox');
    const v2 = manifest('web', 'nginx:nginx');
    const [nginx, log] = inSync(v1);
    const p = plan({
      desired: [desired(v2)],
      actual: [nginx!, log!],
      sandboxes: [readySandbox(v2)],
      node: NODE,
      allowRemovals: false,
      now: 0,
    });
    expect(p.held).toBe(0);
    expect(actionsOf(p, 'web')).toEqual([
      { type: 'remove', podId: 'web', container: 'log', reason: 'not-desired', id: log!.id, running: true, graceSeconds: 30 },
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
    const p = plan({ desired: [desired(web)], actual, sandboxes: [readySandbox(web)], node: NODE, allowRemovals: true, now: 0 });
    expect(actionsOf(p, 'web')).toEqual([
      { type: 'remove', podId: 'web', container: 'nginx', reason: 'duplicate', id: 'older', running: true, graceSeconds: 30 },
    ]);
  });

  it('prefers a running container over a newer exited one with the same spec', () => {
    const web = manifest('web', 'nginx:nginx');
    const spec = specOf(web, 'nginx');
    const up = running(spec, { id: 'up', createdAt: 100 });
    const down = running(spec, { id: 'down', createdAt: 200, state: 'exited' });
    const p = plan({
      desired: [desired(web)],
      actual: [down, up],
      sandboxes: [readySandbox(web)],
      node: NODE,
      allowRemovals: true,
      now: 0,
    });
    // The running one is kept; the exited one is not running, so it is neither started nor a duplicate.
    expect(p).toEqual({ pods: [], held: 0, backOffs: [], finished: [] });
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
    // Our pod's sandbox, and the sandbox of the other node's undesired pod.
    const sandboxes = [readySandbox(web), { ...readySandbox(manifest('gone', 'x:busybox'), 'host-2'), id: 'other-gone-sandbox' }];
    const p = plan({
      desired: [desired(web)],
      actual: [foreign, otherNodeSame, otherNodeOld, otherNodeUndesired, unlabelledNode, ours],
      sandboxes,
      node: NODE,
      allowRemovals: true,
      now: 0,
    });
    expect(p).toEqual({ pods: [], held: 0, backOffs: [], finished: [] });

    // Without our own container, the pod is created rather than adopting another node's container.
    const p2 = plan({
      desired: [desired(web)],
      actual: [foreign, otherNodeSame, otherNodeOld, otherNodeUndesired],
      sandboxes,
      node: NODE,
      allowRemovals: true,
      now: 0,
    });
    expect(allActions(p2).map((a) => [a.type, a.reason])).toEqual([['create', 'new']]);
    const ids = new Set(['foreign', 'other-same', 'other-old', 'other-gone', 'no-node', 'other-gone-sandbox']);
    expect(allActions(p2).filter((a) => 'id' in a && ids.has(a.id))).toEqual([]);
  });

  it('handles 10,000 pods that are all in sync', () => {
    const desiredPods: DesiredPod[] = [];
    const actual: ContainerSummary[] = [];
    const sandboxes: SandboxSummary[] = [];
    for (let i = 0; i < 10_000; i++) {
      const m = manifest(`pod-${i}`, 'app:nginx', 'side:busybox');
      desiredPods.push(desired(m));
      actual.push(...inSync(m));
      sandboxes.push(readySandbox(m));
    }
    const p = plan({ desired: desiredPods, actual, sandboxes, node: NODE, allowRemovals: true, now: 0 });
    expect(p.pods).toHaveLength(0);
    expect(p.held).toBe(0);

    // And the same input with one pod gone plans exactly that pod's removal.
    const p2 = plan({ desired: desiredPods.slice(1), actual, sandboxes, node: NODE, allowRemovals: true, now: 0 });
    expect(p2.pods.map((x) => x.podId)).toEqual(['pod-0']);
  });
});
