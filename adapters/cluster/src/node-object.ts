import type { ImageRecord, NodeAllocatable } from '@kubelet-ts/core';
import type { V1ContainerImage, V1Node, V1NodeCondition, V1NodeStatus, V1Taint } from '@kubernetes/client-node';

/** What the agent says of its host in its Node (`nodeInfo`, read once by `hostFacts`). */
export interface HostFacts {
  /** `PRETTY_NAME` of /etc/os-release. */
  readonly osImage: string;
  readonly kernelVersion: string;
  /** Go's name of the architecture (`amd64`, `arm64`). */
  readonly architecture: string;
  readonly bootID: string;
  readonly machineID: string;
  readonly systemUUID: string;
  /** Every online CPU, in thousandths; all the host's memory in bytes; the disk the pods' volumes are on, in bytes. */
  readonly capacity: { readonly cpuMillis: number; readonly memoryBytes: number; readonly ephemeralStorageBytes: number };
}

/** Everything the Node object is made of. */
export interface NodeSpecFacts {
  readonly name: string;
  /** Its labels beside `kubernetes.io/hostname`, `os` and `arch` (`--node-labels`). */
  readonly labels: Readonly<Record<string, string>>;
  /** `--register-with-taints`. */
  readonly taints: readonly V1Taint[];
  /** `--node-ip`: the Node's InternalIP, where the API server reaches the agent's port. */
  readonly address: string;
  /** The agent's port (`--port`): `daemonEndpoints.kubeletEndpoint.Port`. */
  readonly port: number;
  /** What the node gives its pods (`--max-pods`, capacity less the reservations). */
  readonly allocatable: NodeAllocatable;
  readonly host: HostFacts;
  /** `nodeInfo.kubeletVersion` (see `KUBELET_VERSION`). */
  readonly kubeletVersion: string;
  /** `<engine>://<version>`, as the kubelet writes it (`containerd://1.6.20`). */
  readonly containerRuntimeVersion: string;
  /**
   * `status.declaredFeatures` (Kubernetes 1.35+): what the node declares it can do, which the API
   * server reads; `ExtendWebSocketsToKubelet` makes it pass a client's WebSocket exec, attach and
   * port-forward to the node unchanged instead of translating them to SPDY.
   */
  readonly declaredFeatures?: readonly string[];
}

/**
 * The Node's status with `declaredFeatures`, a field client-node 1.4's models do not have (they would
 * drop it when serialising a typed body; a patch's body is sent as it is).
 */
export type NodeStatusWithFeatures = V1NodeStatus & { declaredFeatures?: string[] | null };

/** The kubelet's limits on `status.images`: the 50 largest images, at most 5 names each. */
const MAX_IMAGES = 50;
const MAX_NAMES = 5;

/** `status.images` as the kubelet's `Images` setter writes it: the largest first, each by its names and size. */
export function nodeImages(images: readonly ImageRecord[]): V1ContainerImage[] {
  return [...images]
    .filter((i) => i.names.length > 0)
    .sort((a, b) => b.sizeBytes - a.sizeBytes)
    .slice(0, MAX_IMAGES)
    .map((i) => ({ names: i.names.slice(0, MAX_NAMES), sizeBytes: i.sizeBytes }));
}

/** The node's health as its conditions say it: ready, or not with why (the agent's health message). */
export interface NodeHealth {
  readonly ready: boolean;
  readonly message?: string;
}

/** The labels every kubelet sets on its Node, then `--node-labels`. */
export function nodeLabels(facts: Pick<NodeSpecFacts, 'name' | 'labels' | 'host'>): Record<string, string> {
  return {
    'beta.kubernetes.io/arch': facts.host.architecture,
    'beta.kubernetes.io/os': 'linux',
    'kubernetes.io/arch': facts.host.architecture,
    'kubernetes.io/hostname': facts.name,
    'kubernetes.io/os': 'linux',
    ...facts.labels,
  };
}

