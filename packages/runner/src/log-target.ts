import { KubeletError, podNameOf, type ContainerLogRequest, type PodView } from '@kubelet-ts/core';

/**
 * The runtime id of the container whose output `request` asks for, among the desired pods' views,
 * by the kubelet's rules (`validateContainerLogStatus`), so that the logs read agree with what
 * `/pods` shows:
 *
 * - the pod is found by namespace and name (`default` for a pod without a namespace);
 * - `previous`: the run `/pods` shows as `lastState.terminated` — the run before the shown one, or,
 *   while an exited container waits out its back-off to be restarted, that run itself;
 * - otherwise the shown container (running, or the newest that ran); while it waits to start
 *   (none made yet, or made and not started), the run before it, if there was one.
 *
 * Here rather than in the runtime: a restart is a new container (same pod and container labels, the
 * restart count one higher), and only the agent knows which of them is which run. Throws a
 * `KubeletError`: `NotFound` naming what is unknown, `Conflict` when the container has not run yet.
 */
export function logTarget(pods: readonly PodView[], request: ContainerLogRequest): string {
  const { namespace, pod, container, previous = false } = request;
  const where = `pod ${JSON.stringify(`${namespace}/${pod}`)}`;
  const view = pods.find((p) => (p.namespace ?? 'default') === namespace && podNameOf(p.id, p.namespace) === pod);
  if (view === undefined) throw new KubeletError('NotFound', `${where} does not exist on this node`);
  const c = view.containers.find((x) => x.name === container);
  if (c === undefined) {
    const names = view.containers.map((x) => x.name).join(', ');
    throw new KubeletError('NotFound', `container ${JSON.stringify(container)} is not in ${where} (its containers: ${names})`);
  }
  // What /pods shows as lastState (see renderPodList): while an exited container waits, that run.
  const waitsToRestart = c.state === 'exited' && c.waitingReason !== undefined;
  const lastRun = waitsToRestart ? c.id : c.lastRun?.id;
  if (previous) {
    if (lastRun === undefined)
      throw new KubeletError('NotFound', `previous terminated container ${JSON.stringify(container)} in ${where} not found`);
    return lastRun;
  }
  if (c.id !== undefined && (c.state === 'running' || c.state === 'exited')) return c.id;
  if (lastRun !== undefined) return lastRun;
  throw new KubeletError(
    'Conflict',
    `container ${JSON.stringify(container)} in ${where} is waiting to start: ${c.waitingReason ?? 'ContainerCreating'}`,
  );
}
