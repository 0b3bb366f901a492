import { buildContainerSpec, buildSandboxSpec } from '@kubelet-ts/core';
import { StaticManifestSource } from '@kubelet-ts/manifest';
import { createKubelet } from '@kubelet-ts/runner';
import { MemoryRuntime } from '@kubelet-ts/runtime-memory';
import { manifest } from './fixtures.js';

// Three readings, each after a full GC: Node alone; Node plus an in-memory "engine" already
// running the 10,000 pods (a sandbox and 2 containers each); and that plus the agent holding the
// 10,000 manifests (adopting the pods, as after a restart). The agent's share is the difference of
// the last two.
const pods = Number(process.argv[2] ?? 10_000);
const gc = (globalThis as { gc?: () => void }).gc ?? (() => undefined);
const rss = () => {
  gc();
  gc();
  return process.memoryUsage().rss;
};
const node = rss();
const runtime = new MemoryRuntime({ images: ['app:1'], callLogSize: 100 });
for (let i = 0; i < pods; i++) {
  const m = manifest(`pod-${i}`, 'app:1', 2);
  const sandbox = await runtime.runSandbox(buildSandboxSpec(m, { node: 'bench', source: 'bench' }));
  for (const c of m.containers) {
    const created = await runtime.create(buildContainerSpec(m, c, { node: 'bench', source: 'bench' }), sandbox.id);
    await runtime.start(created.id);
  }
}
const engine = rss();
// The agent's own copy of the manifests, as a source would have parsed them.
const source = new StaticManifestSource(
  'bench',
  Array.from({ length: pods }, (_, i) => manifest(`pod-${i}`, 'app:1', 2)),
);
const kubelet = createKubelet({ runtime, sources: [source], hostname: 'bench', syncFrequencyMs: 3_600_000 });
await kubelet.start();
const result = await kubelet.sync();
if (result.actions !== 0) throw new Error(`the agent should adopt everything, but acted: ${JSON.stringify(result)}`);
await kubelet.sync();
const agent = rss();
await kubelet.close();
process.send?.([node, engine, agent], () => process.exit(0));
