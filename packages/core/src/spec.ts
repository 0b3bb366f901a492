import { createHash } from 'node:crypto';
import { sysctlNamespace } from './sysctls.js';
import {
  DEFAULT_GRACE_PERIOD_SECONDS,
  type Container,
  type ContainerManifest,
  type LifecycleHandler,
  type Port,
  type Volume,
  type VolumeMount,
} from './manifest.js';
import { Labels, buildContainerName, podIdentityLabels, podUid } from './naming.js';
import { resolveContainerEnv, type NodeCapacity, type PodRuntimeFields } from './container-env.js';
import { containerSecurityOf, withoutEngineDefaults, type ContainerSecurity } from './security.js';
import type { ContainerSpec, Mount, PortBinding } from './runtime.js';
import type { ObjectLookup } from './objects.js';

/**
 * Bump only when the meaning of a field changes. Adding an optional field must not change the
 * hash of a container that does not use it: an agent upgrade would otherwise restart every
 * container on the host (a known kubelet failure), which is why absent fields are left out of the
 * hashed form rather than filled with defaults.
 */
export const SPEC_HASH_VERSION = 1;

/** A stable, versioned hash of what we apply for one container of one manifest. */
export function specHash(manifest: ContainerManifest, container: Container): string {
  // Validated manifests are immutable and each container object belongs to one manifest, so the
  // hash can be remembered per object: a no-op pass over 10,000 pods must not hash 20,000 specs.
  const known = hashes.get(container);
  if (known !== undefined) return known;
  const mounted = new Set(container.volumeMounts.map((m) => m.name));
  // How the agent watches and pulls a container does not change what runs: a new probe or pull
  // policy must not restart it. (The v1 fields of a container, entrypoint, cpuLimitMillis and a
  // port's hostIP, are in `applied` when present, and absent fields are not hashed.)
  const {
    livenessProbe: _probe,
    readinessProbe: _ready,
    startupProbe: _startup,
    imagePullPolicy: _pull,
    // Checked and not applied (one host schedules nothing): a new request restarts nothing.
    memoryRequest: _request,
    securityContext: ownSecurity,
    ...rest
  } = container;
  const security = withoutEngineDefaults(ownSecurity, manifest.securityContext?.seccompProfile);
  const applied = security === undefined ? rest : { ...rest, securityContext: security };
  const hostPaths = mountedHostPaths(manifest, mounted);
  const hashed = {
    container: applied,
    // The pod's ports belong to its shared network namespace: changing any of them replaces the
    // namespace, and with it every container of the pod (as a changed sandbox does in the kubelet).
    podPorts: podPorts(manifest),
    // Only what this container mounts, in name order: reordering or adding other volumes in the
    // manifest changes nothing for this container.
    volumes: [...mounted].sort(),
    // v1 only, each added when present so that no 2014 manifest's hash moves: the host's network
    // replaces the pod's namespace; a mounted volume's host path (or its type) is what is bound.
    ...(manifest.hostNetwork === true ? { hostNetwork: true } : {}),
    ...(manifest.hostPID === true ? { hostPID: true } : {}),
    ...(manifest.hostIPC === true ? { hostIPC: true } : {}),
    ...(hostPaths === undefined ? {} : { hostPaths }),
    // Who every container runs as; the sysctls belong to the pod's sandbox, which carries them.
    ...podSecurityHashed(manifest),
  };
  const digest = createHash('sha256').update(canonicalJson(hashed)).digest('hex').slice(0, 16);
  const hash = `v${SPEC_HASH_VERSION}-${digest}`;
  hashes.set(container, hash);
  return hash;
}

/** The host paths (or claims) of the mounted volumes that have one, by volume name; `undefined` when none does. */
function mountedHostPaths(manifest: ContainerManifest, mounted: ReadonlySet<string>): Record<string, object | undefined> | undefined {
  const bound = manifest.volumes.filter(
    (v) => (v.hostPath !== undefined || v.claim !== undefined || v.files !== undefined || v.emptyDir !== undefined) && mounted.has(v.name),
  );
  // A hostPath is hashed as it was (an agent upgrade must not restart its containers); a claim by
  // its name and mode; a volume of files by being one (what it holds is rewritten in place, as the
  // kubelet updates a ConfigMap's files, and restarts nothing).
  return bound.length === 0
    ? undefined
    : Object.fromEntries(
        bound.map((v) => [
          v.name,
          v.hostPath ?? (v.claim !== undefined ? { claim: v.claim } : v.files !== undefined ? { files: true } : { emptyDir: v.emptyDir }),
        ]),
      );
}