/** The Node as the agent registers it: metadata and spec (taints), and its status. */
export function nodeObject(facts: NodeSpecFacts, health: NodeHealth, now: Date, images: readonly ImageRecord[] = []): V1Node {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: facts.name, labels: nodeLabels(facts) },
    spec: facts.taints.length === 0 ? {} : { taints: [...facts.taints] },
    status: nodeStatus(facts, health, now, [], images),
  };
}

/**
 * The Node's status, as the kubelet's setters make it (`pkg/kubelet/nodestatus/setters.go`):
 * addresses, capacity and allocatable, `nodeInfo`, the daemon endpoint, and the four conditions
 * with the kubelet's reasons and messages. A condition keeps its `lastTransitionTime` from `before`
 * while its status does not change; every condition's `lastHeartbeatTime` is `now`.
 */
export function nodeStatus(
  facts: NodeSpecFacts,
  health: NodeHealth,
  now: Date,
  before: readonly V1NodeCondition[],
  images: readonly ImageRecord[] = [],
): NodeStatusWithFeatures {
  const { host, allocatable } = facts;
  const conditions = nodeConditions(health).map((c) => {
    const was = before.find((b) => b.type === c.type);
    return {
      ...c,
      lastHeartbeatTime: now,
      lastTransitionTime: was?.status === c.status && was.lastTransitionTime ? was.lastTransitionTime : now,
    };
  });
  return {
    addresses: [
      { type: 'InternalIP', address: facts.address },
      { type: 'Hostname', address: facts.name },
    ],
    capacity: {
      cpu: cpuQuantity(host.capacity.cpuMillis),
      memory: `${Math.floor(host.capacity.memoryBytes / 1024)}Ki`,
      'ephemeral-storage': `${Math.floor(host.capacity.ephemeralStorageBytes / 1024)}Ki`,
      pods: String(allocatable.pods ?? 110),
    },
    allocatable: {
      cpu: cpuQuantity(allocatable.cpuMillis ?? host.capacity.cpuMillis),
      memory: `${Math.floor((allocatable.memoryBytes ?? host.capacity.memoryBytes) / 1024)}Ki`,
      'ephemeral-storage': `${Math.floor(host.capacity.ephemeralStorageBytes / 1024)}Ki`,
      pods: String(allocatable.pods ?? 110),
    },
    conditions,
    daemonEndpoints: { kubeletEndpoint: { Port: facts.port } },
    // null, not absent, when none: a patch then removes what an earlier run of the agent declared.
    declaredFeatures:
      facts.declaredFeatures === undefined || facts.declaredFeatures.length === 0 ? null : [...facts.declaredFeatures].sort(),
    images: nodeImages(images),
    nodeInfo: {
      architecture: host.architecture,
      bootID: host.bootID,
      containerRuntimeVersion: facts.containerRuntimeVersion,
      kernelVersion: host.kernelVersion,
      kubeProxyVersion: '',
      kubeletVersion: facts.kubeletVersion,
      machineID: host.machineID,
      operatingSystem: 'linux',
      osImage: host.osImage,
      systemUUID: host.systemUUID,
    },
  };
}

/** A CPU figure as the kubelet writes it: whole CPUs when whole (`2`), else thousandths (`1500m`). */
function cpuQuantity(millis: number): string {
  return millis % 1000 === 0 ? String(millis / 1000) : `${millis}m`;
}

/** The kubelet's four conditions (its pressure conditions are never true here: this agent evicts nothing). */
function nodeConditions(health: NodeHealth): Array<Omit<V1NodeCondition, 'lastHeartbeatTime' | 'lastTransitionTime'>> {
  return [
    { type: 'MemoryPressure', status: 'False', reason: 'KubeletHasSufficientMemory', message: 'kubelet has sufficient memory available' },
    { type: 'DiskPressure', status: 'False', reason: 'KubeletHasNoDiskPressure', message: 'kubelet has no disk pressure' },
    { type: 'PIDPressure', status: 'False', reason: 'KubeletHasSufficientPID', message: 'kubelet has sufficient PID available' },
    health.ready
      ? { type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'kubelet is posting ready status' }
      : { type: 'Ready', status: 'False', reason: 'KubeletNotReady', message: health.message ?? 'the agent is not healthy' },
  ];
}
