import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';

/** Where the pace runs' competing load is pinned: the first core, as issue 27 measured it. */
const HOG_CORE = '0';

/** Whether this host has `taskset` to pin the hog with. */
const canPin = (): boolean => spawnSync('taskset', ['--version']).status === 0;

/**
 * Runs `work` beside a CPU hog when `on`: one process spinning on one core (pinned there by
 * `taskset` when the host has it, else wherever the kernel puts it), the competing load under
 * which issue 27 asks the agent's pace to hold. The hog is killed and awaited whatever `work` does.
 */
export async function withCpuHog<T>(on: boolean, work: () => Promise<T>): Promise<T> {
  if (!on) return work();
  // It ends itself once its parent is gone: a bench interrupted (SIGTERM, SIGKILL) never runs the
  // `finally` below, and a hog left behind spun for two hours under later runs and test suites.
  const spin = [process.execPath, '-e', 'const parent = process.ppid; for (;;) if (process.ppid !== parent) process.exit(0);'];
  const hog = canPin()
    ? spawn('taskset', ['-c', HOG_CORE, ...spin], { stdio: 'ignore' })
    : spawn(spin[0]!, spin.slice(1), { stdio: 'ignore' });
  try {
    return await work();
  } finally {
    const exited = once(hog, 'exit');
    hog.kill('SIGKILL');
    await exited;
  }
}

/** What `withCpuHog` says it did, for a row's note. */
export const hogNote = (on: boolean): string =>
  on ? `with a CPU hog beside it (one process spinning${canPin() ? ` pinned to core ${HOG_CORE}` : ''})` : 'no competing load';
