import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AgentProcess } from './agent-process.js';
import { AGENT_ENGINES } from './agent-engines.js';

/**
 * A pod deleted and made again under its name, as a Deployment's controller or `kubectl replace
 * --force` does: the same name, a new uid (issue 42). On each real engine, through the agent: the
 * old pod's containers and sandbox go, the new pod's start, and everything the agent makes carries
 * the kubelet's uid, namespace and name labels.
 */
describe.each(AGENT_ENGINES)('a pod made again under its name (a new uid) on $name, through the agent', (engine) => {
  const node = `e2e-identity-${engine.name.split(' ')[0]!.toLowerCase()}-${process.pid}`;
  let dir: string;
  let agent: AgentProcess | undefined;
  let url: string;
  let busybox: string;

  const writePod = (uid: string) =>
    writeFile(
      join(dir, 'web.yaml'),
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'web', namespace: 'shop', uid },
        spec: {
          terminationGracePeriodSeconds: 2,
          containers: [{ name: 'main', image: busybox, command: ['sh', '-c', "trap 'exit 0' TERM; while true; do sleep 0.2; done"] }],
        },
      }),
    );
  type Listed = {
    items: Array<{
      metadata: { name: string; uid: string };
      status: { containerStatuses?: Array<{ containerID?: string; state: object }> };
    }>;
  };
  const listed = async () => ((await (await fetch(`${url}/pods`)).json()) as Listed).items.filter((p) => p.metadata.name === 'web');

  beforeAll(async () => {
    const prepared = await engine.prepare();
    busybox = prepared.busybox;
    dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-e2e-identity-'));
    await writePod('11111111-1111-4111-8111-111111111111');
    agent = new AgentProcess([
      ...prepared.flags,
      '--config',
      dir,
      '--hostname-override',
      node,
      '--sync-frequency',
      '1s',
      '--file-check-frequency',
      '1s',
    ]);
    url = await agent.serverUrl();
    await agent.until(() => agent!.events('ContainerStarted', 'web.shop').length === 1, 'the first pod started', 60_000);
  }, 120_000);

  afterAll(async () => {
    await agent?.stop();
    await engine.cleanUp(node);
    await rm(dir, { recursive: true, force: true });
  });

  it('labels the pod’s sandbox and container with io.kubernetes.pod.uid, .namespace and .name', async () => {
    const made = await engine.labelled(node);
    expect(made.map((m) => m.kind).sort()).toEqual(['container', 'sandbox']);
    for (const m of made)
      expect(m.labels).toMatchObject({
        'io.kubernetes.pod.uid': '11111111-1111-4111-8111-111111111111',
        'io.kubernetes.pod.namespace': 'shop',
        'io.kubernetes.pod.name': 'web',
      });
  });

  it('stops the old pod (within its grace) and starts the new one; the old container and sandbox are gone', async () => {
    const [before] = await listed();
    const oldContainer = before!.status.containerStatuses![0]!.containerID!.replace(/^[a-z]+:\/\//, '');
    const oldIds = (await engine.labelled(node)).map((m) => m.id);
    await writePod('22222222-2222-4222-8222-222222222222');
    await agent!.until(() => agent!.events('ContainerStarted', 'web.shop').length === 2, 'the new pod started', 60_000);
    const removed = agent!.events('ContainerRemoved', 'web.shop').map((l) => l.msg);
    expect(removed).toEqual([`removed ${oldContainer} (pod-replaced)`]);
    expect(agent!.events('SandboxRemoved', 'web.shop').map((l) => l.msg)).toEqual([
      expect.stringContaining('(pod-replaced; and the pod volumes)'),
    ]);
    const now = await engine.labelled(node);
    expect(now.map((m) => m.kind).sort()).toEqual(['container', 'sandbox']);
    expect(now.some((m) => oldIds.includes(m.id))).toBe(false);
    for (const m of now) expect(m.labels['io.kubernetes.pod.uid']).toBe('22222222-2222-4222-8222-222222222222');
    const [after] = await listed();
    expect(after!.metadata.uid).toBe('22222222-2222-4222-8222-222222222222');
  });
});
