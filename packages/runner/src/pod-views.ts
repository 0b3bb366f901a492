import { Labels, identityOf, type BackOff, type ContainerSummary, type ContainerView, type DesiredPod, type PodView } from '@kubelet-ts/core';

/** Each desired pod with its source and the actual state of its containers (`GET /pods`). */
export function podViews(desired: readonly DesiredPod[], actual: readonly ContainerSummary[], node: string, backOffs: readonly BackOff[]): PodView[] {
  const slots = new Map<string, ContainerSummary[]>();
  for (const c of actual) {
    const identity = identityOf(c.labels);
    if (identity === undefined || identity.node !== node) continue;
    const key = `${identity.podId}/${identity.container}`;
    slots.set(key, [...(slots.get(key) ?? []), c]);
  }
  const waiting = new Map(backOffs.map((b) => [`${b.podId}/${b.container}`, b]));
  return desired.map(({ manifest, source }) => ({
    id: manifest.id,
    ...(manifest.uuid === undefined ? {} : { uuid: manifest.uuid }),
    source,
    containers: manifest.containers.map((c): ContainerView => {
      const key = `${manifest.id}/${c.name}`;
      // Newest first: the running container speaks for the slot, else the newest exited one.
      const found = [...(slots.get(key) ?? [])].sort((a, b) => b.createdAt - a.createdAt);
      const shown = found.find((x) => x.state === 'running') ?? found[0];
      const lastExit = found.find((x) => x.state === 'exited');
      const backOff = waiting.get(key);
      if (shown === undefined) return { name: c.name, image: c.image, state: 'missing', restartCount: 0 };
      return {
        name: c.name,
        image: shown.image,
        state: shown.state,
        id: shown.id,
        restartCount: Number(shown.labels[Labels.restartCount] ?? 0) || 0,
        ...(lastExit?.exitCode === undefined ? {} : { exitCode: lastExit.exitCode }),
        ...(shown.startedAt === undefined ? {} : { startedAt: shown.startedAt }),
        ...(backOff === undefined ? {} : { backOff: { until: backOff.until, delayMs: backOff.delayMs } }),
      };
    }),
  }));
}
