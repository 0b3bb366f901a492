import { createHash } from 'node:crypto';
import { podDns, type ResolverConfig } from './dns.js';
import type { ContainerManifest } from './manifest.js';
import { Labels, buildContainerName, escapeNamePart, isManifestId, podIdentityLabels, podKeyOf, podNameOf, podUid } from './naming.js';
import type { PortBinding } from './runtime.js';
import type { Sysctl } from './security.js';
import { canonicalJson, initSpecHashes, podPorts } from './spec.js';

export { podUid } from './naming.js';

/**
 * What the agent asks a runtime to run for one pod: the shared network namespace its containers
 * join (CRI's pod sandbox; the Docker adapter's infrastructure container). Its ports are the pod's,
 * published once for all its containers, which reach each other on `127.0.0.1`.
 */
export interface SandboxSpec {
  /** The sandbox's name on the runtime: `POD--<manifest id>--<8 hex>`. */
  readonly name: string;
  readonly podId: string;
  /** The pod's hostname: its name (its manifest id without the namespace), cut to the 63 characters a hostname may have (see `podHostname`). */
  readonly hostname: string;
  /** Every port of the pod, in container order; empty in a `hostNetwork` sandbox, whose ports are the host's. */
  readonly ports: readonly PortBinding[];
  /**
   * The sandbox joins the host's network namespace instead of making one (a v1 Pod's
   * `hostNetwork`): containers in it see the host's interfaces and ports, and no hostname is set.
   */
  readonly hostNetwork?: boolean;
  /**
   * A container of the pod runs privileged (v1 `securityContext.privileged`): a CRI runtime
   * allows privileged containers only in a sandbox made privileged, as the kubelet makes it.
   */
  readonly privileged?: boolean;
  /** The pod's containers share one process namespace, the sandbox's (v1 `shareProcessNamespace`). */
  readonly shareProcessNamespace?: boolean;
  /** The pod is in the host's process / IPC namespace (v1 `hostPID`, `hostIPC`). */
  readonly hostPID?: boolean;
  readonly hostIPC?: boolean;
  /**
   * Kernel parameters set in the pod's network and IPC namespaces (v1
   * `securityContext.sysctls`, checked: namespaced, safe or allowed), by name.
   */
  readonly sysctls?: Readonly<Record<string, string>>;
  /**
   * The resolver the pod's containers get (its `/etc/resolv.conf`), from its `dnsPolicy` and
   * `dnsConfig` and the host's (see `podDns`); absent, the engine's own (the host's, as it copies it).
   */
  readonly dns?: ResolverConfig;
  /**
   * The pod as the kubelet names it (`/pods` shows the same): its namespace (`default` for a pod
   * without one), its name and its uid (see `podUid`). What a runtime that lays out files per pod
   * names them after (CRI's log directory, `<namespace>_<name>_<uid>`, as the kubelet's).
   * Optional for specs made before it; a runtime then names the pod after `podId`.
   */
  readonly pod?: { readonly namespace: string; readonly name: string; readonly uid: string };
  /** Stored with the sandbox and returned by `listSandboxes` unchanged (see `Labels.sandbox`). */
  readonly labels: Readonly<Record<string, string>>;
}

/** `ready`: its namespace is up and containers may join it. Anything else is `notready` (dead). */
export type SandboxState = 'ready' | 'notready';

/** A sandbox as `listSandboxes` sees it. Times are milliseconds since the epoch. */
export interface SandboxSummary {
  readonly id: string;
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly state: SandboxState;
  readonly createdAt: number;
  /**
   * The pod's IP address in its own network namespace, where the runtime knows it (a ready
   * sandbox's; none in a host-network sandbox, whose address is the node's): `status.podIP`.
   */
  readonly ip?: string;
}

// What the agent writes as a sandbox hash: 16 hex digits.
const SANDBOX_HASH = /^[0-9a-f]{16}$/;
const SANDBOX_NAME = /^POD--([A-Za-z0-9._-]+)--[0-9a-f]{8}$/;

/**
 * The hash of what a sandbox is made with: the pod's ports (the one thing fixed when a namespace
 * is made), and with `hostNetwork` the host's network instead. Written as the
 * `io.kubelet-ts.pod-ports-hash` label, exactly as the release before pods were explicit wrote it
 * on its infrastructure containers (the ports alone, hostNetwork false or absent), so an upgraded
 * agent adopts them.
 */
export function sandboxHash(ports: readonly PortBinding[], hostNetwork = false): string {
  // A host-network sandbox publishes nothing: its ports are the host's, and changing them needs no new one.
  const made = hostNetwork ? { hostNetwork: true } : ports;
  return createHash('sha256').update(canonicalJson(made)).digest('hex').slice(0, 16);
}

/** The sandbox hash of every host-network sandbox (see `sandboxHash`): how a runtime knows a holder on the host's network is meant to be there. */
export const HOST_NETWORK_SANDBOX_HASH = sandboxHash([], true);

