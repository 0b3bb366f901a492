import { execFile } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { independentDocker, startControlPlane, type StartedControlPlane, TESTKIT_LABEL } from '../src/index.js';

/** kubectl, a client that is not ours; resolves with its output or rejects with its stderr. */
function kubectl(kubeconfig: string, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('kubectl', ['--kubeconfig', kubeconfig, ...args], { timeout: 30_000 }, (error, stdout, stderr) => {
      if ((error as NodeJS.ErrnoException | null)?.code === 'ENOENT')
        return reject(new Error('kubectl is not on PATH: apt-get install -y kubernetes-client (npm test installs it)'));
      if (error !== null) return reject(new Error(`kubectl ${args.join(' ')}: ${stderr}`));
      resolve(stdout);
    });
  });
}

/** The metrics-server containers of the testkit that exist, running or not. */
async function metricsServerContainers(): Promise<string[]> {
  const all = await independentDocker().listContainers({
    all: true,
    filters: { label: [`${TESTKIT_LABEL}=metrics-server`] },
  });
  return all.map((c) => c.Id);
}

async function apiServiceExists(kubeconfig: string): Promise<boolean> {
  return kubectl(kubeconfig, ['get', 'apiservice', 'v1beta1.metrics.k8s.io', '-o', 'name']).then(
    () => true,
    (error: Error) => {
      if (/NotFound|not found/.test(error.message)) return false;
      throw error;
    },
  );
}

describe('StartedControlPlane.startMetricsServer', () => {
  let cluster: StartedControlPlane;

  beforeAll(async () => {
    cluster = await startControlPlane();
  }, 180_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  it('registers metrics.k8s.io, Available, answering kubectl with an empty NodeMetricsList; stop() removes it', async () => {
    const before = await metricsServerContainers();
    const at = Date.now();
    const metrics = await cluster.startMetricsServer();
    const took = Date.now() - at;
    process.stderr.write(`metrics-server: APIService Available ${took} ms after startMetricsServer()\n`);
    try {
      expect(metrics.release).toBe('v0.8.0');
      expect(metrics.address).not.toMatch(/^127\./);
      expect(await metricsServerContainers()).toHaveLength(before.length + 1);

      const apiService = JSON.parse(
        await kubectl(cluster.kubeconfigPath, ['get', 'apiservice', 'v1beta1.metrics.k8s.io', '-o', 'json']),
      ) as {
        spec: { insecureSkipTLSVerify: boolean; groupPriorityMinimum: number; versionPriority: number };
        status: { conditions: Array<{ type: string; status: string }> };
      };
      expect(apiService.status.conditions).toContainEqual(expect.objectContaining({ type: 'Available', status: 'True' }));
      expect(apiService.spec).toMatchObject({ insecureSkipTLSVerify: true, groupPriorityMinimum: 100, versionPriority: 100 });

      // Through the API server's aggregator to metrics-server, authenticated by the front proxy:
      // no node here, so no item, but the list is metrics-server's.
      const nodes = JSON.parse(await kubectl(cluster.kubeconfigPath, ['get', '--raw', '/apis/metrics.k8s.io/v1beta1/nodes'])) as {
        kind: string;
        apiVersion: string;
        items: unknown[];
      };
      expect(nodes).toMatchObject({ kind: 'NodeMetricsList', apiVersion: 'metrics.k8s.io/v1beta1', items: [] });
      const pods = JSON.parse(await kubectl(cluster.kubeconfigPath, ['get', '--raw', '/apis/metrics.k8s.io/v1beta1/pods'])) as {
        kind: string;
        items: unknown[];
      };
      expect(pods).toMatchObject({ kind: 'PodMetricsList', items: [] });
      expect(await metrics.logs()).toMatch(/Serving securely on/);
    } finally {
      await metrics.stop();
    }
    expect(await metricsServerContainers()).toEqual(before);
    expect(await apiServiceExists(cluster.kubeconfigPath)).toBe(false);
    // Stopped twice: nothing more to do, no error.
    await metrics.stop();
  }, 120_000);

  it('rejects with its own words when metrics-server refuses its flags, and leaves no container', async () => {
    const before = await metricsServerContainers();
    // Below the smallest resolution v0.8.0 accepts: it exits at once.
    await expect(cluster.startMetricsServer({ flags: ['--metric-resolution=5s'] })).rejects.toThrow(
      /metrics-server did not start[\s\S]*metric-resolution should be a time duration at least 10s/,
    );
    expect(await metricsServerContainers()).toEqual(before);
  }, 120_000);

  it('rejects with the APIService condition and its last lines when it never becomes Available, and cleans up', async () => {
    const before = await metricsServerContainers();
    // It serves on another port than its Endpoints name: the aggregator's discovery check fails.
    const error = await cluster.startMetricsServer({ flags: ['--secure-port=10251'], availableTimeoutMs: 10_000 }).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(error?.message).toMatch(/did not become Available within 10 s/);
    expect(error?.message).toMatch(/FailedDiscoveryCheck|connection refused/);
    expect(error?.message).toMatch(/last lines:[\s\S]*Serving securely on \S*:10251/);
    expect(await metricsServerContainers()).toEqual(before);
    expect(await apiServiceExists(cluster.kubeconfigPath)).toBe(false);
    // And a good one starts after the failures.
    const metrics = await cluster.startMetricsServer();
    await metrics.stop();
  }, 120_000);

  it('allows one metrics-server at a time, and the control plane stop() removes one still running', async () => {
    const before = await metricsServerContainers();
    const other = await startControlPlane();
    try {
      await other.startMetricsServer();
      await expect(other.startMetricsServer()).rejects.toThrow(/already started/);
      expect(await metricsServerContainers()).toHaveLength(before.length + 1);
    } finally {
      await other.stop();
    }
    expect(await metricsServerContainers()).toEqual(before);
  }, 180_000);
});
