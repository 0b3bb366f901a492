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

  it('labels the sandbox and each container with the kubelet’s pod uid, namespace and name', () => {
    const m = web(8080, { id: 'a.b', namespace: 'b', uuid: '6f1c1b0e-2d6a-4c0e-9a59-6a8e6f3f1a11' });
    const p = run({ desired: [desired(m)] });
    const identity = {
      'io.kubernetes.pod.uid': '6f1c1b0e-2d6a-4c0e-9a59-6a8e6f3f1a11',
      'io.kubernetes.pod.namespace': 'b',
      'io.kubernetes.pod.name': 'a',
    };
    for (const action of p.pods[0]!.actions)
      if (action.type === 'run-sandbox' || action.type === 'create') expect(action.spec.labels).toMatchObject(identity);
    // Without a uuid, the derived uid (the same for the same node, source and id), in namespace default.
    const derived = buildSandboxSpec(web(), { node: NODE, source: 'file' }).labels;
    expect(derived).toMatchObject({ 'io.kubernetes.pod.namespace': 'default', 'io.kubernetes.pod.name': 'web' });
    expect(derived['io.kubernetes.pod.uid']).toMatch(/^[0-9a-f]{32}$/);
  });

  it('replaces a pod made again under its name (a new uid): the old containers stop with their own grace, its sandbox and volumes go, the new pod starts afresh', () => {
    const old = web(8080, { uuid: 'uid-1', terminationGracePeriodSeconds: 7 });
    const s = sandbox(old);
    const app = container(old, 'app', 'running', { [Labels.restartCount]: '4' });
    const side = container(old, 'side');
    const now = web(8080, { uuid: 'uid-2' });
    const p = run({ desired: [desired(now)], actual: [app, side], sandboxes: [s] });
    expect(steps(p)).toEqual([
      ['remove', 'app', 'pod-replaced'],
      ['remove', 'side', 'pod-replaced'],
      ['remove-sandbox', 'POD', 'pod-replaced'],
      ['run-sandbox', 'POD', 'new'],
      ['create', 'app', 'new'],
      ['create', 'side', 'new'],
    ]);
    const actions = p.pods[0]!.actions;
    expect(actions[0]).toMatchObject({ id: app.id, graceSeconds: 7, running: true });
    expect(actions[2]).toMatchObject({ id: s.id, volumes: true });
    // A new pod: no restart count carried over, its own uid on everything.
    const created = actions[4]!;
    expect(created.type === 'create' && created.spec.labels[Labels.restartCount]).toBeUndefined();
    expect(created.type === 'create' && created.spec.labels[Labels.podUid]).toBe('uid-2');
    // Once replaced, the new pod is steady.
    const fresh = [container(now, 'app'), container(now, 'side')];
    expect(run({ desired: [desired(now)], actual: fresh, sandboxes: [sandbox(now)] }).pods).toEqual([]);
  });

  it('replaces a pod whose old one ended for good, instead of keeping it for inspection', () => {
    const old = web(8080, { uuid: 'uid-1', restartPolicy: 'Never' });
    const ended = [container(old, 'app', 'exited'), container(old, 'side', 'exited')];
    const p = run({
      desired: [desired(web(8080, { uuid: 'uid-2', restartPolicy: 'Never' }))],
      actual: ended,
      sandboxes: [sandbox(old, 'notready')],
    });
    expect(steps(p).map(([type, , reason]) => `${type}:${reason}`)).toEqual([
      'remove:pod-replaced',
      'remove:pod-replaced',
      'remove-sandbox:pod-replaced',
      'run-sandbox:new',
      'create:new',
      'create:new',
    ]);
  });

  it('adopts what an earlier release made (no uid label) without a restart, and compares no derived uid', () => {
    const m = web(8080, { uuid: 'uid-1' });
    const strip = <T extends { labels: Readonly<Record<string, string>> }>(x: T): T => ({
      ...x,
      labels: Object.fromEntries(Object.entries(x.labels).filter(([k]) => !k.startsWith('io.kubernetes.'))),
    });
    const before = [strip(container(m, 'app')), strip(container(m, 'side'))];
    expect(run({ desired: [desired(m)], actual: before, sandboxes: [strip(sandbox(m))] }).pods).toEqual([]);
    // A manifest without a uuid: its uid is derived, so a container's uid label is not compared.
    const plain = web();
    const other = { [Labels.podUid]: 'made-with-another-uid' };
    const kept = [container(plain, 'app', 'running', other), container(plain, 'side', 'running', other)];
    expect(run({ desired: [desired(plain)], actual: kept, sandboxes: [sandbox(plain)] }).pods).toEqual([]);
  });

  it('remembers a finished pod, and never runs it again, even when a container of it has gone; a changed manifest runs', () => {
    const job = web(8080, { restartPolicy: 'Never' });
    const s = sandbox(job);
    const ended = [container(job, 'app', 'exited'), container(job, 'side', 'exited')];
    const p = run({ desired: [desired(job)], actual: ended, sandboxes: [s] });
    expect(p.pods).toEqual([]);
    expect(p.finished).toEqual([job]);
    // A container removed by hand: without the memory it is made again, with it nothing runs.
    const [kept] = ended;
    expect(steps(run({ desired: [desired(job)], actual: [kept!], sandboxes: [s] }))).toEqual([['create', 'side', 'new']]);
    const remembered = run({ desired: [desired(job)], actual: [kept!], sandboxes: [s], finished: new Set([job]) });
    expect(remembered.pods).toEqual([]);
    expect(remembered.finished).toEqual([job]);
    // A pod under Always never finishes; a changed manifest (another object) is planned as ever.
    expect(run({ desired: [desired(web())], actual: [], sandboxes: [] }).finished).toEqual([]);
    const edited = web(8080, {
      restartPolicy: 'Never',
      containers: [
        { name: 'app', image: 'app:2' },
        { name: 'side', image: 'side:1' },
      ],
    });
    expect(steps(run({ desired: [desired(edited)], actual: ended, sandboxes: [s], finished: new Set([job]) })).map(([t]) => t)).toContain(
      'create',
    );
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

describe('a pod’s hostname', () => {
  const sandbox = (raw: Record<string, unknown>) => {
    const r = validateManifest({ containers: [{ name: 'a', image: 'b' }], ...raw });
    if (!r.ok) throw new Error(formatFieldErrors(r.errors));
    return buildSandboxSpec(r.manifest, { node: 'n', source: 's' });
  };
  it('is its name, as the kubelet names the host: a v1 Pod’s id holds its namespace, the hostname does not', () => {
    expect(sandbox({ id: 'web.team', namespace: 'team' }).hostname).toBe('web');
    expect(sandbox({ id: 'web' }).hostname).toBe('web');
    expect(sandbox({ id: 'web.team', namespace: 'team', hostname: 'named' }).hostname).toBe('named');
  });
  it('is cut to 63 characters without a trailing dot or dash', () => {
    expect(sandbox({ id: `${'a'.repeat(62)}-b.team`, namespace: 'team' }).hostname).toBe('a'.repeat(62));
  });
});
