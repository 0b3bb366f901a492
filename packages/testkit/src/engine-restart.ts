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