/** The sandbox hash a manifest's sandbox is made with. */
export function manifestSandboxHash(manifest: ContainerManifest): string {
  let hash = manifest.hostNetwork === true ? HOST_NETWORK_SANDBOX_HASH : sandboxHash(podPorts(manifest));
  const again = (more: string) => createHash('sha256').update(`${hash}\n${more}`).digest('hex').slice(0, 16);
  // A privileged sandbox is another sandbox (CRI makes it so); no other pod's hash moves.
  if (hasPrivilegedContainer(manifest)) hash = again('privileged');
  // Changed init containers run again, from the start, in a new sandbox (a changed static pod is a new pod to the kubelet).
  if (manifest.initContainers !== undefined) hash = again(`init:${initSpecHashes(manifest).join(',')}`);
  if (manifest.hostname !== undefined) hash = again(`hostname:${manifest.hostname}`);
  if (manifest.shareProcessNamespace === true) hash = again('share-process-namespace');
  if (manifest.hostPID === true) hash = again('host-pid');
  if (manifest.hostIPC === true) hash = again('host-ipc');
  const sysctls = manifest.securityContext?.sysctls;
  if (sysctls !== undefined && sysctls.length > 0) hash = again(`sysctls:${canonicalJson(sysctlsOf(sysctls))}`);
  // The pod's own DNS settings, not the host's they are merged with: a host's resolv.conf that
  // changes reaches new sandboxes, as in the kubelet, and replaces none. A policy that makes no
  // difference here (Default, ClusterFirst…: the host's) moves no hash.
  if (manifest.dnsConfig !== undefined || manifest.dnsPolicy === 'None')
    hash = again(`dns:${canonicalJson({ policy: manifest.dnsPolicy ?? null, config: manifest.dnsConfig ?? null })}`);
  return hash;
}

/** A pod's sysctls by name. */
function sysctlsOf(sysctls: readonly Sysctl[]): Record<string, string> {
  return Object.fromEntries(sysctls.map((s) => [s.name, s.value]));
}

/** Whether a container of the manifest asks to run privileged. */
export function hasPrivilegedContainer(manifest: Pick<ContainerManifest, 'containers' | 'initContainers'>): boolean {
  return [...(manifest.initContainers ?? []), ...manifest.containers].some((c) => c.securityContext?.privileged === true);
}

/**
 * The hostname of a pod: its id, or for an id longer than a hostname may be (63 characters, what
 * Linux's sethostname and the engines take) its first 63, without a trailing '-' or '.' (the rule
 * the kubelet later adopted). Ids of 63 characters or fewer, every id before ids could be
 * subdomains, are unchanged.
 */
export function podHostname(id: string): string {
  return id.length <= 63 ? id : id.slice(0, 63).replace(/[-.]+$/, '');
}

/** The sandbox a manifest needs on `node`; `hostDns`, the host's resolver (`--resolv-conf`), which a pod's `dnsConfig` adds to. */
export function buildSandboxSpec(
  manifest: ContainerManifest,
  context: { readonly node: string; readonly source: string; readonly hostDns?: ResolverConfig | undefined },
): SandboxSpec {
  const hostNetwork = manifest.hostNetwork === true;
  const dns = podDns(manifest, context.hostDns);
  const uid = podUid(manifest, context);
  return {
    name: buildContainerName(manifest.id, 'POD'),
    podId: manifest.id,
    pod: podKeyOf(manifest, uid),
    // The pod's name, as the kubelet names the host (a v1 Pod's id also holds its namespace).
    hostname: manifest.hostname ?? podHostname(podNameOf(manifest.id, manifest.namespace)),
    ports: hostNetwork ? [] : podPorts(manifest),
    ...(hostNetwork ? { hostNetwork: true } : {}),
    ...(hasPrivilegedContainer(manifest) ? { privileged: true } : {}),
    ...(manifest.shareProcessNamespace === true ? { shareProcessNamespace: true } : {}),
    ...(manifest.hostPID === true ? { hostPID: true } : {}),
    ...(manifest.hostIPC === true ? { hostIPC: true } : {}),
    ...(manifest.securityContext?.sysctls === undefined || manifest.securityContext.sysctls.length === 0
      ? {}
      : { sysctls: sysctlsOf(manifest.securityContext.sysctls) }),
    ...(dns === undefined ? {} : { dns }),
    labels: {
      [Labels.sandbox]: manifest.id,
      [Labels.sandboxHash]: manifestSandboxHash(manifest),
      [Labels.node]: context.node,
      [Labels.source]: context.source,
      ...(manifest.namespace === undefined ? {} : { [Labels.namespace]: manifest.namespace }),
      ...podIdentityLabels(manifest, uid),
    },
  };
}

/**
 * Whether the sandbox is one the agent on `node` made: our labels with the values the agent gives
 * them, and a name of our form for that pod. A namespace holder someone else made (even labelled as
 * ours by hand) is never joined, stopped or removed. Allocates nothing.
 */
export function isManagedSandbox(
  sandbox: { readonly name: string; readonly labels: Readonly<Record<string, string>> },
  node: string,
): boolean {
  const { labels } = sandbox;
  const podId = labels[Labels.sandbox];
  const hash = labels[Labels.sandboxHash];
  if (node === '' || labels[Labels.node] !== node || podId === undefined || hash === undefined) return false;
  if (!isManifestId(podId) || !SANDBOX_HASH.test(hash)) return false;
  const name = SANDBOX_NAME.exec(sandbox.name.replace(/^\//, ''));
  return name !== null && name[1] === escapeNamePart(podId);
}
