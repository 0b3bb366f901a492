import { expect, it } from '@jest/globals';
import type { ManifestSource, SourceSink } from '@kubelet-ts/core';
import { ManualClock, MemoryRuntime } from '@kubelet-ts/runtime-memory';
import { Kubelet } from '../src/kubelet.js';

it('probe', async () => {
  const clock = new ManualClock(1000);
  const runtime = new MemoryRuntime({ clock });
  let sink!: SourceSink;
  const src: ManifestSource = { name: 'a', start: async (s) => { sink = s; }, close: async () => {} };
  const k = new Kubelet({ runtime, sources: [src], clock, hostname: 'node-a' });
  await k.start();
  sink.update([]);
  const r1 = await k.sync();
  let done = false;
  const p = k.sync().then(() => (done = true));
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
  console.log('second sync done?', done, r1);
  await clock.advance(10_000);
  console.log('after advance', done);
  await k.close();
});
