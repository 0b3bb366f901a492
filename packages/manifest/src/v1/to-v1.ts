import {
  podNameOf,
  type Container,
  type ContainerManifest,
  type EnvVar,
  type FileSource,
  type Probe,
  type VolumeFiles,
  type VolumeMount,
  type EmptyDir,
  type V1Container,
  type V1EmptyDirVolumeSource,
  type V1EnvVar,
  type V1ObjectMeta,
  type V1Probe,
  type V1ResourceFieldSelector,
  type V1Volume,
  type V1Pod as CoreV1Pod,
  type V1PodSpec,
} from '@kubelet-ts/core';
import { formatBytes, millisOfShares } from './quantity.js';

/**
 * A plain Kubernetes v1 Pod object, as `kubectl get pod -o json` shows one (spec and metadata
 * only): the shared v1 type (`V1Pod` of `@kubelet-ts/core`) with what `toV1Pod` always writes.
 */
export interface V1Pod extends CoreV1Pod {
  apiVersion: 'v1';
  kind: 'Pod';
  metadata: V1ObjectMeta & { name: string };
  spec: V1PodSpec & { volumes?: Array<V1Volume & { emptyDir?: EmptyDirWithMode }> };
}

/**
 * A manifest as a Kubernetes v1 Pod, whichever format it was written in. A v1 Pod comes back as
 * it was read (`parseManifests(toV1Pod(m))` gives `m` again); a 2014 manifest is written as its v1
 * meaning:
 * - `command` (Docker's Cmd) becomes `args`; `entrypoint` is `command`;
 * - `memory` becomes `resources.limits.memory` (`Mi` when exact, else bytes), CPU shares become
 *   `resources.requests.cpu` in millicores, `ceil(shares × 1000 / 1024)`: the smallest request whose
 *   kubelet shares (`floor(milli × 1024 / 1000)`, at least 2) are the same, when one exists (a
 *   `cpuLimitMillis` without shares reads back with the limit's shares, as Kubernetes defaults a
 *   request to the limit);
 * - a published port keeps its `hostPort`, an unpublished one has none (v1's meaning);
 * - a 2014 `mountType: HOST` mount becomes a `hostPath` volume of its own, and the 2014 volumes
 *   `emptyDir` volumes.
 */
export function toV1Pod(manifest: ContainerManifest): V1Pod {
  const volumes: Array<V1Volume & { emptyDir?: EmptyDirWithMode }> = manifest.volumes.map((v) =>
    v.files !== undefined
      ? { name: v.name, ...filesVolume(v.files) }
      : v.claim !== undefined
        ? { name: v.name, persistentVolumeClaim: { claimName: v.claim.name, ...(v.claim.readOnly === true ? { readOnly: true } : {}) } }
        : v.hostPath === undefined
          ? { name: v.name, emptyDir: v.emptyDir === undefined ? {} : emptyDir(v.emptyDir) }
          : { name: v.name, hostPath: { path: v.hostPath.path, ...(v.hostPath.type === undefined ? {} : { type: v.hostPath.type }) } },
  );
  const taken = new Set(manifest.volumes.map((v) => v.name));
  const hostVolume = (mount: VolumeMount): string => {
    const name = freeName(`${mount.name}-host`, taken);
    volumes.push({ name, hostPath: { path: mount.mountPath } });
    return name;
  };
  const containers = manifest.containers.map((c) => container(c, hostVolume));
  const initContainers = manifest.initContainers?.map((c) => container(c, hostVolume));
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      // The id without the `.<namespace>` that `v1PodId` added to it.
      name: podNameOf(manifest.id, manifest.namespace),
      ...(manifest.namespace === undefined ? {} : { namespace: manifest.namespace }),
      ...(manifest.uuid === undefined ? {} : { uid: manifest.uuid }),
      ...(manifest.deletionTimestamp === undefined ? {} : { deletionTimestamp: manifest.deletionTimestamp }),
      ...(manifest.deletionGracePeriodSeconds === undefined ? {} : { deletionGracePeriodSeconds: manifest.deletionGracePeriodSeconds }),
      ...(manifest.labels === undefined ? {} : { labels: { ...manifest.labels } }),
      ...(manifest.annotations === undefined ? {} : { annotations: { ...manifest.annotations } }),
    },
    spec: {
      ...(manifest.hostNetwork === true ? { hostNetwork: true } : {}),
      ...(manifest.securityContext === undefined ? {} : { securityContext: plain(manifest.securityContext) }),
      ...(manifest.hostname === undefined ? {} : { hostname: manifest.hostname }),
      ...(manifest.dnsPolicy === undefined ? {} : { dnsPolicy: manifest.dnsPolicy }),
      ...(manifest.dnsConfig === undefined ? {} : { dnsConfig: plain(manifest.dnsConfig) }),
      ...(manifest.shareProcessNamespace === true ? { shareProcessNamespace: true } : {}),
      ...(manifest.hostPID === true ? { hostPID: true } : {}),
      ...(manifest.hostIPC === true ? { hostIPC: true } : {}),
      ...(manifest.nodeSelector === undefined ? {} : { nodeSelector: { ...manifest.nodeSelector } }),
      ...(manifest.nodeAffinity === undefined
        ? {}
        : { affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: plain(manifest.nodeAffinity) } } }),
      ...(manifest.serviceAccountName === undefined ? {} : { serviceAccountName: manifest.serviceAccountName }),
      ...(manifest.enableServiceLinks === false ? { enableServiceLinks: false } : {}),
      ...(manifest.restartPolicy === undefined ? {} : { restartPolicy: manifest.restartPolicy }),
      ...(manifest.terminationGracePeriodSeconds === undefined
        ? {}
        : { terminationGracePeriodSeconds: manifest.terminationGracePeriodSeconds }),
      ...(initContainers === undefined ? {} : { initContainers }),
      containers,
      ...(volumes.length === 0 ? {} : { volumes }),
      ...(manifest.imagePullSecrets === undefined ? {} : { imagePullSecrets: manifest.imagePullSecrets.map((name) => ({ name })) }),
    },
  };
}

