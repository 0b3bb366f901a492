import { spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, openSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { independentDocker } from './engine.js';

/** A Docker engine a test has stopped; `start` brings it back the way it was started. */
export interface StoppedEngine {
  start(): Promise<void>;
}

/**
 * Stops the Docker engine itself (SIGTERM to dockerd, or `systemctl stop` where systemd runs it), for
 * "the engine went away mid-pass" tests. Containers without a restart policy stop with it, as on a
 * real host. Needs root; the engine must be the only dockerd on the machine.
 */
export async function stopDockerEngine(): Promise<StoppedEngine> {
  if (process.getuid?.() !== 0) throw new Error('stopping the Docker engine needs root: run the tests as root (CI does)');
  const pid = dockerdPid();
  const systemd = readFileSync(`/proc/${pid}/cgroup`, 'utf8').includes('docker.service');
  if (systemd) {
    run('systemctl', ['stop', 'docker.socket', 'docker.service']);
    return {
      start: async () => {
        run('systemctl', ['start', 'docker.service']);
        await waitFor(true);
      },
    };
  }
  const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  const cwd = readlinkSync(`/proc/${pid}/cwd`);
  // Where the engine wrote its log, so the restarted one writes there too.
  const stdout = readlinkSync(`/proc/${pid}/fd/1`);
  const log = stdout.startsWith('/') && existsSync(stdout) ? stdout : '/tmp/kubelet-ts-dockerd-restarted.log';
  process.kill(pid, 'SIGTERM');
  await waitGone(pid);
  await waitFor(false);
  return {
    start: async () => {
      const fd = openSync(log, 'a');
      const child = spawn(argv[0]!, argv.slice(1), { cwd, detached: true, stdio: ['ignore', fd, fd] });
      child.unref();
      closeSync(fd);
      await waitFor(true);
    },
  };
}

function dockerdPid(): number {
  const pids = readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        return readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === 'dockerd';
      } catch {
        return false;
      }
    });
  if (pids.length !== 1) throw new Error(`expected exactly one dockerd process, found ${pids.length}`);
  return Number(pids[0]);
}

function run(command: string, args: string[]): void {
  const result = spawnSync(command, args, { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed: ${result.stderr}`);
}

async function waitGone(pid: number): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (existsSync(`/proc/${pid}`)) {
    if (Date.now() > deadline) throw new Error(`dockerd (pid ${pid}) did not exit within 60 s of SIGTERM`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Waits until the engine answers (`up`) or stops answering. */
async function waitFor(up: boolean): Promise<void> {
  const docker = independentDocker();
  const deadline = Date.now() + 60_000;
  for (;;) {
    const answers = await docker.ping().then(
      () => true,
      () => false,
    );
    if (answers === up) return;
    if (Date.now() > deadline) throw new Error(`the Docker engine did not ${up ? 'come back' : 'go away'} within 60 s`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * Kills what an engine stopped mid-create can leave behind: containerd shims (and the `runc init`
 * under them) of containers the engine no longer runs or no longer knows. Such a leftover can keep
 * a network namespace holding a bridge address the engine hands out again, and every later
 * container given that address is unreachable through its published ports. Call it after a test
 * that stopped the engine has removed its containers. Returns how many shims it killed.
 */
export async function reapEngineDebris(): Promise<number> {
  const docker = independentDocker();
  const processes = readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map((entry) => ({ pid: Number(entry), cmdline: readProc(`/proc/${entry}/cmdline`).split('\0'), ppid: parentOf(entry) }));
  let reaped = 0;
  for (const shim of processes) {
    if (!shim.cmdline[0]?.endsWith('containerd-shim-runc-v2') || shim.cmdline[shim.cmdline.indexOf('-namespace') + 1] !== 'moby') continue;
    const id = shim.cmdline[shim.cmdline.indexOf('-id') + 1];
    if (id === undefined) continue;
    const running = await docker
      .getContainer(id)
      .inspect()
      .then(
        (info) => info.State.Running,
        () => false,
      );
    if (running) continue;
    for (const child of processes.filter((p) => p.ppid === shim.pid)) kill(child.pid);
    kill(shim.pid);
    reaped += 1;
  }
  return reaped;
}

function readProc(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return ''; // the process is gone
  }
}

function parentOf(pid: string): number {
  // /proc/<pid>/stat: "pid (comm) state ppid …"; comm may hold spaces, so read after its ')'.
  const stat = readProc(`/proc/${pid}/stat`);
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

function kill(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}
