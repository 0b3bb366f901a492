import type { SandboxSpec } from '@kubelet-ts/core';
import type { PodSandboxConfig, PodSandboxStatus, PortMapping } from './cri-api.js';
import { CriAnnotations } from './mapping.js';

/** The CRI pod namespace of every sandbox the agent runs (manifests have no namespace of their own). */
export const CRI_NAMESPACE = 'kubelet-ts';

// The kubelet's defaults for a pod without a security context: the pod shares network and IPC,
// each container has its own PID namespace, the runtime's default seccomp profile (as Docker).
export const SECURITY_CONTEXT = {
  namespaceOptions: { network: 'POD', pid: 'CONTAINER', ipc: 'POD' },
  seccomp: { profileType: 'RuntimeDefault' },
} as const;

/**
 * What a sandbox was run with, kept as its annotation: CreateContainer wants the sandbox's config
 * again, and after an agent restart the runtime is the only place to read it from.
 */
type SandboxConfigRecord = Omit<PodSandboxConfig, 'labels' | 'annotations'>;

export interface SandboxConfigOptions {
  /** '' for every address. */
  readonly hostIp: string;
  readonly logDirectory?: string;
  readonly cgroupParent?: string;
}

/** RunPodSandbox's config for `spec`; its labels are the spec's, unchanged. */
export function buildSandboxConfig(spec: SandboxSpec, options: SandboxConfigOptions): PodSandboxConfig {
  // A host-network sandbox is in the node's network namespace (NODE, as the kubelet asks for a
  // hostNetwork pod): no CNI, so nothing to publish, and no hostname, which the runtime cannot set
  // without a UTS namespace of the pod's own.
  const hostNetwork = spec.hostNetwork === true;
  const record: SandboxConfigRecord = {
    // The pod's identity is its manifest id; the name (with its random part) is the sandbox's.
    metadata: { name: spec.name, uid: spec.podId, namespace: CRI_NAMESPACE, attempt: 0 },
    ...(hostNetwork ? {} : { hostname: spec.hostname }),
    ...(options.logDirectory === undefined ? {} : { logDirectory: options.logDirectory }),
    // The pod's resolver, which the runtime writes as its resolv.conf, as the kubelet asks for it.
    ...(spec.dns === undefined
      ? {}
      : { dnsConfig: { servers: [...spec.dns.servers], searches: [...spec.dns.searches], options: [...spec.dns.options] } }),
    portMappings: hostNetwork
      ? []
      : spec.ports.flatMap((p) =>
          p.hostPort === undefined
            ? []
            : [
                {
                  protocol: p.protocol,
                  containerPort: p.containerPort,
                  hostPort: p.hostPort,
                  hostIp: criHostIp(p.hostIp ?? options.hostIp),
                },
              ],
        ),
    linux: {
      ...(options.cgroupParent === undefined ? {} : { cgroupParent: options.cgroupParent }),
      // The pod's sysctls, set by the runtime in the sandbox's namespaces, as the kubelet asks for them.
      ...(spec.sysctls === undefined ? {} : { sysctls: { ...spec.sysctls } }),
      securityContext: {
        ...SECURITY_CONTEXT,
        namespaceOptions: {
          ...SECURITY_CONTEXT.namespaceOptions,
          ...(hostNetwork ? { network: 'NODE' as const } : {}),
          // One process namespace for the pod, the sandbox's, as the kubelet asks for shareProcessNamespace.
          ...(spec.shareProcessNamespace === true ? { pid: 'POD' as const } : {}),
          // The host's process and IPC namespaces (v1 hostPID, hostIPC), as the kubelet asks for them.
          ...(spec.hostPID === true ? { pid: 'NODE' as const } : {}),
          ...(spec.hostIPC === true ? { ipc: 'NODE' as const } : {}),
        },
        // containerd runs a privileged container only in a privileged sandbox, as the kubelet asks for one.
        ...(spec.privileged === true ? { privileged: true } : {}),
      },
    },
  };
  return { ...record, labels: { ...spec.labels }, annotations: { [CriAnnotations.sandboxConfig]: JSON.stringify(record) } };
}

/** CRI's empty host IP is "every address" (portmap is then given no `-d`). */
function criHostIp(ip: string): string {
  return ip === '0.0.0.0' ? '' : ip;
}

/** What a sandbox of ours was run with; `undefined` for one made by someone else. */
export function recordOf(annotations: Readonly<Record<string, string>> | undefined): SandboxConfigRecord | undefined {
  const text = annotations?.[CriAnnotations.sandboxConfig];
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as SandboxConfigRecord;
  } catch {
    return undefined;
  }
}

/** The config CreateContainer wants: what the sandbox was run with (a foreign sandbox: what its status tells). */
export function sandboxConfigOf(status: PodSandboxStatus): PodSandboxConfig {
  const record = recordOf(status.annotations) ?? { metadata: status.metadata ?? { name: '', uid: '', namespace: '', attempt: 0 } };
  return { ...record, labels: status.labels ?? {}, annotations: status.annotations ?? {} };
}

/** The host ports in containerd's verbose sandbox status (the config it was run with, as snake_case JSON). */
export function portsOfVerboseInfo(info: Readonly<Record<string, string>>): PortMapping[] {
  try {
    const parsed = JSON.parse(info['info'] ?? '{}') as {
      config?: { port_mappings?: Array<{ protocol?: number; container_port?: number; host_port?: number; host_ip?: string }> };
    };
    return (parsed.config?.port_mappings ?? [])
      .filter((p) => (p.host_port ?? 0) > 0)
      .map((p) => ({
        protocol: p.protocol === 1 ? 'UDP' : p.protocol === 2 ? 'SCTP' : 'TCP',
        containerPort: p.container_port ?? 0,
        hostPort: p.host_port ?? 0,
        hostIp: p.host_ip ?? '',
      }));
  } catch {
    return [];
  }
}
