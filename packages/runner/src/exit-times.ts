import { isManagedBy, type ContainerRuntime, type ContainerSummary } from '@kubelet-ts/core';

type ExitTimes = Pick<ContainerSummary, 'startedAt' | 'finishedAt' | 'exitCode'>;

/**
 * Exited containers need their start and end times for the crash back-off; a runtime's list may
 * not carry them (Docker's does not), so this node's exited containers without them are inspected.
 * With `known`, each container is inspected once: its answer is kept there by id (an exited
 * container's times never change), and the caller forgets the ids that are gone.
 */
export async function withExitTimes(
  runtime: ContainerRuntime,
  actual: readonly ContainerSummary[],
  node: string,
  known?: Map<string, ExitTimes>,
): Promise<readonly ContainerSummary[]> {
  // The steady state has no exited container without times: no promise per container then.
  if (!actual.some((c) => c.state === 'exited' && c.finishedAt === undefined)) return actual;
  return Promise.all(
    actual.map(async (c) => {
      if (c.state !== 'exited' || c.finishedAt !== undefined || !isManagedBy(c.labels, node)) return c;
      let times = known?.get(c.id);
      if (times === undefined) {
        try {
          const d = await runtime.inspect(c.id);
          times = {
            ...(d.startedAt === undefined ? {} : { startedAt: d.startedAt }),
            ...(d.finishedAt === undefined ? {} : { finishedAt: d.finishedAt }),
            ...(d.exitCode === undefined ? {} : { exitCode: d.exitCode }),
          };
          if (d.state === 'exited') known?.set(c.id, times);
        } catch {
          return c; // gone meanwhile: the next pass will not see it
        }
      }
      return { ...c, ...times };
    }),
  );
}
