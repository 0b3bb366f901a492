import { StaticManifestSource, createKubelet } from '@kubelet-ts/runner';
import { MemoryRuntime } from '@kubelet-ts/runtime-memory';
import { manifest } from './fixtures.js';

const pods = Number(process.argv[2] ?? 10_000);
const gc = (globalThis as { gc?: () => void }).gc ?? (() => undefined);
gc();
const baseline = process.memoryUsage().rss;
const runtime = new MemoryRuntime({ pullable: 'any' });
const source = new StaticManifestSource('bench', Array.from({ length: pods }, (_, i) => manifest(`pod-${i}`, 'app:1', 2)));
const kubelet = createKubelet({ runtime, sources: [source], hostname: 'bench', syncFrequencyMs: 3_600_000 });
await kubelet.start();
await kubelet.sync();
await kubelet.sync();
gc();
const loaded = process.memoryUsage().rss;
await kubelet.close();
process.send?.([baseline, loaded], () => process.exit(0));
