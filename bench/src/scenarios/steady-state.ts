import { identityOf, plan, type ContainerRuntime, type DesiredPod } from '@kubelet-ts/core';
import { StaticManifestSource } from '@kubelet-ts/manifest';
import { createKubelet } from '@kubelet-ts/runner';
import { MemoryRuntime } from '@kubelet-ts/runtime-memory';
import { ms, row, summarise, type Row } from '../stats.js';
import { manifest } from './fixtures.js';

/**
 * The 2014 algorithm, faithfully: for each desired container, list every container and look for
 * it by name; then one more list to find what is no longer desired.
 */
async function pass2014(runtime: ContainerRuntime, desired: readonly DesiredPod[], node: string): Promise<number> {
  let found = 0;
  const wanted = new Set<string>();
  for (const { manifest: m } of desired) {
    for (const c of m.containers) {
      wanted.add(`${m.id}/${c.name}`);
      const all = await runtime.list();
      if (all.some((x) => x.labels['io.kubelet-ts.manifest-id'] === m.id && x.labels['io.kubelet-ts.container-name'] === c.name))
        found += 1;
    }
  }
  for (const c of await runtime.list()) {
    const id = identityOf(c.labels);
    if (id !== undefined && id.node === node && !wanted.has(`${id.podId}/${id.container}`)) found -= 1;
  }
  return found;
}

/** One no-op pass over `pods` manifests × 2 containers on the in-memory runtime, ours against 2014's. */
export async function steadyState(pods: number, runs: number, sampled2014Lists: number): Promise<Row[]> {
  const runtime = new MemoryRuntime({ pullable: 'any' });
  const node = 'bench';
  const manifests = Array.from({ length: pods }, (_, i) => manifest(`pod-${i}`, 'app:1', 2));
  const source = new StaticManifestSource('bench', manifests);
  const kubelet = createKubelet({ runtime, sources: [source], hostname: node, syncFrequencyMs: 3_600_000 });
  await kubelet.start();
  await kubelet.sync(); // create everything
  const times: number[] = [];
  const calls: number[] = [];
  for (let i = 0; i < runs; i++) {
    const before = runtime.callCount();
    const t = process.hrtime.bigint();
    const result = await kubelet.sync();
    times.push(ms(t));
    if (result.actions !== 0) throw new Error(`steady state pass acted: ${JSON.stringify(result)}`);
    calls.push(runtime.callCount() - before);
  }
  await kubelet.close();

  // Planner alone, for the record: the pure function over the same input.
  const [actual, sandboxes] = await Promise.all([runtime.list(), runtime.listSandboxes()]);
  const desired = manifests.map((m) => ({ manifest: m, source: 'bench' }));
  const plannerTimes: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = process.hrtime.bigint();
    plan({ desired, actual, sandboxes, node, allowRemovals: true, now: Date.now() });
    plannerTimes.push(ms(t));
  }

  // The 2014 pass lists once per container: at 10,000 pods that is 20,000 lists of 20,000, so it
  // is timed over a sample of lists and scaled up; at 1,000 it runs whole.
  const containers = pods * 2;
  let time2014: number[];
  let calls2014: number;
  let note: string | undefined;
  if (sampled2014Lists >= containers) {
    time2014 = [];
    for (let i = 0; i < Math.min(runs, 3); i++) {
      const t = process.hrtime.bigint();
      await pass2014(runtime, desired, node);
      time2014.push(ms(t));
    }
    calls2014 = containers + 1;
  } else {
    const t = process.hrtime.bigint();
    for (let i = 0; i < sampled2014Lists; i++) await runtime.list();
    time2014 = [(ms(t) / sampled2014Lists) * (containers + 1)];
    calls2014 = containers + 1;
    note = `2014 time extrapolated from ${sampled2014Lists} timed lists × ${containers + 1}`;
  }
  const label = `${pods.toLocaleString('en')} manifests × 2`;
  return [
    row({
      scenario: '3. steady state',
      metric: `no-op pass, ${label}`,
      unit: 'ms',
      value: summarise(times),
      baseline: { name: '2014 algorithm', value: summarise(time2014) },
      ...(pods >= 10_000 ? { target: { text: '≤ 20 ms', met: summarise(times).median <= 20 } } : {}),
      ...(note === undefined ? {} : { note }),
    }),
    row({
      scenario: '3. steady state',
      metric: `runtime calls per pass, ${label}`,
      unit: 'calls',
      value: summarise(calls),
      baseline: { name: '2014 algorithm', value: summarise([calls2014]) },
      target: { text: 'exactly 2 lists (containers, sandboxes)', met: calls.every((c) => c === 2) },
    }),
    row({ scenario: '3. steady state', metric: `planner alone, ${label}`, unit: 'ms', value: summarise(plannerTimes) }),
  ];
}
