import { StaticManifestSource } from '@kubelet-ts/manifest';
import { createKubelet } from '@kubelet-ts/runner';
import { MemoryRuntime } from '@kubelet-ts/runtime-memory';
import { ServerManifestSource, agentApiHandler } from '@kubelet-ts/source-server';
import { manifest } from './fixtures.js';

// The agent of the operator rows (operator.ts), in a process of its own so that its RSS is the
// agent's alone and the CLI reads it as it reads a real one: the in-memory runtime running `pods`
// pods from a static source, and its real server. Told `{ pods }` as JSON in argv; says `{ url }`
// once the pods run. Answers `sync` with `{ synced }` (after a pass), `calls` with `{ calls }` (the
// runtime calls made so far), `memory` with `{ memory }`; on `stop` (or when the parent goes away)
// closes and exits.
const { pods } = JSON.parse(process.argv[2] ?? '{}') as { pods: number };
const runtime = new MemoryRuntime();
const server = new ServerManifestSource({ port: 0 });
const kubelet = createKubelet({
  runtime,
  sources: [
    new StaticManifestSource(
      'bench',
      Array.from({ length: pods }, (_, i) => manifest(`op-${i}`, 'busybox:1.36')),
    ),
    server,
  ],
  hostname: 'bench-operator',
  syncFrequencyMs: 3_600_000,
  housekeeping: { intervalMs: 0 },
});
server.mount(agentApiHandler(kubelet));

let stopping: Promise<void> | undefined;
const stop = () =>
  (stopping ??= (async () => {
    try {
      await kubelet.close();
    } finally {
      await server.close();
    }
  })());

process.on('message', (message) => {
  if (message === 'sync') return void kubelet.sync().then(() => process.send?.({ synced: true }));
  if (message === 'calls') return void process.send?.({ calls: runtime.callCount() });
  if (message === 'memory') return void process.send?.({ memory: process.memoryUsage() });
  if (message !== 'stop') return;
  stop().then(
    () => process.send?.('stopped', () => process.exit(0)),
    (error: unknown) => {
      process.stderr.write(`bench: the operator agent did not stop cleanly: ${String(error)}\n`);
      process.exit(1);
    },
  );
});
process.on('disconnect', () => {
  stop().finally(() => process.exit(1));
});

try {
  await kubelet.start();
  await kubelet.sync();
  process.send?.({ url: server.url });
} catch (error) {
  process.stderr.write(`bench: the operator agent did not start: ${String(error)}\n`);
  await stop().catch(() => undefined);
  process.exit(1);
}
