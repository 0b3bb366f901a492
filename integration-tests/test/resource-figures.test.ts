import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PrometheusServer } from '@kubelet-ts/testkit';
import { AgentProcess } from './agent-process.js';
import { AGENT_ENGINES } from './agent-engines.js';

const MIB = 1024 * 1024;
/** One container burns a core, one holds 40 MiB (dd's buffer behind a pipe nobody reads). */
const BURN = 'trap "exit 0" TERM; while :; do :; done';
const HOLD = 'dd if=/dev/zero bs=40M count=1 2>/dev/null | sleep 3600';

/** One sample line of a Prometheus text exposition. */
interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
  readonly timestamp?: number;
}

function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)(?: (\d+))?$/.exec(line);
    if (m === null) throw new Error(`not an exposition line: ${JSON.stringify(line)}`);
    const labels = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1]!, l[2]!]));
    samples.push({ name: m[1]!, labels, value: Number(m[3]), ...(m[4] === undefined ? {} : { timestamp: Number(m[4]) }) });
  }
  return samples;
}

/**
 * What metrics-server asks of every scrape of `/metrics/resource` (its decode.go): each sample
 * stamped with a time; no running container, pod or node with zero CPU or memory (it drops them).
 */
function metricsServerProblems(samples: readonly Sample[]): string[] {
  const problems: string[] = [];
  for (const s of samples) {
    if (s.name === 'resource_scrape_error') {
      if (s.value !== 0) problems.push('resource_scrape_error is 1');
      continue;
    }
    if (s.timestamp === undefined) problems.push(`${s.name}${JSON.stringify(s.labels)} has no timestamp`);
    if (/(cpu_usage_seconds_total|memory_working_set_bytes)$/.test(s.name) && !(s.value > 0))
      problems.push(`${s.name}${JSON.stringify(s.labels)} is ${s.value}`);
  }
  return problems;
}

