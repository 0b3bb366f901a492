import { execFile, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
export const cliPath = fileURLToPath(new URL('../../packages/cli/bin/kubelet-ts.js', import.meta.url));

/** A `kubelet-ts` command (`logs`, `exec`, …) as a process, with `env` added; its exit code and output. */
export function runCli(
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [cliPath, ...args], { timeout: 30_000, env: { ...process.env, ...env } }, (error, stdout, stderr) =>
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr }),
    );
  });
}

/** One structured log line of the agent. */
export type LogLine = Record<string, unknown> & { msg: string; level: number };

/**
 * The `kubelet-ts` CLI as a child process, observed through its JSON log lines: the only view a
 * user has of an agent on the in-memory runtime.
 */
export class AgentProcess {
  readonly lines: LogLine[] = [];
  readonly stderr: string[] = [];
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(args: readonly string[]) {
    // The agent's server takes any free port unless the test names one: tests run side by side.
    const port = args.includes('--port') ? [] : ['--port', '0'];
    // Its own directory for what it keeps across restarts, unless the test names one (to restart
    // an agent on it): never the host's /var/lib/kubelet-ts, which agents side by side would share.
    const rootDir = args.includes('--root-dir') ? undefined : mkdtempSync(join(tmpdir(), 'kubelet-ts-agent-'));
    // CRI's log files and links there too, never in the host's /var/log.
    const root =
      rootDir === undefined
        ? []
        : [
            '--root-dir',
            rootDir,
            ...(args.includes('--pod-logs-dir') ? [] : ['--pod-logs-dir', join(rootDir, 'pods')]),
            ...(args.includes('--container-log-links-dir') ? [] : ['--container-log-links-dir', join(rootDir, 'containers')]),
          ];
    this.child = spawn(process.execPath, [cliPath, '--log-format', 'json', ...port, ...root, ...args], { cwd: repoRoot, stdio: 'pipe' });
    let buffer = '';
    this.child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      buffer += chunk;
      const parts = buffer.split('\n');
      buffer = parts.pop() ?? '';
      for (const part of parts) if (part.trim() !== '') this.lines.push(JSON.parse(part) as LogLine);
    });
    this.child.stderr.setEncoding('utf8').on('data', (chunk: string) => this.stderr.push(chunk));
    this.exited = new Promise((resolve) =>
      this.child.on('exit', (code, signal) => {
        if (rootDir !== undefined) rmSync(rootDir, { recursive: true, force: true });
        resolve({ code, signal });
      }),
    );
  }

  /** The agent server's base URL, once it has said it listens. */
  async serverUrl(): Promise<string> {
    await this.until(() => this.lines.some((l) => l.msg === 'agent server listening'), 'the agent server to listen');
    return String(this.lines.find((l) => l.msg === 'agent server listening')?.['url']);
  }

  /** Log lines of one event type, optionally for one pod. */
  events(type: string, podId?: string): LogLine[] {
    return this.lines.filter((l) => l['event'] === type && (podId === undefined || l['podId'] === podId));
  }

  /** Waits until `check` holds over the log so far; fails with the log tail when it does not. */
  async until(check: () => boolean, what: string, ms = 10_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!check()) {
      if (Date.now() > deadline) {
        const tail = this.lines
          .slice(-15)
          .map((l) => JSON.stringify(l))
          .join('\n');
        throw new Error(`timed out waiting for ${what}\n--- last log lines ---\n${tail}\n--- stderr ---\n${this.stderr.join('')}`);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Sends a signal and resolves with how the process ended. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
    return this.exited;
  }

  /** How the process ended, without signalling it. */
  get exit(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    return this.exited;
  }

  /** Last resort for a failed test: never leave a process behind. */
  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }
}
