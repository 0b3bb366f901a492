import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdir, mkdtemp, readFile, readlink, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { AgentProcess } from './agent-process.js';
import { printedOnce, writeV1Pod } from './agent-logs.js';
import { AGENT_ENGINES } from './agent-engines.js';

/**
 * Lifecycle hooks (issue 26) on each real engine, through the agent process: a postStart hook runs
 * in the started container, one that fails kills it (`FailedPostStartHook`), and a preStop hook runs
 * before the stop when its pod is removed, leaving its mark on a claim that outlives the pod. And
 * the host's process and IPC namespaces (`hostPID`, `hostIPC`), which `--allow-privileged` lets in,
 * and a pod volume in memory.
 */
const execFileAsync = promisify(execFile);

describe.each(AGENT_ENGINES)('v1 lifecycle hooks and host namespaces on $name, through the agent', (engine) => {
  const node = `e2e-hooks-${engine.name.split(' ')[0]!.toLowerCase()}-${process.pid}`;
  let dir: string;
  let volumes: string;
  let seccompRoot: string;
  let agent: AgentProcess | undefined;
  let url: string;

  const writePod = (name: string, spec: object) => writeV1Pod(dir, name, spec);

  beforeAll(async () => {
    const { flags, busybox } = await engine.prepare();
    dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-e2e-hooks-'));
    volumes = await mkdtemp(join(tmpdir(), 'kubelet-ts-e2e-hook-volumes-'));
    const sh = (script: string) => ({ exec: { command: ['sh', '-c', script] } });
    // The test image has no /tmp: the hook writes at the root.
    await writePod('poststart', {
      terminationGracePeriodSeconds: 2,
      containers: [
        {
          name: 'main',
          image: busybox,
          command: ['sh', '-c', 'while true; do cat /started 2>/dev/null; sleep 1; done'],
          lifecycle: { postStart: sh('echo started-by-hook > /started') },
        },
      ],
    });
    await writePod('badstart', {
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 2,
      containers: [{ name: 'main', image: busybox, command: ['sleep', '3600'], lifecycle: { postStart: sh('echo no; exit 3') } }],
    });
    await writePod('prestop', {
      terminationGracePeriodSeconds: 5,
      containers: [
        {
          name: 'main',
          image: busybox,
          command: ['sleep', '3600'],
          lifecycle: { preStop: sh('echo bye-from-prestop > /data/bye') },
          volumeMounts: [{ name: 'data', mountPath: '/data' }],
        },
      ],
      volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'hooks-claim' } }],
    });
    await writePod('hostns', {
      hostPID: true,
      hostIPC: true,
      terminationGracePeriodSeconds: 2,
      containers: [
        {
          name: 'main',
          image: busybox,
          command: ['sh', '-c', 'echo "PID=$(readlink /proc/self/ns/pid) IPC=$(readlink /proc/self/ns/ipc)"; exec sleep 3600'],
        },
      ],
    });
    // A pod volume in memory: a tmpfs of its size limit, shared by the pod's containers.
    await writePod('memvol', {
      terminationGracePeriodSeconds: 2,
      containers: [
        {
          name: 'main',
          image: busybox,
          command: ['sh', '-c', 'grep " /cache " /proc/mounts; exec sleep 3600'],
          volumeMounts: [{ name: 'cache', mountPath: '/cache' }],
        },
      ],
      volumes: [{ name: 'cache', emptyDir: { medium: 'Memory', sizeLimit: '16Mi' } }],
    });
    // A Localhost seccomp profile (the documentation's audit-pod names profiles/audit.json), under
    // the agent's --seccomp-profile-root: everything allowed but making a directory.
    seccompRoot = await mkdtemp(join(tmpdir(), 'kubelet-ts-e2e-seccomp-'));
    await mkdir(join(seccompRoot, 'profiles'));
    await writeFile(
      join(seccompRoot, 'profiles', 'deny-mkdir.json'),
      JSON.stringify({ defaultAction: 'SCMP_ACT_ALLOW', syscalls: [{ names: ['mkdir', 'mkdirat'], action: 'SCMP_ACT_ERRNO' }] }),
    );
    await writePod('seccomp', {
      securityContext: { seccompProfile: { type: 'Localhost', localhostProfile: 'profiles/deny-mkdir.json' } },
      terminationGracePeriodSeconds: 2,
      containers: [{ name: 'main', image: busybox, command: ['sh', '-c', 'mkdir /made-here; echo "mkdir exited $?"; exec sleep 3600'] }],
    });
    agent = new AgentProcess([
      ...flags,
      '--seccomp-profile-root',
      seccompRoot,
      '--allow-privileged',
      '--config',
      dir,
      '--volumes-root',
      volumes,
      '--hostname-override',
      node,
      '--sync-frequency',
      '1s',
      '--file-check-frequency',
      '1s',
    ]);
    url = await agent.serverUrl();
    await agent.until(() => agent!.events('ContainerStarted', 'prestop').length === 1, 'the prestop pod started', 60_000);
  }, 120_000);

  afterAll(async () => {
    await agent?.stop();
    await engine.cleanUp(node);
    await rm(dir, { recursive: true, force: true });
    await rm(seccompRoot, { recursive: true, force: true });
    // A tmpfs a failed test left mounted there goes first, or rm would stop at it.
    for (const line of (await readFile('/proc/self/mountinfo', 'utf8')).split('\n')) {
      const point = line.split(' ')[4];
      if (point?.startsWith(`${volumes}/`)) await execFileAsync('umount', [point]).catch(() => undefined);
    }
    await rm(volumes, { recursive: true, force: true });
  });

  it('runs postStart in the started container', async () => {
    expect(await printedOnce(url, 'default/poststart/main', 'started-by-hook')).toContain('started-by-hook');
  });

  it('kills a container whose postStart fails, saying why; under Never it stays down', async () => {
    await agent!.until(
      () => agent!.events('ContainerFailed', 'badstart').some((l) => l['reason'] === 'FailedPostStartHook'),
      'FailedPostStartHook',
      30_000,
    );
    const failed = agent!.events('ContainerFailed', 'badstart').find((l) => l['reason'] === 'FailedPostStartHook');
    expect(String(failed?.['msg'] ?? failed?.['message'])).toContain('exited with code 3');
    type Listed = { items: Array<{ metadata: { name: string }; status: { phase: string } }> };
    let phase = '';
    for (let i = 0; i < 100 && phase !== 'Failed'; i++) {
      phase = ((await (await fetch(`${url}/pods`)).json()) as Listed).items.find((p) => p.metadata.name === 'badstart')?.status.phase ?? '';
      if (phase !== 'Failed') await new Promise((r) => setTimeout(r, 200));
    }
    expect(phase).toBe('Failed');
    expect(agent!.events('ContainerStarted', 'badstart')).toHaveLength(1);
  });

  it("puts a hostPID and hostIPC pod's container in the host's process and IPC namespaces", async () => {
    const printed = await printedOnce(url, 'default/hostns/main', 'IPC=');
    const [pid, ipc] = await Promise.all([readlink('/proc/self/ns/pid'), readlink('/proc/self/ns/ipc')]);
    expect(printed).toContain(`PID=${pid} IPC=${ipc}`);
  });

  it('gives an emptyDir in memory as a tmpfs of its size limit, and unmounts it with the pod', async () => {
    expect(await printedOnce(url, 'default/memvol/main', 'tmpfs')).toMatch(/^tmpfs \/cache tmpfs rw.*size=16384k/m);
    const mounted = async () => (await readFile('/proc/self/mountinfo', 'utf8')).includes(join(volumes, 'memvol', 'cache'));
    expect(await mounted()).toBe(true);
    await rm(join(dir, 'memvol.json'));
    await agent!.until(() => agent!.events('SandboxRemoved', 'memvol').length > 0, 'the memvol pod removed', 30_000);
    expect(await mounted()).toBe(false);
  });

  it('runs a pod under its Localhost seccomp profile, a file under --seccomp-profile-root', async () => {
    const printed = await printedOnce(url, 'default/seccomp/main', 'mkdir exited');
    expect(printed).toContain('Operation not permitted');
    expect(printed).toContain('mkdir exited 1');
  });

  it('runs preStop before the stop when the pod is removed', async () => {
    await rm(join(dir, 'prestop.json'));
    await agent!.until(() => agent!.events('ContainerRemoved', 'prestop').length > 0, 'the prestop pod removed', 30_000);
    expect(await readFile(join(volumes, '.claims', 'hooks-claim', 'bye'), 'utf8')).toBe('bye-from-prestop\n');
    expect(agent!.events('ContainerFailed', 'prestop')).toEqual([]);
  });
});
