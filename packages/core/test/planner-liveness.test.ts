import { describe, expect, it } from '@jest/globals';
import { Labels } from '../src/naming.js';
import { reportPlan } from '../src/plan-report.js';
import { plan } from '../src/planner.js';
import type { ContainerSummary } from '../src/runtime.js';
import { validateManifest } from '../src/validate.js';
import { NODE, manifest, desired, specOf, running, inSync, allActions, readySandbox } from './planner-fixtures.js';

describe('plan: liveness results and big pods', () => {
  it('kills a running container its liveness probe found unhealthy, with the grace period, and keeps it', () => {
    const web = validateManifest({
      id: 'web',
      terminationGracePeriodSeconds: 7,
      containers: [
        { name: 'nginx', image: 'nginx' },
        { name: 'side', image: 'busybox' },
      ],
    });
    if (!web.ok) throw new Error('invalid');
    const actual = inSync(web.manifest);
    const sick = actual[0]!;
    const p = plan({
      desired: [desired(web.manifest)],
      actual,
      sandboxes: [readySandbox(web.manifest)],
      node: NODE,
      allowRemovals: true,
      now: 0,
      unhealthy: new Map([[sick.id, 'failed 3 times: exit 1']]),
    });
    expect(allActions(p)).toEqual([
      {
        type: 'kill',
        podId: 'web',
        container: 'nginx',
        reason: 'unhealthy',
        id: sick.id,
        graceSeconds: 7,
        detail: 'failed 3 times: exit 1',
      },
    ]);
    expect(reportPlan(p).steps).toEqual([{ podId: 'web', container: 'nginx', action: 'stop', reason: 'unhealthy', id: sick.id }]);
  });

  it('ignores a liveness result for a container that no longer runs, or that is not a desired one', () => {
    const web = manifest('web', 'nginx:nginx');
    // A second crash in a row, so it waits out its back-off rather than being replaced at once.
    const spec = specOf(web, 'nginx');
    const exited = running(spec, { labels: { ...spec.labels, [Labels.crashStreak]: '1' }, state: 'exited', exitCode: 137, finishedAt: 0 });
    const foreign = running(specOf(web, 'nginx', 'other-node'));
    const unhealthy = new Map([
      [exited.id, 'x'],
      [foreign.id, 'y'],
      ['gone', 'z'],
    ]);
    const p = plan({
      desired: [desired(web)],
      actual: [exited, foreign],
      sandboxes: [readySandbox(web)],
      node: NODE,
      allowRemovals: true,
      now: 0,
      unhealthy,
    });
    expect(allActions(p).map((a) => a.type)).toEqual([]);
    expect(p.backOffs).toHaveLength(1);
  });

  it('plans a big pod in time linear in its containers (it was quadratic)', () => {
    const pod = (first: string) =>
      validateManifest({
        id: 'big',
        containers: Array.from({ length: 250 }, (_, i) => ({ name: `c${i}`, image: i === 0 ? first : 'busybox' })),
      });
    const big = pod('busybox');
    const before = pod('busybox:old');
    if (!big.ok || !before.ok) throw new Error('invalid');
    // Count every look at a container's name label: the work the planner does per container.
    let looks = 0;
    const counted = (c: ContainerSummary): ContainerSummary => ({
      ...c,
      labels: new Proxy(c.labels, {
        get: (target, key) => {
          if (key === Labels.containerName) looks += 1;
          return Reflect.get(target, key);
        },
      }),
    });
    const actual = inSync(big.manifest).map(counted);
    // One container runs an older spec, so the pod is planned beyond the steady state.
    actual[0] = counted(running(specOf(before.manifest, 'c0')));
    const p = plan({
      desired: [desired(big.manifest)],
      actual,
      sandboxes: [readySandbox(big.manifest)],
      node: NODE,
      allowRemovals: true,
      now: 0,
    });
    expect(allActions(p).map((a) => a.type)).toEqual(['remove', 'create']);
    expect(looks).toBeLessThanOrEqual(4 * 250);
  });
});
