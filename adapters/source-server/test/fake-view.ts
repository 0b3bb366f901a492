import type { AgentView, ContainerDetails, HealthView, PlanReport, PodView } from '@kubelet-ts/core';

/** A stand-in agent: one managed container `web-1`, and a health that tests can flip. */
export class FakeView implements AgentView {
  health_: HealthView = { healthy: true, message: 'ok' };
  async pods(): Promise<PodView[]> {
    return [{ id: 'web', source: 'server', containers: [{ name: 'nginx', image: 'nginx', state: 'running', id: 'abc', restartCount: 0 }] }];
  }
  async containerInfo(name: string): Promise<ContainerDetails | undefined> {
    if (name !== 'web-1') return undefined;
    return { raw: { Id: 'abc', Name: '/web-1' } } as unknown as ContainerDetails;
  }
  health(): HealthView {
    return this.health_;
  }
  async plan(): Promise<PlanReport> {
    return { inSync: false, steps: [{ podId: 'web', container: 'nginx', action: 'create', reason: 'new', image: 'nginx' }], held: 0, backOffs: [], unseenSources: [] };
  }
  async metrics() {
    return { contentType: 'text/plain; version=0.0.4; charset=utf-8', body: 'kubelet_ts_desired_pods 1\n' };
  }
}
