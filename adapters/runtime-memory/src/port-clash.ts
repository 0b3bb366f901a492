import type { PortBinding, SandboxSpec, SandboxSummary } from '@kubelet-ts/core';

/**
 * A host port of `ports` that a ready sandbox already holds (only sandboxes publish ports), as
 * `port/protocol`: the same port and protocol on the same address, or on every address (no
 * `hostIp`) on either side. `undefined` when none clashes.
 */
export function portClash(
  ports: SandboxSpec['ports'],
  sandboxes: Iterable<{ readonly summary: SandboxSummary; readonly spec: SandboxSpec }>,
): string | undefined {
  const wanted = ports.filter((p) => p.hostPort !== undefined);
  if (wanted.length === 0) return undefined;
  const any = (ip: string | undefined) => ip === undefined || ip === '0.0.0.0' || ip === '::';
  const clash = (a: PortBinding, b: PortBinding) =>
    a.hostPort === b.hostPort && a.protocol === b.protocol && (any(a.hostIp) || any(b.hostIp) || a.hostIp === b.hostIp);
  for (const s of sandboxes) {
    const p =
      s.summary.state === 'ready' ? s.spec.ports.find((b) => b.hostPort !== undefined && wanted.some((w) => clash(w, b))) : undefined;
    if (p !== undefined) return `${p.hostPort}/${p.protocol}`;
  }
  return undefined;
}

/**
 * A sandbox just run, with the pod's address in its own (pretend) network from the sandbox's id:
 * `10.88.x.y`, as a CNI bridge would give one; none in a host-network sandbox (the node's).
 */
export function readySandbox(id: string, spec: SandboxSpec, createdAt: number): SandboxSummary {
  const n = Number.parseInt(id, 16);
  const ip = spec.hostNetwork === true ? {} : { ip: `10.88.${(n >> 8) & 255}.${n & 255}` };
  return { id, name: spec.name, labels: { ...spec.labels }, state: 'ready', createdAt, ...ip };
}
