import { checkedManifest } from '@kubelet-ts/conformance';
import {
  KubeletError,
  type AgentView,
  type ContainerDetails,
  type ContainerStats,
  type HealthView,
  type PlanReport,
  type PodListing,
  type PodView,
} from '@kubelet-ts/core';

/** A stand-in agent: one managed container `web-1`, and a health that tests can flip. */
export class FakeView implements AgentView {
  health_: HealthView = { healthy: true, message: 'ok' };
  async pods(): Promise<PodView[]> {
    return [
      {
        id: 'web',
        source: 'server',
        containers: [
          { name: 'nginx', image: 'nginx', state: 'running', id: 'abc', startedAt: 1_000, restartCount: 0, started: true, ready: true },
        ],
      },
    ];
  }
  /** `pods()` with their manifest, as the agent gives them, so that a `pods` that throws makes `/pods` fail too. */
  async podListing(): Promise<PodListing> {
    const manifest = checkedManifest({ version: 'v1beta1', id: 'web', containers: [{ name: 'nginx', image: 'nginx' }] });
    return { pods: (await this.pods()).map((view) => ({ view, manifest })), nodeName: 'node-1', runtime: 'fake', hostIP: '192.0.2.7' };
  }
  async containerInfo(name: string): Promise<ContainerDetails | undefined> {
    if (name !== 'web-1') return undefined;
    return { raw: { Id: 'abc', Name: '/web-1' } } as unknown as ContainerDetails;
  }
  /** False: the runtime gives no figures (501). */
  hasStats = true;
  async stats(name: string): Promise<ContainerStats | undefined> {
    if (!this.hasStats) throw new KubeletError('Unsupported', 'the fake runtime gives no container figures');
    if (name !== 'web-1' && name !== 'web/nginx') return undefined;
    return { timestamp: 1_000, cpu: { usageNanoseconds: 5_000_000 }, memory: { usageBytes: 1024, limitBytes: 4096 } };
  }
  health(): HealthView {
    return this.health_;
  }
  async plan(): Promise<PlanReport> {
    return {
      inSync: false,
      steps: [{ podId: 'web', container: 'nginx', action: 'create', reason: 'new', image: 'nginx' }],
      held: 0,
      backOffs: [],
      unseenSources: [],
    };
  }
  async metrics() {
    return { contentType: 'text/plain; version=0.0.4; charset=utf-8', body: 'kubelet_ts_desired_pods 1\n' };
  }
}
