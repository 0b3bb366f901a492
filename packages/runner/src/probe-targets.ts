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
  type SandboxSummary,
} from '@kubelet-ts/core';
import { podIPsOf } from './pod-views.js';
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

/**
 * Each probe of the running, current containers whose manifest container has one. `sandboxes`
 * give the pods' IPs, where a probe of a port that is not published dials (as the kubelet does).
 */
export function probeTargets(
  desired: readonly DesiredPod[],
  actual: readonly ContainerSummary[],
  node: string,
  sandboxes: readonly SandboxSummary[] = [],
): ProbeTarget[] {
  const probed = new Map<string, { manifest: ContainerManifest; source: string; container: Container }>();
  for (const { manifest, source } of desired) {
    for (const container of manifest.containers)
      if (hasAnyProbe(container)) probed.set(`${manifest.id}/${container.name}`, { manifest, source, container });
  }
  if (probed.size === 0) return [];
  const podIPs = podIPsOf(sandboxes, node);
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
        ...dialled(probe, found.container, found.manifest.hostNetwork === true ? '127.0.0.1' : podIPs.get(identity.podId)),
      });
    }
  }
  return targets;
}

/**
 * Where an httpGet, tcpSocket or grpc probe dials. With `host` set, that address and the container port
 * itself; a published port, its host port on the prober's default host; otherwise the container
 * port on the pod's own address (`podAddress`: 127.0.0.1 in a hostNetwork pod, whose container
 * listens on the host's interfaces; the sandbox's IP in any other), as the kubelet probes the pod
 * IP. A port name is looked up among the container's ports.
 */
function dialled(probe: Probe, container: Container, podAddress: string | undefined): { host?: string; hostPort?: number } {
  const port = probe.httpGet?.port ?? probe.tcpSocket?.port ?? probe.grpc?.port;
  if (port === undefined) return {};
  const declared = container.ports.find((p) => (typeof port === 'number' ? p.containerPort === port : p.name === port));
  const containerPort = typeof port === 'number' ? port : declared?.containerPort;
  const given = probe.httpGet?.host ?? probe.tcpSocket?.host;
  const host = given ?? (declared?.hostPort !== undefined && podAddress !== '127.0.0.1' ? undefined : podAddress);
  if (host !== undefined) return { host, ...(containerPort === undefined ? {} : { hostPort: containerPort }) };
  return declared?.hostPort === undefined ? {} : { hostPort: declared.hostPort };
}