/** v1's `emptyDir`, and the mode of its directory: this agent's one addition to a v1 Pod (see docs/MANIFESTS.md's table). */
type EmptyDirWithMode = V1EmptyDirVolumeSource & { mode?: number };

function emptyDir(e: EmptyDir): EmptyDirWithMode {
  return {
    ...(e.medium === undefined ? {} : { medium: e.medium }),
    ...(e.sizeLimit === undefined ? {} : { sizeLimit: formatBytes(e.sizeLimit) }),
    ...(e.mode === undefined ? {} : { mode: e.mode }),
  };
}

/** A value's own copy, as the mutable JSON the v1 types describe (the domain's are read-only). */
type Plain<T> = T extends readonly (infer U)[] ? Plain<U>[] : T extends object ? { -readonly [K in keyof T]: Plain<T[K]> } : T;
function plain<T>(value: T): Plain<T> {
  return structuredClone(value) as Plain<T>;
}

function freeName(wanted: string, taken: Set<string>): string {
  const base = wanted.slice(0, 55).replace(/-+$/, '');
  let name = base;
  for (let i = 2; taken.has(name); i++) name = `${base}-${i}`;
  taken.add(name);
  return name;
}

function container(c: Container, hostVolume: (m: VolumeMount) => string): V1Container {
  const limits = {
    ...(c.cpuLimitMillis === undefined ? {} : { cpu: `${c.cpuLimitMillis}m` }),
    ...(c.memory === undefined ? {} : { memory: formatBytes(c.memory) }),
  };
  const requests = {
    ...(c.cpu === undefined ? {} : { cpu: `${millisOfShares(c.cpu)}m` }),
    ...(c.memoryRequest === undefined ? {} : { memory: formatBytes(c.memoryRequest) }),
  };
  const resources = {
    ...(Object.keys(limits).length === 0 ? {} : { limits }),
    ...(Object.keys(requests).length === 0 ? {} : { requests }),
  };
  return {
    name: c.name,
    image: c.image,
    ...(c.entrypoint === undefined ? {} : { command: [...c.entrypoint] }),
    ...(c.command === undefined ? {} : { args: [...c.command] }),
    ...(c.workingDir === undefined ? {} : { workingDir: c.workingDir }),
    ...(c.stdin === true ? { stdin: true } : {}),
    ...(c.stdinOnce === true ? { stdinOnce: true } : {}),
    ...(c.tty === true ? { tty: true } : {}),
    ...(c.ports.length === 0
      ? {}
      : {
          ports: c.ports.map((p) => ({
            ...(p.name === undefined ? {} : { name: p.name }),
            containerPort: p.containerPort,
            ...(p.hostPort === undefined ? {} : { hostPort: p.hostPort }),
            ...(p.hostIP === undefined ? {} : { hostIP: p.hostIP }),
            protocol: p.protocol,
          })),
        }),
    ...(c.envFrom === undefined ? {} : { envFrom: plain(c.envFrom) }),
    ...(c.env.length === 0 ? {} : { env: c.env.map(envVar) }),
    ...(Object.keys(resources).length === 0 ? {} : { resources }),
    ...(c.volumeMounts.length === 0
      ? {}
      : {
          volumeMounts: c.volumeMounts.map((m) => ({
            name: m.mountType === 'HOST' ? hostVolume(m) : m.name,
            mountPath: m.mountPath,
            ...(m.readOnly ? { readOnly: true } : {}),
            ...(m.subPath === undefined ? {} : { subPath: m.subPath }),
          })),
        }),
    ...(c.imagePullPolicy === undefined ? {} : { imagePullPolicy: c.imagePullPolicy }),
    ...(c.livenessProbe === undefined ? {} : { livenessProbe: probe(c.livenessProbe) }),
    ...(c.readinessProbe === undefined ? {} : { readinessProbe: probe(c.readinessProbe) }),
    ...(c.startupProbe === undefined ? {} : { startupProbe: probe(c.startupProbe) }),
    ...(c.securityContext === undefined ? {} : { securityContext: plain(c.securityContext) }),
    ...(c.restartPolicy === undefined ? {} : { restartPolicy: c.restartPolicy }),
    ...(c.lifecycle === undefined ? {} : { lifecycle: plain(c.lifecycle) }),
  };
}

