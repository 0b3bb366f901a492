import { KubeletError, podNameOf, type ContainerLogRequest, type ContainerTarget, type PodTarget, type PodView } from '@kubelet-ts/core';

/** The desired pod `target` names (`NotFound` naming it otherwise), and how to name it in messages. */
export function podTarget(pods: readonly PodView[], target: PodTarget): { readonly view: PodView; readonly where: string } {
  const where = `pod ${JSON.stringify(`${target.namespace}/${target.pod}`)}`;
  const view = pods.find((p) => (p.namespace ?? 'default') === target.namespace && podNameOf(p.id, p.namespace) === target.pod);
  if (view === undefined) throw new KubeletError('NotFound', `${where} does not exist on this node`);
  return { view, where };
}

/**
 * The runtime id of the running container `target` names, for exec and attach (the kubelet's
 * `GetExec`/`GetAttach` find the running one): `NotFound` naming what is unknown, `Conflict` when
 * it does not run now (it waits to start, or ended).
 */
export function runningTarget(pods: readonly PodView[], target: ContainerTarget): string {
  const { view, where } = podTarget(pods, target);
  const c = view.containers.find((x) => x.name === target.container);
  if (c === undefined) {
    const names = view.containers.map((x) => x.name).join(', ');
    throw new KubeletError('NotFound', `container ${JSON.stringify(target.container)} is not in ${where} (its containers: ${names})`);
  }
  if (c.state !== 'running' || c.id === undefined)
    throw new KubeletError(
      'Conflict',
      `container ${JSON.stringify(target.container)} in ${where} is not running (${c.waitingReason ?? c.state}): it can be exec'd into or attached to once it runs`,
    );
  return c.id;
}

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
  const { container, previous = false } = request;
  const { view, where } = podTarget(pods, request);
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
