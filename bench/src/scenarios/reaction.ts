import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ContainerSummary, ListOptions, ManifestSource } from '@kubelet-ts/core';
import { createKubelet } from '@kubelet-ts/runner';
import { MemoryRuntime } from '@kubelet-ts/runtime-memory';
import { EtcdManifestSource } from '@kubelet-ts/source-etcd';
import { FileManifestSource } from '@kubelet-ts/source-file';
import { ServerManifestSource } from '@kubelet-ts/source-server';
import { EtcdServer } from '@kubelet-ts/testkit';
import { row, summarise, type Row } from '../stats.js';

/** A memory runtime that tells when a pass starts: every pass begins with exactly one list. */
class ListSpy extends MemoryRuntime {
  private waiting: ((at: bigint) => void) | undefined;
  override async list(options?: ListOptions): Promise<ContainerSummary[]> {
    const at = process.hrtime.bigint();
    this.waiting?.(at);
    this.waiting = undefined;
    return super.list(options);
  }
  nextList(): Promise<bigint> {
    return new Promise((resolve) => (this.waiting = resolve));
  }
}

const body = (i: number) =>
  JSON.stringify({ id: 'reaction', containers: [{ name: 'main', image: 'app:1', env: [{ name: 'N', value: String(i) }] }] });
const pause = (msec: number) => new Promise((r) => setTimeout(r, msec));

/** Change → pass start, `runs` times, for a source and the action that changes it. */
async function measure(source: ManifestSource, change: (i: number) => Promise<void>, runs: number): Promise<number[]> {
  const runtime = new ListSpy({ pullable: 'any' });
  const kubelet = createKubelet({ runtime, sources: [source], hostname: 'bench', syncFrequencyMs: 3_600_000 });
  await kubelet.start();
  await kubelet.sync();
  const samples: number[] = [];
  try {
    for (let i = 1; i <= runs; i++) {
      await pause(200); // let the previous change settle (watch throttles, re-reads)
      const started = runtime.nextList();
      const t0 = process.hrtime.bigint();
      await change(i);
      samples.push(Number((await started) - t0) / 1e6);
    }
  } finally {
    await kubelet.close();
  }
  return samples;
}

export async function reaction(runs: number): Promise<Row[]> {
  const rows: Row[] = [];
  const dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-bench-'));
  try {
    await writeFile(join(dir, 'r.json'), body(0));
    const file = await measure(new FileManifestSource({ path: dir }), (i) => writeFile(join(dir, 'r.json'), body(i)), runs);
    rows.push(
      row({
        scenario: '4. reaction',
        metric: 'file edit → pass starts',
        unit: 'ms',
        value: summarise(file),
        target: { text: '≤ 100 ms', met: summarise(file).median <= 100 },
      }),
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }

  const etcd = await EtcdServer.launch();
  try {
    const key = '/registry/hosts/bench/kubelet';
    const put = async (i: number) => {
      await etcd.gateway('/v3/kv/put', { key: Buffer.from(key).toString('base64'), value: Buffer.from(`[${body(i)}]`).toString('base64') });
    };
    await put(0);
    const samples = await measure(new EtcdManifestSource({ endpoints: [etcd.endpoint], hostname: 'bench' }), put, runs);
    rows.push(
      row({
        scenario: '4. reaction',
        metric: 'etcd put → pass starts',
        unit: 'ms',
        value: summarise(samples),
        target: { text: '≤ 50 ms', met: summarise(samples).median <= 50 },
        note: 'the put is an HTTP call to etcd’s gateway, inside the measured time',
      }),
    );
  } finally {
    await etcd.destroy();
  }

  const server = new ServerManifestSource({ port: 0 });
  const samples = await measure(
    server,
    async (i) => {
      const res = await fetch(`${server.url}/container`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: body(i),
      });
      await res.arrayBuffer();
      // A refused POST starts no pass, and the measurement would wait for one forever.
      if (!res.ok) throw new Error(`POST /container answered ${res.status}`);
    },
    runs,
  );
  rows.push(
    row({
      scenario: '4. reaction',
      metric: 'server POST → pass starts',
      unit: 'ms',
      value: summarise(samples),
      target: { text: '≤ 20 ms', met: summarise(samples).median <= 20 },
    }),
  );
  return rows;
}
