import { describe, expect, it } from '@jest/globals';
import { Labels } from '../src/naming.js';
import { plan } from '../src/planner.js';
import { validateManifest } from '../src/validate.js';
import {
  NODE,
  SOURCE,
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

describe('plan', () => {
  it('plans nothing for nothing', () => {
    expect(plan({ desired: [], actual: [], sandboxes: [], node: NODE, allowRemovals: true, now: 0 })).toEqual({
      pods: [],
      held: 0,
      backOffs: [],
      finished: [],
    });
  });

  it('creates every container of a new pod in its sandbox, with spec labels carrying the node', () => {
    const web = manifest('web', 'nginx:nginx', 'log:busybox');
    const p = plan({ desired: [desired(web)], actual: [], sandboxes: [readySandbox(web)], node: NODE, allowRemovals: true, now: 0 });
    expect(p.pods.map((x) => x.podId)).toEqual(['web']);
    const actions = actionsOf(p, 'web');
    expect(actions.map((a) => [a.type, a.podId, a.container, a.reason])).toEqual([
      ['create', 'web', 'nginx', 'new'],
      ['create', 'web', 'log', 'new'],
    ]);
    for (const a of actions) {
      if (a.type !== 'create') throw new Error('expected create');
      expect(a.sandbox).toBe('sandbox-web');
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
    const p = plan({
      desired: [desired(web), desired(db)],
      actual: [...inSync(web), ...inSync(db)],
      sandboxes: readySandboxes(web, db),
      node: NODE,
      allowRemovals: true,
      now: 0,
    });
    expect(p.pods).toEqual([]);
    expect(p.held).toBe(0);
  });

  it('restarts a first crash at once, as a new container that counts the restart', () => {
    const web = manifest('web', 'nginx:nginx');
    const exited = running(specOf(web, 'nginx'), { state: 'exited', startedAt: 1_990_000, finishedAt: 2_000_000, exitCode: 1 });
    const p = plan({
      desired: [desired(web)],
      actual: [exited],
      sandboxes: [readySandbox(web)],
      node: NODE,
      allowRemovals: true,
      now: 2_000_000,
    });
    const [action] = allActions(p);
    expect(action).toMatchObject({ type: 'create', reason: 'restart', container: 'nginx' });
    if (action?.type !== 'create') throw new Error('expected create');
    expect(action.spec.labels[Labels.restartCount]).toBe('1');
    expect(action.spec.labels[Labels.crashStreak]).toBe('1');
    expect(p.backOffs).toEqual([]);
  });

  it('restarts a second consecutive crash after its crash back-off (10 s)', () => {
    const web = manifest('web', 'nginx:nginx');
    const spec = specOf(web, 'nginx');
    const labels = { ...spec.labels, [Labels.crashStreak]: '1', [Labels.restartCount]: '1' };
    const exited = running(spec, { labels, state: 'exited', startedAt: 1_990_000, finishedAt: 2_000_000, exitCode: 1 });
    const waiting = plan({
      desired: [desired(web)],
      actual: [exited],
      sandboxes: [readySandbox(web)],
      node: NODE,
      allowRemovals: true,
      now: 2_009_999,
    });
    expect(waiting.pods).toEqual([]);
    expect(waiting.backOffs).toEqual([
      { podId: 'web', container: 'nginx', id: exited.id, exitCode: 1, until: 2_010_000, delayMs: 10_000, restartCount: 1 },
    ]);
    const p = plan({
      desired: [desired(web)],
      actual: [exited],
      sandboxes: [readySandbox(web)],
      node: NODE,
      allowRemovals: true,
      now: 2_010_000,
    });
    const [action] = allActions(p);
    expect(action).toMatchObject({ type: 'create', reason: 'restart', container: 'nginx' });
    if (action?.type !== 'create') throw new Error('expected create');
    expect(action.spec.labels[Labels.restartCount]).toBe('2');
    expect(action.spec.labels[Labels.crashStreak]).toBe('2');
    expect(p.backOffs).toEqual([]);
  });

  it.each([
    [1, 10_000],
    [2, 20_000],
    [3, 40_000],
    [5, 160_000],
    [6, 300_000],
    [9, 300_000],
  ])('doubles the back-off per consecutive crash after the first (streak %i → %i ms), capped at 300 s', (streak, delay) => {
    const web = manifest('web', 'nginx:nginx');
    const spec = specOf(web, 'nginx');
    const labels = { ...spec.labels, [Labels.crashStreak]: String(streak), [Labels.restartCount]: String(streak) };
    const exited = running(spec, { labels, state: 'exited', startedAt: 1_999_000, finishedAt: 2_000_000, exitCode: 2 });
    const p = plan({
      desired: [desired(web)],
      actual: [exited],
      sandboxes: [readySandbox(web)],
      node: NODE,
      allowRemovals: true,
      now: 2_000_000,
    });
    expect(p.backOffs[0]).toMatchObject({ delayMs: delay, until: 2_000_000 + delay, restartCount: streak });
  });

  it('starts the back-off over after ten minutes of clean running: the next crash is a first crash, restarted at once', () => {
    const web = manifest('web', 'nginx:nginx');
    const spec = specOf(web, 'nginx');
    const labels = { ...spec.labels, [Labels.crashStreak]: '6', [Labels.restartCount]: '6' };
    const exited = running(spec, { labels, state: 'exited', startedAt: 1_000_000, finishedAt: 1_600_000, exitCode: 1 });
    const p = plan({
      desired: [desired(web)],
      actual: [exited],
      sandboxes: [readySandbox(web)],
      node: NODE,
      allowRemovals: true,
      now: 1_600_000,
    });
    expect(p.backOffs).toEqual([]);
    const [action] = allActions(p);
    if (action?.type !== 'create') throw new Error('expected create');
    expect(action.spec.labels[Labels.crashStreak]).toBe('1');
    expect(action.spec.labels[Labels.restartCount]).toBe('7');
  });

  it.each<[string | undefined, number, boolean]>([
    [undefined, 0, true],
    ['Always', 0, true],
    ['Always', 1, true],
    ['OnFailure', 1, true],
    ['OnFailure', 0, false],
    ['Never', 1, false],
    ['Never', 0, false],
  ])('follows restartPolicy %s for exit code %i (restart: %s)', (policy, exitCode, restarts) => {
    const r = validateManifest({
      id: 'job',
      ...(policy === undefined ? {} : { restartPolicy: policy }),
      containers: [{ name: 'main', image: 'busybox' }],
    });
    if (!r.ok) throw new Error('invalid');
    const exited = running(specOf(r.manifest, 'main'), { state: 'exited', startedAt: 0, finishedAt: 1000, exitCode });
    const p = plan({
      desired: [desired(r.manifest)],
      actual: [exited],
      sandboxes: [readySandbox(r.manifest)],
      node: NODE,
      allowRemovals: true,
      now: 1_000_000,
    });
    expect(allActions(p).map((a) => a.type)).toEqual(restarts ? ['create'] : []);
    expect(p.backOffs).toEqual([]);
  });

  it('keeps the most recent exited container for inspection and removes older ones once replaced', () => {
    const web = manifest('web', 'nginx:nginx');
    const spec = specOf(web, 'nginx');
    const oldest = running(spec, { id: 'oldest', createdAt: 100, state: 'exited', finishedAt: 150 });
    const older = running(spec, { id: 'older', createdAt: 200, state: 'exited', finishedAt: 250 });
    const up = running(spec, { id: 'up', createdAt: 300 });
    const p = plan({
      desired: [desired(web)],
      actual: [oldest, up, older],
      sandboxes: [readySandbox(web)],
      node: NODE,
      allowRemovals: true,
      now: 0,
    });
    expect(allActions(p).map((a) => (a.type === 'remove' ? [a.id, a.reason, a.running] : a.type))).toEqual([['oldest', 'gc', false]]);
  });

  it('uses the manifest grace period for a replaced container, and the label for an undesired one', () => {
    const r = validateManifest({ id: 'web', terminationGracePeriodSeconds: 5, containers: [{ name: 'nginx', image: 'nginx' }] });
    if (!r.ok) throw new Error('invalid');
    const c = running(specOf(r.manifest, 'nginx'));
    expect(c.labels[Labels.gracePeriod]).toBe('5');
    const gone = plan({ desired: [], actual: [c], sandboxes: [readySandbox(r.manifest)], node: NODE, allowRemovals: true, now: 0 });
    expect(allActions(gone)).toMatchObject([
      { type: 'remove', graceSeconds: 5 },
      { type: 'remove-sandbox', id: 'sandbox-web' },
    ]);
    const changed = validateManifest({ id: 'web', terminationGracePeriodSeconds: 7, containers: [{ name: 'nginx', image: 'nginx:2' }] });
    if (!changed.ok) throw new Error('invalid');
    const replaced = plan({
      desired: [desired(changed.manifest)],
      actual: [c],
      sandboxes: [readySandbox(changed.manifest)],
      node: NODE,
      allowRemovals: true,
      now: 0,
    });
    expect(allActions(replaced)[0]).toMatchObject({ type: 'remove', reason: 'spec-changed', graceSeconds: 7 });
  });

  it('leaves busy pods out of the plan', () => {
    const web = manifest('web', 'nginx:nginx');
    const old = manifest('old', 'x:busybox');
    const p = plan({
      desired: [desired(web)],
      actual: inSync(old),
      sandboxes: readySandboxes(old),
      node: NODE,
      allowRemovals: true,
      now: 0,
      busy: new Set(['web', 'old']),
    });
    expect(p.pods).toEqual([]);
  });

  it('chooses the pull policy by the kubelet rule', () => {
    const r = validateManifest({
      id: 'web',
      containers: [
        { name: 'a', image: 'nginx' },
        { name: 'b', image: 'nginx:latest' },
        { name: 'c', image: 'nginx:1.25' },
        { name: 'd', image: 'registry:5000/nginx' },
        { name: 'e', image: 'nginx:1.25', imagePullPolicy: 'Always' },
        { name: 'f', image: 'nginx', imagePullPolicy: 'Never' },
      ],
    });
    if (!r.ok) throw new Error('invalid');
    const p = plan({
      desired: [desired(r.manifest)],
      actual: [],
      sandboxes: [readySandbox(r.manifest)],
      node: NODE,
      allowRemovals: true,
      now: 0,
    });
    expect(allActions(p).map((a) => (a.type === 'create' ? `${a.container}:${a.pullPolicy}` : ''))).toEqual([
      'a:Always',
      'b:Always',
      'c:IfNotPresent',
      'd:Always',
      'e:Always',
      'f:Never',
    ]);
  });
});
