import {
  Labels,
  identityOf,
  podUid,
  specHash,
  type Container,
  type ContainerManifest,
  type ContainerSummary,
  type DesiredPod,
  type Probe,
} from '@kubelet-ts/core';
import type { ProbeKind, ProbeTarget } from './prober.js';

const KINDS: ReadonlyArray<readonly [ProbeKind, 'livenessProbe' | 'readinessProbe' | 'startupProbe']> = [
  ['startup', 'startupProbe'],
  ['liveness', 'livenessProbe'],
  ['readiness', 'readinessProbe'],
];

/** Whether a container has any probe (its new containers are handed to the prober at once). */
export function hasAnyProbe(container: Container): boolean {
  return KINDS.some(([, field]) => container[field] !== undefined);
}

/** Each probe of the running, current containers whose manifest container has one. */
export function probeTargets(desired: readonly DesiredPod[], actual: readonly ContainerSummary[], node: string): ProbeTarget[] {
  const probed = new Map<string, { manifest: ContainerManifest; source: string; container: Container }>();
  for (const { manifest, source } of desired) {
    for (const container of manifest.containers)
      if (hasAnyProbe(container)) probed.set(`${manifest.id}/${container.name}`, { manifest, source, container });
  }
  if (probed.size === 0) return [];
  const targets: ProbeTarget[] = [];
  for (const c of actual) {
    const identity = identityOf(c.labels);
    if (c.state !== 'running' || identity === undefined || identity.node !== node) continue;
    const found = probed.get(`${identity.podId}/${identity.container}`);
    if (found === undefined || c.labels[Labels.specHash] !== specHash(found.manifest, found.container)) continue;
    for (const [kind, field] of KINDS) {
      const probe = found.container[field];
      if (probe === undefined) continue;
      targets.push({
        podId: identity.podId,
        container: identity.container,
        id: c.id,
        startedAt: c.startedAt ?? c.createdAt,
        kind,
        probe,
        namespace: found.manifest.namespace ?? 'default',
        podUid: podUid(found.manifest, { node, source: found.source }),
        ...dialled(probe, found.container, found.manifest.hostNetwork === true),
      });
    }
  }
  return targets;
}

/**
 * Where an httpGet or tcpSocket probe dials. With `host` set, or in a hostNetwork pod (the
 * container listens on the host's own interfaces; 127.0.0.1 then), that address and the container
 * port itself; otherwise the published host port, on the prober's default host. A port name is
 * looked up among the container's ports.
 */
function dialled(probe: Probe, container: Container, hostNetwork: boolean): { host?: string; hostPort?: number } {
  const port = probe.httpGet?.port ?? probe.tcpSocket?.port;
  if (port === undefined) return {};
  const declared = container.ports.find((p) => (typeof port === 'number' ? p.containerPort === port : p.name === port));
  const host = probe.httpGet?.host ?? probe.tcpSocket?.host ?? (hostNetwork ? '127.0.0.1' : undefined);
  if (host !== undefined) {
    const containerPort = typeof port === 'number' ? port : declared?.containerPort;
    return { host, ...(containerPort === undefined ? {} : { hostPort: containerPort }) };
  }
  return declared?.hostPort === undefined ? {} : { hostPort: declared.hostPort };
}
