import { describe, expect, it } from '@jest/globals';
import { checkedManifest } from '@kubelet-ts/conformance';
import { Labels } from '@kubelet-ts/core';
import { agentFixture } from './agent-fixture.js';
import { podListOf, settle, ScriptedSource } from './helpers.js';

const withInit = (restartPolicy: 'Always' | 'Never') =>
  checkedManifest({
    id: 'web',
    restartPolicy,
    initContainers: [
      { name: 'setup', image: 'busybox:1.36' },
      { name: 'proxy', image: 'busybox:1.36', restartPolicy: 'Always' },
    ],
    containers: [{ name: 'main', image: 'busybox:1.36' }],
  });

/** What these tests read of a pod's status in `/pods`. */
interface Status {
  readonly phase?: string;
  readonly conditions?: ReadonlyArray<{ readonly type: string; readonly status: string; readonly reason?: string }>;
  readonly containerStatuses?: ReadonlyArray<{ readonly state?: Record<string, unknown> }>;
  readonly initContainerStatuses?: ReadonlyArray<{ readonly name: string; readonly state?: Record<string, unknown> }>;
}
const statusOf = async (k: Parameters<typeof podListOf>[0]) => (await podListOf(k)).items[0]!.status as unknown as Status;

describe('init containers and sidecars, through the agent', () => {
  const f = agentFixture();
  const names = () =>
    f
      .of('web')
      .map((c) => `${c.labels[Labels.containerName]}:${c.state}`)
      .sort();

  it('runs the init container first, then the sidecar, then the app; /pods shows each step and the init statuses', async () => {
    const k = f.kubelet([new ScriptedSource('a', { initial: [withInit('Always')] })]);
    await k.start();
    await settle();
    expect(names()).toEqual(['setup:running']);
    let status = await statusOf(k);
    expect(status.phase).toBe('Pending');
    expect(status.conditions?.find((c) => c.type === 'Initialized')).toMatchObject({ status: 'False', reason: 'ContainersNotInitialized' });
    expect(status.containerStatuses?.[0]?.state).toMatchObject({ waiting: { reason: 'PodInitializing' } });

    f.runtime.exit(f.one('web', 'setup').id, 0);
    await settle();
    await k.sync();
    await k.sync();
    expect(names()).toEqual(['main:running', 'proxy:running', 'setup:exited']);
    status = await statusOf(k);
    expect(status.phase).toBe('Running');
    expect(status.conditions?.find((c) => c.type === 'Initialized')?.status).toBe('True');
    expect(status.initContainerStatuses?.map((s) => [s.name, Object.keys(s.state ?? {})[0]])).toEqual([
      ['setup', 'terminated'],
      ['proxy', 'running'],
    ]);

    // A sidecar that ends is started again beside the app.
    f.runtime.exit(f.one('web', 'proxy').id, 0);
    await settle();
    await k.sync();
    expect(f.of('web').filter((c) => c.labels[Labels.containerName] === 'proxy' && c.state === 'running')).toHaveLength(1);
  });

  it('under restartPolicy Never, a failed init container fails the pod, and the app never starts', async () => {
    const k = f.kubelet([new ScriptedSource('a', { initial: [withInit('Never')] })]);
    await k.start();
    await settle();
    f.runtime.exit(f.one('web', 'setup').id, 3);
    await settle();
    await k.sync();
    await k.sync();
    expect(names()).toEqual(['setup:exited']);
    const status = await statusOf(k);
    expect(status.phase).toBe('Failed');
    expect(status.initContainerStatuses?.[0]?.state).toMatchObject({ terminated: { exitCode: 3, reason: 'Error' } });
  });
});
