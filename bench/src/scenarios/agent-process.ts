import { fork, type ChildProcess } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { AGENT_NODE_FLAGS } from './fixtures.js';
import { within } from './logs-agent.js';

// An agent the bench runs in a process of its own, so that what the process holds is the agent's
// alone: how it is started, asked, measured from /proc and stopped. The child scripts
// (logs-agent-child.ts, operator-agent-child.ts) say `{ url }` once they serve, answer `memory`,
// and on `stop` close and exit.

/** What the agent's process holds at one moment: resident memory (bytes), open file descriptors, CPU used so far (s). */
export interface ProcessSample {
  readonly rss: number;
  readonly fds: number;
  readonly cpu: number;
}

/**
 * Forks `script` (compiled) with `config` as its JSON argument and the launcher's Node flags (and
 * `execArgv`), and waits (150 s at most) for the URL it says it serves at. `detached`: a process
 * group of its own, so that a Ctrl-C of the bench reaches the bench alone, and the child, seeing its
 * parent gone, cleans up before it exits.
 */
export async function startAgentProcess(
  script: string,
  config: unknown,
  options: { readonly execArgv?: readonly string[]; readonly detached?: boolean } = {},
): Promise<{ readonly child: ChildProcess; readonly url: string }> {
  const child = fork(script, [JSON.stringify(config)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    detached: options.detached ?? false,
    execArgv: [...AGENT_NODE_FLAGS, ...(options.execArgv ?? [])],
  });
  try {
    const url = await within(
      new Promise<string>((resolve, reject) => {
        child.on('message', (m) => {
          if (typeof m === 'object' && m !== null && 'url' in m) resolve(String(m.url));
        });
        child.on('error', reject);
        child.on('exit', (code) => reject(new Error(`the agent child exited with ${code} before it served`)));
      }),
      150_000,
      'the agent child to serve',
    );
    return { child, url };
  } catch (error) {
    await stopAgentProcess(child);
    throw error;
  }
}

/** Asks the child to stop (60 s at most), then kills it; safe to call twice. */
export async function stopAgentProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  if (child.connected) child.send('stop');
  await within(exited, 60_000, 'the agent child to stop').catch(() => {
    child.kill('SIGKILL');
  });
}

/** Sends `message` to the child and resolves with the `key` of its first answer that has one (10 s at most). */
export function ask<T>(child: ChildProcess, message: string, key: string, what: string): Promise<T> {
  return within(
    new Promise<T>((resolve) => {
      const answer = (m: unknown) => {
        if (typeof m !== 'object' || m === null || !(key in m)) return;
        child.off('message', answer);
        resolve((m as Record<string, T>)[key]!);
      };
      child.on('message', answer);
      child.send(message);
    }),
    10_000,
    `the agent child to ${what}`,
  );
}

/** The child's `process.memoryUsage()` (it answers `memory`), as a note shows it: heap used / total, and buffers, in MB. */
export async function heapOf(child: ChildProcess): Promise<string> {
  const memory = await ask<NodeJS.MemoryUsage>(child, 'memory', 'memory', 'say its memory');
  const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
  return `heap ${mb(memory.heapUsed)} of ${mb(memory.heapTotal)} MB, buffers ${mb(memory.arrayBuffers)} MB`;
}

/** The child's RSS, open descriptors and CPU so far, from /proc; throws if it has ended. */
export async function sampleOf(child: ChildProcess): Promise<ProcessSample> {
  if (child.exitCode !== null || child.signalCode !== null)
    throw new Error(`the agent child ended (${child.exitCode ?? child.signalCode}) while it was measured`);
  const [status, stat, fds] = await Promise.all([
    readFile(`/proc/${child.pid}/status`, 'utf8'),
    readFile(`/proc/${child.pid}/stat`, 'utf8'),
    readdir(`/proc/${child.pid}/fd`),
  ]);
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(status);
  if (kb === null) throw new Error(`no VmRSS in /proc/${child.pid}/status`);
  // After the command (which may hold spaces), utime and stime are fields 14 and 15, in USER_HZ (100).
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { rss: Number(kb[1]) * 1024, fds: fds.length, cpu: (Number(fields[11]) + Number(fields[12])) / 100 };
}
