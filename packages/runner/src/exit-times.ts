import { isManagedBy, type ContainerRuntime, type ContainerSummary } from '@kubelet-ts/core';

/**
 * Exited containers need their start and end times for the crash back-off; a runtime's list may
 * not carry them (Docker's does not), so this node's exited containers without them are inspected.
 */
export async function withExitTimes(runtime: ContainerRuntime, actual: readonly ContainerSummary[], node: string): Promise<readonly ContainerSummary[]> {
  // The steady state has no exited container without times: no promise per container then.
  if (!actual.some((c) => c.state === 'exited' && c.finishedAt === undefined)) return actual;
  return Promise.all(
    actual.map(async (c) => {
      if (c.state !== 'exited' || c.finishedAt !== undefined || !isManagedBy(c.labels, node)) return c;
      try {
        const d = await runtime.inspect(c.id);
        return {
          ...c,
          ...(d.startedAt === undefined ? {} : { startedAt: d.startedAt }),
          ...(d.finishedAt === undefined ? {} : { finishedAt: d.finishedAt }),
          ...(d.exitCode === undefined ? {} : { exitCode: d.exitCode }),
        };
      } catch {
        return c; // gone meanwhile: the next pass will not see it
      }
    }),
  );
}