/** The pod's securityContext as a container's hash sees it: all but its sysctls and the engines' defaults; nothing when that leaves nothing. */
function podSecurityHashed(manifest: ContainerManifest): { podSecurity?: object } {
  const { sysctls: _sandbox, ...rest } = manifest.securityContext ?? {};
  const said = withoutEngineDefaults(rest);
  return said === undefined ? {} : { podSecurity: said };
}

const hashes = new WeakMap<Container, string>();
const manifestHashes = new WeakMap<ContainerManifest, readonly string[]>();

/** The spec hash of each container of the manifest, in order, remembered per manifest object. */
export function specHashes(manifest: ContainerManifest): readonly string[] {
  let known = manifestHashes.get(manifest);
  if (known === undefined) manifestHashes.set(manifest, (known = manifest.containers.map((c) => specHash(manifest, c))));
  return known;
}

const initHashes = new WeakMap<ContainerManifest, readonly string[]>();

/** The spec hash of each init container of the manifest, in order (none without). */
export function initSpecHashes(manifest: ContainerManifest): readonly string[] {
  const inits = manifest.initContainers;
  if (inits === undefined) return [];
  let known = initHashes.get(manifest);
  if (known === undefined) initHashes.set(manifest, (known = inits.map((c) => specHash(manifest, c))));
  return known;
}

function toBinding(p: Port): PortBinding {
  return {
    containerPort: p.containerPort,
    ...(p.hostPort === undefined ? {} : { hostPort: p.hostPort }),
    ...(p.hostIP === undefined ? {} : { hostIp: p.hostIP }),
    protocol: p.protocol,
  };
}

/** Every port of the manifest, in container order (its init containers' first: a sidecar's are the pod's too). */
export function podPorts(manifest: ContainerManifest): PortBinding[] {
  const ports = manifest.containers.flatMap((c) => c.ports.map(toBinding));
  return manifest.initContainers === undefined ? ports : [...manifest.initContainers.flatMap((c) => c.ports.map(toBinding)), ...ports];
}

/** JSON with sorted keys, without undefined values or empty lists, so equal specs hash equally. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined && !(Array.isArray(v) && v.length === 0))
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The CFS period a CPU limit is enforced over, in µs (the kubelet's, and the engines' default). */
export const CFS_PERIOD_US = 100_000;
// The kernel's least quota (1 ms); the kubelet raises smaller ones to it (`milliCPUToQuota`).
const MIN_CFS_QUOTA_US = 1_000;

/** The CFS quota (µs per `CFS_PERIOD_US`) of a limit of `millis` thousandths of a CPU: `millis × 100`, at least 1,000. */
export function cfsQuotaOf(millis: number): number {
  return Math.max(MIN_CFS_QUOTA_US, Math.round((millis * CFS_PERIOD_US) / 1000));
}

/** The CPU limit a CFS period and quota enforce, in thousandths of a CPU; `undefined` for none (a quota of 0 or -1). */
export function cpuLimitMillisOf(periodUs: number | undefined, quotaUs: number | undefined): number | undefined {
  if (quotaUs === undefined || quotaUs <= 0) return undefined;
  const period = periodUs === undefined || periodUs <= 0 ? CFS_PERIOD_US : periodUs;
  return Math.round((quotaUs * 1000) / period);
}

/** What `buildContainerSpec` needs beside the manifest: the node, the source, the node's capacity and what only the running pod knows. */
export interface SpecContext extends PodRuntimeFields {
  /** The agent's hostname, written into the node label. */
  readonly node: string;
  readonly source: string;
  /** The node's capacity, what a container without a limit reads as its `limits.cpu`/`limits.memory` (see `resolveContainerEnv`). */
  readonly nodeCapacity?: NodeCapacity;
  /** Set when the container replaces one that exited (see `Labels.restartCount`). */
  readonly restartCount?: number;
  readonly crashStreak?: number;
  /** The ConfigMaps and Secrets of the pod's source; absent, the variables they give are left out (see `EnvContext.objects`). */
  readonly objects?: ObjectLookup;
  /**
   * The agent's seccomp directory (the kubelet's `<root-dir>/seccomp`): a `Localhost` profile's
   * `localhostProfile` is a file under it. Absent, the name stays relative and a runtime refuses it.
   */
  readonly seccompProfileRoot?: string;
}

/** `security` with a Localhost seccomp profile's name made the path of its file under `root`. */
function withSeccompPath(security: ContainerSecurity | undefined, root: string | undefined): ContainerSecurity | undefined {
  const profile = security?.seccomp;
  if (root === undefined || profile?.type !== 'Localhost' || profile.localhostProfile === undefined) return security;
  return { ...security, seccomp: { type: 'Localhost', localhostProfile: `${root.replace(/\/+$/, '')}/${profile.localhostProfile}` } };
}

