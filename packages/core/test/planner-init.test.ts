import { describe, expect, it } from '@jest/globals';
import { formatFieldErrors } from '../src/errors.js';
import type { ContainerManifest } from '../src/manifest.js';
import { plan, type PlanAction } from '../src/planner.js';
import type { ContainerSpec, ContainerSummary } from '../src/runtime.js';
import { buildContainerSpec } from '../src/spec.js';
import { validateManifest } from '../src/validate.js';
import { actionsOf, desired, NODE, readySandbox, running, SOURCE } from './planner-fixtures.js';

/** A pod with two init containers (`setup`, then `migrate`), a sidecar `proxy` between them, and an app container `web`. */
function pod(restartPolicy: 'Always' | 'OnFailure' | 'Never' = 'Always'): ContainerManifest {
  const result = validateManifest({
    id: 'web',
    restartPolicy,
    initContainers: [
      { name: 'setup', image: 'busybox' },
      { name: 'proxy', image: 'envoy', restartPolicy: 'Always' },
      { name: 'migrate', image: 'busybox' },
    ],
    containers: [{ name: 'web', image: 'nginx' }],
  });
  if (!result.ok) throw new Error(formatFieldErrors(result.errors));
  return result.manifest;
}

function specOf(m: ContainerManifest, name: string): ContainerSpec {
  const c = [...(m.initContainers ?? []), ...m.containers].find((x) => x.name === name)!;
  return buildContainerSpec(m, c, { node: NODE, source: SOURCE });
}

const exited = (m: ContainerManifest, name: string, exitCode: number): ContainerSummary =>
  running(specOf(m, name), { state: 'exited', exitCode, finishedAt: 1_000_100 });

function planFor(m: ContainerManifest, actual: ContainerSummary[], sandboxes = [readySandbox(m)]): readonly PlanAction[] {
  return actionsOf(plan({ desired: [desired(m)], actual, sandboxes, node: NODE, allowRemovals: true, now: 2_000_000 }), m.id);
}

const steps = (actions: readonly PlanAction[]) => actions.map((a) => `${a.type} ${a.container}${'reason' in a ? ` (${a.reason})` : ''}`);

describe('init containers and sidecars, as the kubelet runs them', () => {
  it('starts a new pod with its sandbox and the first init container only', () => {
    expect(steps(planFor(pod(), [], []))).toEqual(['run-sandbox POD (new)', 'create setup (new)']);
  });

  it('runs them in order: the next one once the one before exited 0; a sidecar once started, and kept', () => {
    const m = pod();
    expect(steps(planFor(m, [running(specOf(m, 'setup'))]))).toEqual([]);
    expect(steps(planFor(m, [exited(m, 'setup', 0)]))).toEqual(['create proxy (new)']);
    expect(steps(planFor(m, [exited(m, 'setup', 0), running(specOf(m, 'proxy'))]))).toEqual(['create migrate (new)']);
    const done = [exited(m, 'setup', 0), running(specOf(m, 'proxy')), exited(m, 'migrate', 0)];
    expect(steps(planFor(m, done))).toEqual(['create web (new)']);
    // Running: nothing to do; the completed init containers are left as they ended.
    expect(steps(planFor(m, [...done, running(specOf(m, 'web'))]))).toEqual([]);
  });

  it('restarts a sidecar that ends, whatever the pod’s policy, while an app container runs', () => {
    const m = pod('Never');
    const actions = planFor(m, [exited(m, 'setup', 0), exited(m, 'proxy', 0), exited(m, 'migrate', 0), running(specOf(m, 'web'))]);
    expect(steps(actions)).toEqual(['create proxy (restart)']);
  });

  it('stops the sidecars once every app container has ended for good, and does not start them again', () => {
    const m = pod('OnFailure');
    const proxy = running(specOf(m, 'proxy'));
    const actions = planFor(m, [exited(m, 'setup', 0), proxy, exited(m, 'migrate', 0), exited(m, 'web', 0)]);
    expect(actions).toEqual([expect.objectContaining({ type: 'kill', container: 'proxy', id: proxy.id, reason: 'pod-completed' })]);
    // A failed app container under OnFailure is restarted: the pod has not completed, the sidecar stays.
    expect(steps(planFor(m, [exited(m, 'setup', 0), proxy, exited(m, 'migrate', 0), exited(m, 'web', 1)]))).toEqual([
      'create web (restart)',
    ]);
  });

  it('restarts an init container that failed (Always, OnFailure), and nothing after it runs meanwhile', () => {
    for (const policy of ['Always', 'OnFailure'] as const) {
      const m = pod(policy);
      expect(steps(planFor(m, [exited(m, 'setup', 1)]))).toEqual(['create setup (restart)']);
    }
  });

  it('under Never, a failed init container fails the pod: nothing more runs, not even in a new sandbox', () => {
    const m = pod('Never');
    expect(steps(planFor(m, [exited(m, 'setup', 1)]))).toEqual([]);
    expect(steps(planFor(m, [exited(m, 'setup', 1)], []))).toEqual([]);
  });

  it('never runs the init containers again once an app container has run in the sandbox', () => {
    const m = pod();
    // The completed ones were removed (a garbage collection): the app container speaks for them.
    expect(steps(planFor(m, [running(specOf(m, 'proxy')), running(specOf(m, 'web'))]))).toEqual([]);
  });

  it('stops a pod whose sandbox is replaced app containers first, then its sidecar and init containers, the last started first', () => {
    const m = pod();
    const all = [exited(m, 'setup', 0), running(specOf(m, 'proxy')), exited(m, 'migrate', 0), running(specOf(m, 'web'))];
    const removals = planFor(m, all, []).filter((a) => a.type === 'remove');
    expect(removals.map((a) => a.container)).toEqual(['web', 'migrate', 'proxy', 'setup']);
  });

  it('keeps the init containers’ exited containers: they are not "not desired"', () => {
    const m = pod();
    const all = [exited(m, 'setup', 0), running(specOf(m, 'proxy')), exited(m, 'migrate', 0), running(specOf(m, 'web'))];
    expect(planFor(m, all).filter((a) => a.type === 'remove')).toEqual([]);
  });
});

describe('init containers: validation', () => {
  const refused = (input: object) => {
    const result = validateManifest({ id: 'web', containers: [{ name: 'web', image: 'nginx' }], ...input });
    return result.ok ? [] : result.errors;
  };

  it.each([
    [
      { initContainers: [{ name: 'web', image: 'busybox' }] },
      'containers[0].name',
      'duplicate container name "web" (also initContainers[0])',
    ],
    [
      { initContainers: [{ name: 'i', image: 'b', restartPolicy: 'OnFailure' }] },
      'initContainers[0].restartPolicy',
      'must be one of Always',
    ],
    [
      { initContainers: [{ name: 'i', image: 'b', readinessProbe: { exec: { command: ['true'] } } }] },
      'initContainers[0].readinessProbe',
      'give it restartPolicy: Always',
    ],
    [
      { containers: [{ name: 'web', image: 'nginx', restartPolicy: 'Always' }] },
      'containers[0].restartPolicy',
      'only by an init container',
    ],
  ])('%# refuses %j', (input, path, message) => {
    expect(refused(input)).toContainEqual({ path, message: expect.stringContaining(message) });
  });
});
