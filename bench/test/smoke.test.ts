import { afterAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runBench } from '../src/run.js';
import { summarise } from '../src/stats.js';

describe('the benchmark harness (a small run, so it cannot rot)', () => {
  let out: string | undefined;

  afterAll(async () => {
    if (out !== undefined) await rm(out, { recursive: true, force: true });
  });

  it('runs every scenario on a small scale and writes its JSON and Markdown', async () => {
    out = await mkdtemp(join(tmpdir(), 'kubelet-ts-bench-'));
    const rows = await runBench({ quick: true, engine: true, out });
    const scenarios = new Set(rows.map((r) => r.scenario));
    expect([...scenarios].sort()).toEqual([
      '1. start latency',
      '10. container logs',
      '11. exec and port-forward',
      '12. resource figures',
      "13. the operator's command line",
      '14. a node of a cluster (issue 43)',
      '15. streams through the API server (issue 44)',
      '16. the real kubelet beside it (issue 46)',
      '17. hollow nodes (issue 46)',
      '2. throughput',
      '2. throughput under a CPU hog',
      '3. steady state',
      '4. reaction',
      '5. memory',
      '6. fleet',
      '7. steady state on the engine',
      '8. reaction on the engine',
      '9. pace',
      '9. pace under a CPU hog',
    ]);
    // A node of a cluster: the two startup rows beside their baselines, the idle node's CPU and its API requests.
    expect(rows.filter((x) => x.scenario === '14. a node of a cluster (issue 43)').map((x) => x.baseline !== undefined)).toEqual([
      true,
      true,
      false,
      false,
    ]);
    // Streams through the API server: on each Node (declaring ExtendWebSocketsToKubelet, then not), kubectl exec beside
    // the CLI's direct exec, the round trip alone beside the direct one, and port-forward (kubectl's, then the agent's own) beside its ceiling.
    const clusterStreams = rows.filter((x) => x.scenario === '15. streams through the API server (issue 44)');
    expect(clusterStreams.map((x) => [x.unit, x.baseline !== undefined])).toEqual(
      [1, 2].flatMap(() => [
        ['ms', true],
        ['ms', true],
        ['MB/s', true],
        ['MB/s', true],
      ]),
    );
    expect(clusterStreams.map((x) => /\((WebSocket passed through|translated to SPDY\/3\.1)\)/.exec(x.metric)?.[1])).toEqual(
      ['WebSocket passed through', 'translated to SPDY/3.1'].flatMap((how) => [how, how, how, how]),
    );
    // The real kubelet beside it: every row kubelet-ts's with the kubelet's as its baseline, measured on both.
    const sideBySide = rows.filter((x) => x.scenario === '16. the real kubelet beside it (issue 46)');
    expect(sideBySide.map((x) => x.metric.split(':')[0]!.split(' with ')[0])).toEqual([
      'pod startup',
      'pod startup',
      'pod deletion',
      'a crash restarted',
      'kubectl logs -f',
      "the idle node's CPU",
      "the idle node's RSS",
      "the idle node's API requests a minute",
    ]);
    for (const r of sideBySide) expect(r.baseline?.name).toBe('the kubelet, the same way');
    for (const r of sideBySide.filter((x) => x.unit === 'ms')) expect(r.baseline!.value.min).toBeGreaterThan(0);
    // Hollow nodes: every node Ready, the rollout done, the process's RSS and CPU per node.
    expect(rows.filter((x) => x.scenario === '17. hollow nodes (issue 46)').map((x) => x.unit)).toEqual(['s', 's', 'MB', '% of a core']);
    // Reaction: on each engine, the exit and the replacement, each beside its baseline.
    expect(
      rows.filter((x) => x.scenario === '8. reaction on the engine').map((x) => [x.metric.split(':')[0], x.baseline !== undefined]),
    ).toEqual([
      ['Docker', true],
      ['Docker', true],
      ['containerd (CRI)', true],
      ['containerd (CRI)', true],
    ]);
    // A scrape of the figures never calls the engine, nor does get pods.
    for (const r of rows.filter((x) => /^runtime calls made by/.test(x.metric))) expect(r.value.max).toBe(0);
    // The steady state makes two runtime calls per pass (list the containers, list the sandboxes), whatever the size.
    for (const r of rows.filter((x) => x.metric.startsWith('runtime calls per pass'))) expect(r.value.max).toBe(2);
    for (const r of rows.filter((x) => x.baseline !== undefined)) expect(r.ratio).toBeGreaterThan(0);
    // Pace: every run is a row of its own, up and down, on each engine (one run in the quick mode).
    expect(rows.filter((x) => x.scenario === '9. pace').map((x) => x.metric.split(':')[0])).toEqual([
      'Docker',
      'Docker',
      'containerd (CRI)',
      'containerd (CRI)',
    ]);
    // The same beside a CPU hog (issue 27), each run's note saying how the agent's limit moved.
    const hogged = rows.filter((x) => x.scenario === '9. pace under a CPU hog');
    expect(hogged.map((x) => x.metric.split(':')[0])).toEqual(['Docker', 'Docker', 'containerd (CRI)', 'containerd (CRI)']);
    for (const r of hogged.filter((x) => x.metric.includes(' up '))) expect(r.note).toMatch(/CPU hog.*its limit through the run: \d+/);
    // Container logs: on each engine, a whole read beside the engine's own, a follow, and the agent's RSS twice.
    expect(
      rows.filter((x) => x.scenario === '10. container logs' && x.target !== undefined).map((x) => [x.metric.split(':')[0], x.unit]),
    ).toEqual(
      ['Docker', 'containerd (CRI)'].flatMap((engine) => [
        [engine, 'MB/s'],
        [engine, 'ms'],
        [engine, 'MB'],
        [engine, 'MB'],
      ]),
    );
    // Exec and port-forward: on each engine, the exec round trip and both directions of a forward, each beside its baseline.
    expect(
      rows.filter((x) => x.scenario === '11. exec and port-forward' && x.baseline !== undefined).map((x) => x.metric.split(':')[0]),
    ).toEqual(['Docker', 'Docker', 'Docker', 'containerd (CRI)', 'containerd (CRI)', 'containerd (CRI)']);
    // The fleet: etcd serves one watcher per agent, and every agent gets each rollout, through etcd's restarts too.
    expect(rows.find((x) => x.metric.includes("etcd's watchers"))?.value.median).toBe(20);
    const converging = rows.filter((x) => x.scenario === '6. fleet' && x.target?.text.startsWith('every agent converges'));
    expect(converging).toHaveLength(2);
    for (const r of converging) expect({ metric: r.metric, met: r.target?.met }).toEqual({ metric: r.metric, met: true });
    const json = JSON.parse(await readFile(join(out, 'results.json'), 'utf8')) as { rows: unknown[]; machine: { cores: number } };
    expect(json.rows).toHaveLength(rows.length);
    expect(json.machine.cores).toBeGreaterThan(0);
    const md = await readFile(join(out, 'RESULTS.md'), 'utf8');
    expect(md).toContain('| 4. reaction | server POST → pass starts |');
  }, 600_000);

  it('summarises samples into median and p95', () => {
    expect(summarise([5, 1, 3])).toMatchObject({ runs: 3, median: 3, min: 1, max: 5, p95: 5 });
    expect(summarise([1, 2, 3, 4])).toMatchObject({ median: 2.5 });
    expect(summarise(Array.from({ length: 100 }, (_, i) => i + 1)).p95).toBe(95);
  });
});