/** Maps one manifest container onto what the runtime creates, labels included. */
export function buildContainerSpec(manifest: ContainerManifest, container: Container, context: SpecContext): ContainerSpec {
  const volumes = new Map(manifest.volumes.map((v) => [v.name, v]));
  const security = withSeccompPath(containerSecurityOf(manifest, container), context.seccompProfileRoot);
  const uid = podUid(manifest, context);
  const { env, command, entrypoint } = resolveContainerEnv(manifest, container, { ...context, podUid: uid });
  return {
    name: buildContainerName(manifest.id, container.name),
    podId: manifest.id,
    image: container.image,
    ...(command === undefined ? {} : { command }),
    ...(entrypoint === undefined ? {} : { entrypoint }),
    ...(container.workingDir === undefined ? {} : { workingDir: container.workingDir }),
    ...(container.stdin === true ? { stdin: true } : {}),
    ...(container.stdinOnce === true ? { stdinOnce: true } : {}),
    ...(container.tty === true ? { tty: true } : {}),
    env,
    ports: container.ports.map(toBinding),
    mounts: container.volumeMounts.map((m) => mountOf(m, volumes.get(m.name))),
    ...(container.memory === undefined ? {} : { memory: container.memory }),
    ...(container.cpu === undefined ? {} : { cpuShares: container.cpu }),
    ...(container.cpuLimitMillis === undefined ? {} : { cpuLimitMillis: container.cpuLimitMillis }),
    ...(security === undefined ? {} : { security }),
    ...(manifest.shareProcessNamespace === true ? { sharedProcessNamespace: true } : {}),
    ...(manifest.hostPID === true ? { hostPID: true } : {}),
    ...(manifest.hostIPC === true ? { hostIPC: true } : {}),
    ...ipcSysctlsOf(manifest),
    labels: {
      [Labels.manifestId]: manifest.id,
      [Labels.containerName]: container.name,
      [Labels.specHash]: specHash(manifest, container),
      [Labels.source]: context.source,
      [Labels.node]: context.node,
      [Labels.gracePeriod]: String(manifest.terminationGracePeriodSeconds ?? DEFAULT_GRACE_PERIOD_SECONDS),
      ...(manifest.namespace === undefined ? {} : { [Labels.namespace]: manifest.namespace }),
      ...podIdentityLabels(manifest, uid),
      ...(context.restartCount === undefined ? {} : { [Labels.restartCount]: String(context.restartCount) }),
      ...(context.crashStreak === undefined ? {} : { [Labels.crashStreak]: String(context.crashStreak) }),
      ...(container.lifecycle?.preStop === undefined
        ? {}
        : { [Labels.preStop]: JSON.stringify(withPortNumber(container, container.lifecycle.preStop)) }),
    },
  };
}

/** A hook with its httpGet port as a number: a port name is the container's (validation makes sure). */
export function withPortNumber(container: Container, hook: LifecycleHandler): LifecycleHandler {
  const port = hook.httpGet?.port;
  if (hook.httpGet === undefined || typeof port !== 'string') return hook;
  const number = container.ports.find((p) => p.name === port)?.containerPort ?? 0;
  return { httpGet: { ...hook.httpGet, port: number } };
}

function mountOf(m: VolumeMount, volume: Volume | undefined): Mount {
  const base = {
    volume: m.name,
    containerPath: m.mountPath,
    readOnly: m.readOnly,
    ...(m.subPath === undefined ? {} : { subPath: m.subPath }),
  };
  // A volume of files: the directory the agent writes them in (the executor sets it), always read-only.
  if (volume?.files !== undefined) return { ...base, readOnly: true, files: true };
  // A pod volume in memory, or of another mode.
  if (volume?.emptyDir !== undefined) return { ...base, emptyDir: volume.emptyDir };
  // A claim: its named volume, read-only everywhere when the claim says so.
  if (volume?.claim !== undefined) return { ...base, readOnly: m.readOnly || volume.claim.readOnly === true, claim: volume.claim.name };
  // A v1 hostPath volume: its host path, checked by the agent for its type before the create.
  const hostPath = volume?.hostPath;
  if (hostPath !== undefined) return { ...base, hostPath: hostPath.path, ...(hostPath.type ? { hostPathType: hostPath.type } : {}) };
  // 2014's HOST mount: the host directory at the same path, as it is.
  return m.mountType === 'HOST' ? { ...base, hostPath: m.mountPath } : base;
}

/** The pod's sysctls of the IPC namespace, for `ContainerSpec.ipcSysctls`; nothing when there are none. */
function ipcSysctlsOf(manifest: ContainerManifest): { ipcSysctls?: Record<string, string> } {
  const ipc = (manifest.securityContext?.sysctls ?? []).filter((s) => sysctlNamespace(s.name) === 'ipc');
  return ipc.length === 0 ? {} : { ipcSysctls: Object.fromEntries(ipc.map((s) => [s.name, s.value])) };
}
