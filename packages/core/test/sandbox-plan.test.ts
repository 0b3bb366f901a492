import { describe, expect, it } from '@jest/globals';
import { formatFieldErrors } from '../src/errors.js';
import type { ContainerManifest, DesiredPod } from '../src/manifest.js';
import { Labels } from '../src/naming.js';
import { reportPlan } from '../src/plan-report.js';
import { plan, type Plan, type PlanAction, type PlanInput } from '../src/planner.js';
import type { ContainerSummary } from '../src/runtime.js';
import { buildSandboxSpec, type SandboxSummary } from '../src/sandbox.js';
import { buildContainerSpec } from '../src/spec.js';
import { validateManifest } from '../src/validate.js';

const NODE = 'host-1';

function manifest(raw: Record<string, unknown>): ContainerManifest {
  const result = validateManifest(raw);
  if (!result.ok) throw new Error(formatFieldErrors(result.errors));
  return result.manifest;
}

const web = (hostPort = 8080, extra: Record<string, unknown> = {}) =>
  manifest({
    id: 'web',
    containers: [
      { name: 'app', image: 'app:1', ports: [{ containerPort: 80, hostPort }] },
      { name: 'side', image: 'side:1' },
    ],
    ...extra,
  });
const desired = (m: ContainerManifest): DesiredPod => ({ manifest: m, source: 'file' });

let next = 0;
function sandbox(m: ContainerManifest, state: SandboxSummary['state'] = 'ready', node = NODE): SandboxSummary {
  const spec = buildSandboxSpec(m, { node, source: 'file' });
  next += 1;
  return { id: `s${next}`, name: spec.name, labels: spec.labels, state, createdAt: next };
}
function container(
  m: ContainerManifest,
  name: string,
  state: ContainerSummary['state'] = 'running',
  labels: Record<string, string> = {},
): ContainerSummary {
  const spec = buildContainerSpec(m, m.containers.find((c) => c.name === name)!, { node: NODE, source: 'file' });
  next += 1;
  return {
    id: `c${next}`,
    name: spec.name,
    image: spec.image,
    labels: { ...spec.labels, ...labels },
    state,
    createdAt: next,
    startedAt: next,
    ...(state === 'exited' ? { finishedAt: next, exitCode: 0 } : {}),
  };
}
const run = (input: Partial<PlanInput>): Plan =>
  plan({ desired: [], actual: [], sandboxes: [], node: NODE, allowRemovals: true, now: 1_000_000, ...input });
const steps = (p: Plan) => p.pods.flatMap((x) => x.actions).map((a: PlanAction) => [a.type, a.container, a.reason]);

describe('planning pod sandboxes', () => {
  it('runs the sandbox of a new pod first, and its containers go into it', () => {
    const p = run({ desired: [desired(web())] });
    expect(steps(p)).toEqual([
      ['run-sandbox', 'POD', 'new'],
      ['create', 'app', 'new'],
      ['create', 'side', 'new'],
    ]);
    const first = p.pods[0]!.actions[0]!;
    expect(first.type === 'run-sandbox' && first.spec).toMatchObject({
      podId: 'web',
      hostname: 'web',
      ports: [{ containerPort: 80, hostPort: 8080, protocol: 'TCP' }],
    });
    expect(reportPlan(p).steps[0]).toMatchObject({ podId: 'web', container: 'POD', action: 'run-sandbox', reason: 'new' });
  });

  it('creates a missing container in the ready sandbox, and does nothing when all is there', () => {
    const m = web();
    const s = sandbox(m);
    const app = container(m, 'app');
    const p = run({ desired: [desired(m)], actual: [app], sandboxes: [s] });
    expect(p.pods[0]!.actions).toEqual([expect.objectContaining({ type: 'create', container: 'side', sandbox: s.id })]);
    expect(run({ desired: [desired(m)], actual: [app, container(m, 'side')], sandboxes: [s] }).pods).toEqual([]);
  });

  it('replaces a dead sandbox with the pod: containers out, old sandbox out (volumes kept), new sandbox, containers anew', () => {
    const m = web();
    const dead = sandbox(m, 'notready');
    const app = container(m, 'app', 'exited', { [Labels.restartCount]: '2' });
    const p = run({ desired: [desired(m)], actual: [app], sandboxes: [dead] });
    expect(steps(p)).toEqual([
      ['remove', 'app', 'sandbox-changed'],
      ['remove-sandbox', 'POD', 'sandbox-changed'],
      ['run-sandbox', 'POD', 'sandbox-changed'],
      ['create', 'app', 'sandbox-changed'],
      ['create', 'side', 'new'],
    ]);
    const actions = p.pods[0]!.actions;
    expect(actions[1]).toMatchObject({ id: dead.id, volumes: false });
    // The restart count goes on in the new namespace.
    expect(actions[3]!.type === 'create' && actions[3]!.spec.labels[Labels.restartCount]).toBe('3');
  });

  it('replaces the sandbox when the pod’s ports change', () => {
    const before = web(8080);
    const s = sandbox(before);
    const p = run({ desired: [desired(web(9090))], actual: [container(before, 'app'), container(before, 'side')], sandboxes: [s] });
    expect(steps(p).map(([type]) => type)).toEqual(['remove', 'remove', 'remove-sandbox', 'run-sandbox', 'create', 'create']);
  });

  it('removes a gone pod’s containers, then its sandbox with the volumes; a sandbox left without containers too', () => {
    const m = web();
    const orphan = manifest({ id: 'orphan', containers: [{ name: 'x', image: 'x:1' }] });
    const p = run({ actual: [container(m, 'app')], sandboxes: [sandbox(m), sandbox(orphan)] });
    expect(steps(p)).toEqual([
      ['remove', 'app', 'not-desired'],
      ['remove-sandbox', 'POD', 'not-desired'],
      ['remove-sandbox', 'POD', 'not-desired'],
    ]);
    expect(
      p.pods
        .flatMap((x) => x.actions)
        .filter((a) => a.type === 'remove-sandbox')
        .every((a) => a.type === 'remove-sandbox' && a.volumes),
    ).toBe(true);
    // Until every source has been seen, all of that is held.
    expect(run({ actual: [container(m, 'app')], sandboxes: [sandbox(m), sandbox(orphan)], allowRemovals: false })).toMatchObject({
      pods: [],
      held: 3,
    });
  });

  it('never uses or removes a sandbox it did not make: another name, another hash form, another node', () => {
    const m = web();
    const mine = sandbox(m);
    const foreign: SandboxSummary[] = [
      { ...sandbox(m), name: 'evil-holder' },
      { ...sandbox(m), labels: { ...mine.labels, [Labels.sandboxHash]: 'garbage' } },
      sandbox(m, 'ready', 'node-b'),
      { ...sandbox(manifest({ id: 'gone', containers: [{ name: 'x', image: 'x:1' }] })), name: 'POD--other--0badf00d' },
    ];
    const p = run({ desired: [desired(m)], sandboxes: [...foreign, mine] });
    const actions = p.pods.flatMap((x) => x.actions);
    expect(actions.map((a) => a.type)).toEqual(['create', 'create']);
    expect(actions.every((a) => a.type === 'create' && a.sandbox === mine.id)).toBe(true);
  });

  it('makes no new sandbox for a pod whose containers all ended for good, and keeps them', () => {
    const m = web(8080, { restartPolicy: 'Never' });
    const p = run({
      desired: [desired(m)],
      actual: [container(m, 'app', 'exited'), container(m, 'side', 'exited')],
      sandboxes: [sandbox(m, 'notready')],
    });
    expect(p.pods).toEqual([]);
  });
});
