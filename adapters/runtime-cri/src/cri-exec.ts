import { KubeletError, type ExecResult } from '@kubelet-ts/core';
import type { ContainerStatus, CriApi } from './cri-api.js';
import { ADAPTER } from './errors.js';

/** What a command's output is cut to (the contract's 64 KiB). */
const MAX_EXEC_OUTPUT = 64 * 1024;

/**
 * CRI `ExecSync` of `command` in container `id`, whose status is `status` (the prober's exec):
 * `Conflict` when it is not running; the runtime's timeout is in whole seconds, so ours (the
 * probe's) ends the call and the runtime's ends the command soon after.
 */
export async function execSyncIn(
  id: string,
  status: ContainerStatus,
  command: readonly string[],
  timeoutMs: number,
  call: <T>(what: string, fn: (deadline: number) => Promise<T>, timeoutMs: number) => Promise<T>,
  cri: CriApi,
): Promise<ExecResult> {
  const name = status.metadata?.name ?? id;
  if (status.state !== 'CONTAINER_RUNNING')
    throw new KubeletError('Conflict', `exec in ${name}: the container is ${status.state.replace('CONTAINER_', '').toLowerCase()}`, {
      adapter: ADAPTER,
    });
  const timeout = Math.max(1, Math.ceil(timeoutMs / 1000));
  try {
    const result = await call(
      `exec in ${name}`,
      (deadline) => cri.execSync({ containerId: id, cmd: [...command], timeout }, deadline),
      timeoutMs,
    );
    const output = Buffer.concat([result.stdout, result.stderr]).subarray(0, MAX_EXEC_OUTPUT).toString('utf8');
    return { exitCode: result.exitCode, output };
  } catch (error) {
    if (error instanceof KubeletError && error.code === 'Timeout') {
      throw new KubeletError('Timeout', `exec ${command.join(' ')} in ${name}: no exit within ${timeoutMs} ms`, {
        adapter: ADAPTER,
        cause: error,
      });
    }
    throw error;
  }
}
