import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AgentProcess, runCli } from './agent-process.js';
import { AGENT_ENGINES } from './agent-engines.js';

/** What these tests read of a pod in `/pods`. */
interface ListedPod {
  readonly metadata: { readonly name: string };
  readonly status: {
    readonly phase?: string;
    readonly conditions?: ReadonlyArray<{ readonly type: string; readonly status: string }>;
    readonly initContainerStatuses?: ReadonlyArray<{
      readonly name: string;
      readonly restartCount: number;
      readonly state?: { readonly terminated?: { readonly exitCode: number; readonly reason?: string }; readonly running?: object };
    }>;
    readonly containerStatuses?: ReadonlyArray<{ readonly state?: { readonly waiting?: { readonly reason?: string } } }>;
  };
}

/**
 * Init containers and sidecars (issue 26) on each real engine, through the agent process: an init
 * container prepares a volume the app then reads; a sidecar that ends is started again beside the
 * app; an init container that fails under `restartPolicy: Never` fails the pod, whose app never
 * starts, and `kubelet-ts get pods` says `Init:Error`.
 */
describe.each(AGENT_ENGINES)('v1 init containers and sidecars on $name, through the agent', (engine) => {
  const node = `e2e-init-${engine.name.split(' ')[0]!.toLowerCase()}-${process.pid}`;
  let dir: string;
  let agent: AgentProcess | undefined;
  let url: string;

  const pod = async (name: string): Promise<ListedPod | undefined> =>
    ((await (await fetch(`${url}/pods`)).json()) as { items: ListedPod[] }).items.find((p) => p.metadata.name === name);
  const until = async (name: string, check: (p: ListedPod) => boolean, what: string, ms = 30_000): Promise<ListedPod> => {
    const deadline = Date.now() + ms;
    for (;;) {
      const found = await pod(name);
      if (found !== undefined && check(found)) return found;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(found?.status)}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  };

  beforeAll(async () => {
    const { flags, busybox } = await engine.prepare();
    dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-e2e-init-'));
    const sh = (script: string) => ({ image: busybox, command: ['sh', '-c', script] });
    const v1 = (name: string, spec: object) => JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec });
    await writeFile(
      join(dir, 'inited.json'),
      v1('inited', {
        volumes: [{ name: 'work', emptyDir: {} }],
        initContainers: [
          { name: 'prepare', ...sh('echo prepared-by-init > /work/ready'), volumeMounts: [{ name: 'work', mountPath: '/work' }] },
          // A sidecar that ends after a moment: started before the app, and again whenever it ends.
          { name: 'helper', restartPolicy: 'Always', ...sh('sleep 1; exit 1') },
        ],
        containers: [{ name: 'app', ...sh('cat /work/ready; exec sleep 3600'), volumeMounts: [{ name: 'work', mountPath: '/work' }] }],
      }),
    );
    await writeFile(
      join(dir, 'failing.json'),
      v1('failing', {
        restartPolicy: 'Never',
        initContainers: [{ name: 'check', ...sh('exit 7') }],
        containers: [{ name: 'app', ...sh('exec sleep 3600') }],
      }),
    );
    agent = new AgentProcess([...flags, '--config', dir, '--hostname-override', node, '--sync-frequency', '1s']);
    url = await agent.serverUrl();
  }, 120_000);

  afterAll(async () => {
    await agent?.stop();
    await engine.cleanUp(node);
    await rm(dir, { recursive: true, force: true });
  });

  // Each waits (`until`) up to 30 s for what it checks; the test's own time is above that, so a slow
  // engine (a loaded machine, a control plane's suite beside) says what it waited for, not a timeout.
  it('runs the init container to completion before the app, which reads what it prepared', async () => {
    const running = await until('inited', (p) => p.status.phase === 'Running', 'the app to run');
    expect(running.status.conditions?.find((c) => c.type === 'Initialized')?.status).toBe('True');
    expect(running.status.initContainerStatuses?.[0]).toMatchObject({ name: 'prepare', state: { terminated: { exitCode: 0 } } });
    let printed = '';
    for (let i = 0; i < 40 && !printed.includes('prepared-by-init'); i++) {
      printed = await (await fetch(`${url}/containerLogs/default/inited/app`)).text();
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(printed).toContain('prepared-by-init');
  }, 60_000);

  it('starts a sidecar that ends again, beside the running app', async () => {
    const restarted = await until(
      'inited',
      (p) => (p.status.initContainerStatuses?.find((s) => s.name === 'helper')?.restartCount ?? 0) >= 1,
      'the sidecar to be restarted',
    );
    expect(restarted.status.phase).toBe('Running');
    expect(agent!.events('ContainerRestarted', 'inited').some((l) => l['container'] === 'helper')).toBe(true);
  }, 60_000);

  it('fails the pod when an init container fails under restartPolicy Never: the app never starts, and get pods says Init:Error', async () => {
    const failed = await until('failing', (p) => p.status.phase === 'Failed', 'the pod to fail');
    expect(failed.status.initContainerStatuses?.[0]?.state?.terminated?.exitCode).toBe(7);
    expect(failed.status.containerStatuses?.[0]?.state?.waiting?.reason).toBe('PodInitializing');
    expect(agent!.events('ContainerStarted', 'failing').map((l) => l['container'])).toEqual(['check']);
    const listed = await runCli(['get', 'pods', '--server', url]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/^failing\s+0\/1\s+Init:Error\s+0\s/m);
  }, 60_000);
});
