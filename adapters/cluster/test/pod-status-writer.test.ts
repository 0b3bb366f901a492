import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { silentLogger, type PodKey, type PodStatus } from '@kubelet-ts/core';
import { startControlPlane, type StartedControlPlane } from '@kubelet-ts/testkit';
import { CoreV1Api, KubeConfig, PatchStrategy, setHeaderOptions, type V1Pod } from '@kubernetes/client-node';
import { PodStatusWriter, type StatusSource } from '../src/pod-status-writer.js';
import { until } from './until.js';

/**
 * The status `PodStatusWriter` leaves in a real API server is the agent's, not a merge of every
 * status it ever wrote: a condition's reason goes when it turns True, a pod's address is replaced,
 * and what the kubelet does not own (a readiness gate's condition) stays.
 */
describe('the pod status the writer leaves in the API', () => {
  let cluster: StartedControlPlane;
  let core: CoreV1Api;
  const ns = 'status-writer';

  beforeAll(async () => {
    cluster = await startControlPlane();
    const admin = new KubeConfig();
    admin.loadFromString(cluster.kubeconfig);
    core = admin.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: ns } } });
  }, 180_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  /** The agent's side: one pod's status, set by the test, told to the writer as the model tells it. */
  const agentWith = (key: PodKey) => {
    let status: PodStatus | undefined;
    const listeners = new Set<(uids: readonly string[]) => void>();
    const source: StatusSource = {
      podStatuses: async () =>
        status === undefined ? [] : [{ uid: key.uid!, key, podId: `${key.name}.${key.namespace}`, source: 'api', status }],
      watchPodStatuses: (listener) => {
        listeners.add(listener);
        return () => listeners.delete(listener);
      },
      watchEvents: () => () => undefined,
    };
    return {
      source,
      set(next: PodStatus) {
        status = next;
        for (const l of listeners) l([key.uid!]);
      },
    };
  };
  const statusOf = (base: { ready: boolean; ip: string }): PodStatus => ({
    phase: 'Running',
    conditions: [
      { type: 'PodReadyToStartContainers', status: 'True' },
      { type: 'Initialized', status: 'True' },
      base.ready
        ? { type: 'Ready', status: 'True' }
        : { type: 'Ready', status: 'False', reason: 'ContainersNotReady', message: 'containers with unready status: [main]' },
      base.ready
        ? { type: 'ContainersReady', status: 'True' }
        : { type: 'ContainersReady', status: 'False', reason: 'ContainersNotReady', message: 'containers with unready status: [main]' },
      { type: 'PodScheduled', status: 'True' },
    ],
    podIP: base.ip,
    podIPs: [{ ip: base.ip }],
    qosClass: 'BestEffort',
    containerStatuses: [
      {
        name: 'main',
        image: 'busybox',
        imageID: '',
        ready: base.ready,
        restartCount: 0,
        state: base.ready ? { running: { startedAt: new Date().toISOString() } } : { waiting: { reason: 'ContainerCreating' } },
      },
    ],
  });

  it('drops a condition’s reason and message once it is True, replaces the pod’s address, and keeps a readiness gate’s condition', async () => {
    const made = await core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name: 'web' },
        spec: {
          nodeName: 'nowhere',
          readinessGates: [{ conditionType: 'example.com/gate' }],
          containers: [{ name: 'main', image: 'busybox' }],
        },
      },
    });
    const key: PodKey = { namespace: ns, name: 'web', uid: made.metadata!.uid! };
    // What a controller writes beside the kubelet.
    await core.patchNamespacedPodStatus(
      { name: 'web', namespace: ns, body: { status: { conditions: [{ type: 'example.com/gate', status: 'True', reason: 'Checked' }] } } },
      setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
    );
    const agent = agentWith(key);
    const writer = new PodStatusWriter({ api: core, agent: agent.source, source: 'api', logger: silentLogger });
    writer.start();
    try {
      const read = () => core.readNamespacedPodStatus({ name: 'web', namespace: ns });
      const condition = (pod: V1Pod, type: string) => pod.status?.conditions?.find((c) => c.type === type);
      agent.set(statusOf({ ready: false, ip: '10.9.0.1' }));
      const first = await until('the unready status', async () => {
        const pod = await read();
        return condition(pod, 'Ready')?.status === 'False' ? pod : undefined;
      });
      expect(condition(first, 'Ready')).toMatchObject({ reason: 'ContainersNotReady', message: 'containers with unready status: [main]' });
      expect(first.status?.containerStatuses?.[0]?.state?.waiting?.reason).toBe('ContainerCreating');

      agent.set(statusOf({ ready: true, ip: '10.9.0.2' }));
      const second = await until('the ready status', async () => {
        const pod = await read();
        return condition(pod, 'Ready')?.status === 'True' ? pod : undefined;
      });
      for (const type of ['Ready', 'ContainersReady']) {
        expect(condition(second, type)?.reason).toBeUndefined();
        expect(condition(second, type)?.message).toBeUndefined();
      }
      expect(second.status?.podIP).toBe('10.9.0.2');
      expect(second.status?.podIPs).toEqual([{ ip: '10.9.0.2' }]);
      // The container's state is the new one alone (an atomic list, replaced).
      expect(second.status?.containerStatuses?.[0]?.state?.waiting).toBeUndefined();
      expect(second.status?.containerStatuses?.[0]?.state?.running).toBeDefined();
      // Not the kubelet's: kept.
      expect(condition(second, 'example.com/gate')).toMatchObject({ status: 'True', reason: 'Checked' });
    } finally {
      await writer.close();
    }
  }, 240_000);
});
