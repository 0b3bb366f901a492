import { DEFAULT_GRACE_PERIOD_SECONDS, Labels, identityOf, specHash, type Container, type ContainerManifest, type ContainerSummary, type DesiredPod } from '@kubelet-ts/core';
import type { ProbeTarget } from './prober.js';

export /** The running, current containers whose manifest container has a liveness probe. */
function probeTargets(desired: readonly DesiredPod[], actual: readonly ContainerSummary[], node: string): ProbeTarget[] {
  const probed = new Map<string, { manifest: ContainerManifest; container: Container }>();
  for (const { manifest } of desired) {
    for (const container of manifest.containers) if (container.livenessProbe !== undefined) probed.set(`${manifest.id}/${container.name}`, { manifest, container });
  }
  if (probed.size === 0) return [];
  const targets: ProbeTarget[] = [];
  for (const c of actual) {
    const identity = identityOf(c.labels);
    if (c.state !== 'running' || identity === undefined || identity.node !== node) continue;
    const found = probed.get(`${identity.podId}/${identity.container}`);
    if (found === undefined || c.labels[Labels.specHash] !== specHash(found.manifest, found.container)) continue;
    const probe = found.container.livenessProbe!;
    const port = probe.httpGet?.port ?? probe.tcpSocket?.port;
    const hostPort = port === undefined ? undefined : found.container.ports.find((p) => (typeof port === 'number' ? p.containerPort === port : p.name === port))?.hostPort;
    targets.push({
      podId: identity.podId,
      container: identity.container,
      id: c.id,
      startedAt: c.startedAt ?? c.createdAt,
      probe,
      ...(hostPort === undefined ? {} : { hostPort }),
    });
  }
  return targets;
}