/** A volume of files as the v1 volume it reads back from: one source as its own kind, several as `projected`. */
function filesVolume(files: VolumeFiles): Omit<V1Volume, 'name'> {
  const mode = files.defaultMode === undefined ? {} : { defaultMode: files.defaultMode };
  const sources = files.sources.map((s) => plain(downwardDivisors(s)) as Record<string, Record<string, unknown>>);
  const [only] = files.sources;
  if (files.sources.length !== 1 || only === undefined || only.serviceAccountToken !== undefined)
    return { projected: { sources, ...mode } };
  if (only.configMap !== undefined) return { configMap: { ...sources[0]?.['configMap'], ...mode } };
  if (only.secret !== undefined) {
    const { name, ...rest } = only.secret;
    return { secret: { secretName: name, ...plain(rest), ...mode } };
  }
  return { downwardAPI: { ...sources[0]?.['downwardAPI'], ...mode } };
}

/** A downward source with each divisor as the quantity v1 writes (`500m`, `1Mi` as bytes). */
function downwardDivisors(s: FileSource): FileSource {
  if (s.downwardAPI === undefined) return s;
  return {
    downwardAPI: {
      items: s.downwardAPI.items.map((i) =>
        i.resourceFieldRef === undefined ? i : { ...i, resourceFieldRef: divisorOf(i.resourceFieldRef) as never },
      ),
    },
  };
}

function divisorOf(ref: {
  readonly containerName?: string;
  readonly resource: string;
  readonly divisor?: number;
}): V1ResourceFieldSelector {
  const cpu = ref.resource.endsWith('.cpu');
  const { divisor, ...rest } = ref;
  return divisor === undefined ? { ...rest } : { ...rest, divisor: cpu ? `${divisor}m` : String(divisor) };
}

function envVar(e: EnvVar): V1EnvVar {
  const ref = e.valueFrom?.resourceFieldRef;
  if (ref !== undefined) return { name: e.name, valueFrom: { resourceFieldRef: divisorOf(ref) } };
  if (e.valueFrom !== undefined) {
    const { resourceFieldRef: _, ...others } = e.valueFrom;
    return { name: e.name, valueFrom: plain(others) };
  }
  return { name: e.name, value: e.value };
}

function probe(p: Probe): V1Probe {
  const handler =
    p.exec !== undefined
      ? { exec: { command: [...p.exec.command] } }
      : p.httpGet !== undefined
        ? {
            httpGet: {
              path: p.httpGet.path,
              port: p.httpGet.port,
              ...(p.httpGet.host === undefined ? {} : { host: p.httpGet.host }),
              ...(p.httpGet.scheme === undefined ? {} : { scheme: p.httpGet.scheme }),
              ...(p.httpGet.httpHeaders === undefined
                ? {}
                : { httpHeaders: p.httpGet.httpHeaders.map((h) => ({ name: h.name, value: h.value })) }),
            },
          }
        : p.grpc !== undefined
          ? { grpc: { port: p.grpc.port, ...(p.grpc.service === undefined ? {} : { service: p.grpc.service }) } }
          : { tcpSocket: { port: p.tcpSocket!.port, ...(p.tcpSocket?.host === undefined ? {} : { host: p.tcpSocket.host }) } };
  return {
    ...handler,
    initialDelaySeconds: p.initialDelaySeconds,
    periodSeconds: p.periodSeconds,
    timeoutSeconds: p.timeoutSeconds,
    failureThreshold: p.failureThreshold,
    successThreshold: p.successThreshold ?? 1,
  };
}
