import { criEndpoint, independentDocker } from '@kubelet-ts/testkit';
import { ms } from '../stats.js';
import { rawCri } from './cri-raw.js';
import { channelSession } from './streams-clients.js';

/** One way of running a command in a container that is not the agent's: its name, and one timed run (ms). */
export interface ExecWay {
  readonly name: string;
  run(command: readonly string[]): Promise<number>;
}

/** The engine's own exec of a container: the baseline, and more ways for reference; `close` lets go of clients. */
export interface ExecBaselines {
  readonly baseline: ExecWay;
  readonly references: readonly ExecWay[];
  close(): void;
}

/**
 * Docker's exec as a client of the engine API does it (dockerode: create, start hijacked, read to
 * the end, inspect until the exit code shows, every 50 ms as the agent does), stdout and stderr
 * attached as the agent attaches them.
 */
export function dockerExecBaselines(containerId: string): ExecBaselines {
  const container = independentDocker().getContainer(containerId);
  return {
    baseline: {
      name: 'dockerode exec create + start (hijacked) + inspect for the exit code',
      async run(command) {
        const t = process.hrtime.bigint();
        const exec = await container.exec({ Cmd: [...command], AttachStdout: true, AttachStderr: true });
        const stream = await exec.start({ hijack: true, stdin: false });
        await new Promise<void>((resolve, reject) => {
          stream.once('end', resolve).once('close', resolve).once('error', reject);
          stream.resume();
        });
        for (;;) {
          const state = await exec.inspect();
          if (!state.Running && state.ExitCode !== null) {
            if (state.ExitCode !== 0) throw new Error(`docker exec ${command.join(' ')}: exit code ${state.ExitCode}`);
            return ms(t);
          }
          await new Promise((r) => setTimeout(r, 50));
        }
      },
    },
    references: [],
    close: () => undefined,
  };
}

/**
 * containerd's exec over CRI: `ExecSync` (one gRPC call, the output in its answer) is the
 * baseline; for reference, `Exec` and its session on containerd's streaming server over WebSocket
 * (v4), which is the way the agent goes.
 */
export function criExecBaselines(containerId: string): ExecBaselines {
  const raw = rawCri(criEndpoint());
  return {
    baseline: {
      name: 'raw CRI ExecSync',
      async run(command) {
        const t = process.hrtime.bigint();
        const code = await raw.execSync(containerId, command);
        if (code !== 0) throw new Error(`ExecSync ${command.join(' ')}: exit code ${code}`);
        return ms(t);
      },
    },
    references: [
      {
        name: "raw CRI Exec + its session on containerd's streaming server (ws, v4.channel.k8s.io): the agent's way, without the agent",
        async run(command) {
          const t = process.hrtime.bigint();
          const session = await channelSession(await raw.exec(containerId, command), ['v4.channel.k8s.io']);
          if (session.status !== 'Success') throw new Error(`CRI Exec ${command.join(' ')}: status ${session.status}`);
          return ms(t);
        },
      },
    ],
    close: () => raw.close(),
  };
}