describe.each(AGENT_ENGINES)(
  'resource figures on $name: /metrics/resource, /stats/summary, scraped by a real Prometheus (issue 24)',
  (engine) => {
    const node = `e2e-figures-${engine.name.split(' ')[0]!.toLowerCase()}-${process.pid}`;
    let dir: string;
    let agent: AgentProcess | undefined;
    let url: string;
    let prometheus: PrometheusServer | undefined;

    beforeAll(async () => {
      const { flags, busybox } = await engine.prepare();
      dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-e2e-figures-'));
      await writeFile(
        join(dir, 'busy.yaml'),
        JSON.stringify({
          version: 'v1beta1',
          id: 'busy',
          // A pod volume with 1 MiB in it, for the Summary's volume[].
          volumes: [{ name: 'scratch' }],
          containers: [
            { name: 'burn', image: busybox, command: ['sh', '-c', BURN] },
            {
              name: 'hold',
              image: busybox,
              command: ['sh', '-c', `dd if=/dev/zero of=/scratch/fill bs=1M count=1 2>/dev/null; ${HOLD}`],
              volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }],
            },
          ],
        }),
      );
      agent = new AgentProcess([
        ...flags,
        '--config',
        dir,
        '--hostname-override',
        node,
        '--sync-frequency',
        '1s',
        '--housekeeping-interval',
        '1s',
        '--volume-stats-agg-period',
        '1s',
      ]);
      url = await agent.serverUrl();
      await agent.until(() => agent!.events('ContainerStarted', 'busy').length === 2, 'both containers started', 60_000);
    }, 120_000);

    afterAll(async () => {
      await prometheus?.stop();
      await agent?.stop();
      await engine.cleanUp(node);
      await rm(dir, { recursive: true, force: true });
    });

    /** The Summary once the pod has a CPU rate (two samples), its dd buffer is counted and its volume walked with its file. */
    const settledSummary = async () => {
      const deadline = Date.now() + 30_000;
      for (;;) {
        const summary = (await (await fetch(`${url}/stats/summary`)).json()) as {
          node: Record<string, any>;
          pods: Array<Record<string, any>>;
        };
        const busy = summary.pods.find((p) => p.podRef.name === 'busy');
        const hold = busy?.containers.find((c: { name: string }) => c.name === 'hold');
        // The volume walked once its 1 MiB file is there and whole: a walk between dd's create and
        // its write sees the file with no blocks yet (each walk is a second apart, as each sample).
        const walked = busy?.volume?.[0]?.inodesUsed === 2 && busy.volume[0].usedBytes >= MIB;
        if (busy?.cpu.usageNanoCores !== undefined && busy.containers.length === 2 && hold.memory.workingSetBytes >= 40 * MIB && walked)
          return summary;
        if (Date.now() > deadline) throw new Error(`the pod's figures did not settle: ${JSON.stringify(summary)}`);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    };

    it("serves the Summary API: a core burnt, 40 MiB held, the pod's network and the node's figures", async () => {
      const summary = await settledSummary();
      const busy = summary.pods.find((p) => p.podRef.name === 'busy')!;
      expect(busy.podRef).toMatchObject({ namespace: 'default', uid: expect.stringMatching(/^[0-9a-f]{32}$/) });
      const byName = Object.fromEntries(busy.containers.map((c: { name: string }) => [c.name, c])) as Record<string, any>;
      // A loop that never sleeps: between a third of a core and one core on a loaded 2-core machine.
      expect(byName['burn'].cpu.usageNanoCores).toBeGreaterThan(0.3e9);
      expect(byName['burn'].cpu.usageNanoCores).toBeLessThan(1.2e9);
      expect(byName['hold'].memory.workingSetBytes).toBeGreaterThanOrEqual(40 * MIB);
      expect(byName['hold'].memory.workingSetBytes).toBeLessThan(60 * MIB);
      expect(busy.network).toMatchObject({ name: expect.any(String), rxBytes: expect.any(Number), txBytes: expect.any(Number) });
      expect(summary.node).toMatchObject({
        nodeName: node,
        cpu: { usageNanoCores: expect.any(Number), usageCoreNanoSeconds: expect.any(Number) },
        memory: { workingSetBytes: expect.any(Number), availableBytes: expect.any(Number) },
        fs: { capacityBytes: expect.any(Number) },
        rlimit: { maxpid: expect.any(Number), curproc: expect.any(Number) },
      });
      // The pod's own volume, walked as the kubelet's du does: the 1 MiB file and the directory.
      expect(busy.volume).toEqual([expect.objectContaining({ name: 'scratch', inodesUsed: 2 })]);
      expect(busy.volume[0].usedBytes).toBeGreaterThanOrEqual(MIB);
      expect(busy.volume[0].capacityBytes).toBeGreaterThan(busy.volume[0].availableBytes);
      // The engine's image store: its disk by statfs, what the images take as the engine counts them.
      const imageFs = summary.node['runtime'].imageFs;
      expect(imageFs.capacityBytes).toBeGreaterThan(imageFs.availableBytes);
      expect(imageFs.usedBytes).toBeGreaterThan(0);
      expect(imageFs.usedBytes).toBeLessThan(imageFs.capacityBytes);
    });

    it("keeps metrics-server's rules on every scrape: every sample stamped, no zero CPU or memory, no scrape error", async () => {
      await settledSummary();
      for (let scrape = 0; scrape < 5; scrape++) {
        const res = await fetch(`${url}/metrics/resource`);
        expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
        const samples = parseExposition(await res.text());
        expect(metricsServerProblems(samples)).toEqual([]);
        const containers = samples.filter((s) => s.name === 'container_cpu_usage_seconds_total' && s.labels['pod'] === 'busy');
        expect(containers.map((s) => s.labels['container']).sort()).toEqual(['burn', 'hold']);
        expect(samples.some((s) => s.name === 'node_memory_working_set_bytes')).toBe(true);
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
    });

    it('is read by clients that are not ours: kubectl get --raw of the Summary, the events and the sources; promtool of the probe metrics', async () => {
      await settledSummary();
      const outside = (program: string, args: readonly string[], input?: string) =>
        new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
          const child = execFile(
            program,
            [...args],
            { timeout: 30_000, env: { ...process.env, KUBECONFIG: '/dev/null' } },
            (error, stdout, stderr) => resolve({ code: error === null ? 0 : Number(error.code ?? -1), stdout, stderr }),
          );
          if (input !== undefined) child.stdin!.end(input);
        });
      const raw = async (path: string) => {
        const got = await outside('kubectl', ['get', '--raw', path, '--server', url]);
        expect(got).toMatchObject({ code: 0, stderr: '' });
        return JSON.parse(got.stdout) as Record<string, any>;
      };
      const summary = await raw('/stats/summary');
      const busy = summary.pods.find((p: { podRef: { name: string } }) => p.podRef.name === 'busy');
      expect(busy.containers).toHaveLength(2);
      // The fields this agent added last, as kubectl reads them: the image store and the pod's volume.
      expect(summary.node.runtime.imageFs.usedBytes).toBeGreaterThan(0);
      expect(busy.volume).toEqual([expect.objectContaining({ name: 'scratch', usedBytes: expect.any(Number) })]);
      const events = await raw('/events?namespace=default&pod=busy');
      expect(events.kind).toBe('EventList');
      expect(
        events.items.some(
          (e: { reason: string; involvedObject: { name: string } }) => e.reason === 'Started' && e.involvedObject.name === 'busy',
        ),
      ).toBe(true);
      const sources = await raw('/sources');
      // The manifest directory, then the agent's own server (a source too: POST /container).
      expect(sources.items).toEqual([
        expect.objectContaining({ name: 'file', seen: true, manifests: 1 }),
        expect.objectContaining({ name: 'server', seen: true, manifests: 0 }),
      ]);
      const probes = await (await fetch(`${url}/metrics/probes`)).text();
      expect(await outside('promtool', ['check', 'metrics'], probes)).toMatchObject({ code: 0 });
    });

    it("is scraped by Prometheus: the series are there by the kubelet's names, and irate() of the burnt core reads about one", async () => {
      await settledSummary();
      prometheus = await PrometheusServer.start({
        jobs: [{ jobName: 'kubelet-resource', metricsPath: '/metrics/resource', targets: [new URL(url).host] }],
      });
      const query = (promql: string) => prometheus!.query(promql);
      const deadline = Date.now() + 60_000;
      let burnt: Awaited<ReturnType<typeof query>> = [];
      for (;;) {
        // The rate between its last two samples (rate() over a window only partly filled extrapolates).
        burnt = await query('irate(container_cpu_usage_seconds_total{pod="busy",container="burn"}[10s])').catch(() => []);
        if (burnt.length === 1) break;
        if (Date.now() > deadline)
          throw new Error(`Prometheus has no rate of the burnt core after 60 s; its log:\n${await prometheus!.logs()}`);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      expect(Number(burnt[0]!.value[1])).toBeGreaterThan(0.3);
      expect(Number(burnt[0]!.value[1])).toBeLessThan(1.2);
      expect((await query('up{job="kubelet-resource"}')).map((r) => r.value[1])).toEqual(['1']);
      const held = await query('container_memory_working_set_bytes{pod="busy",container="hold",namespace="default"}');
      expect(Number(held[0]!.value[1])).toBeGreaterThanOrEqual(40 * MIB);
      expect((await query('pod_memory_working_set_bytes{pod="busy"}')).length).toBe(1);
      expect((await query('node_cpu_usage_seconds_total')).length).toBe(1);
      expect((await query('resource_scrape_error')).map((r) => r.value[1])).toEqual(['0']);
    }, 90_000);
  },
);
