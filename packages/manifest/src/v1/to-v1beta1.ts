import {
  KubeletError,
  formatFieldErrors,
  withoutEngineDefaults,
  type Container,
  type ContainerManifest,
  type FieldError,
  type Probe,
  type SecurityProfile,
  type VolumeMount,
} from '@kubelet-ts/core';
import { v1PathOf } from './paths.js';

const NO_FORM = 'has no v1beta1 form';

/**
 * A manifest as a 2014 v1beta1 manifest, for people moving a v1 Pod back to the 2014 format. What
 * v1beta1 cannot say (hostNetwork, a securityContext, an entrypoint, readiness and startup probes, a CPU limit, a
 * port's hostIP, a namespace, labels, annotations, a hostPath volume with a type, a probe's host,
 * scheme or headers, a gRPC probe) makes the conversion fail, naming every such field by its v1 path: nothing is
 * dropped silently. A port without `hostPort` is written `hostPort: 0`, the v1beta1 way to keep it
 * unpublished, so `parseManifests(toV1beta1(m))` gives `m` again. A hostPath volume without a
 * type whose every mount is at the host path itself becomes those mounts with `mountType: HOST`.
 *
 * @throws KubeletError `InvalidManifest` with a field error per field that has no v1beta1 form.
 */
export function toV1beta1(manifest: ContainerManifest): Record<string, unknown> {
  const errors: FieldError[] = [];
  const refuse = (domainPath: string): void => void errors.push({ path: v1PathOf(domainPath), message: NO_FORM });
  if (manifest.namespace !== undefined) refuse('namespace');
  if (manifest.deletionTimestamp !== undefined) refuse('deletionTimestamp');
  if (manifest.labels !== undefined) refuse('labels');
  if (manifest.annotations !== undefined) refuse('annotations');
  if (manifest.hostNetwork === true) refuse('hostNetwork');
  if (manifest.initContainers !== undefined) refuse('initContainers');
  if (manifest.hostname !== undefined) refuse('hostname');
  if (manifest.dnsPolicy !== undefined) refuse('dnsPolicy');
  if (manifest.dnsConfig !== undefined) refuse('dnsConfig');
  if (manifest.shareProcessNamespace === true) refuse('shareProcessNamespace');
  if (manifest.nodeSelector !== undefined) refuse('nodeSelector');
  if (manifest.hostPID === true) refuse('hostPID');
  if (manifest.hostIPC === true) refuse('hostIPC');
  if (manifest.nodeAffinity !== undefined) refuse('nodeAffinity');
  if (manifest.imagePullSecrets !== undefined) refuse('imagePullSecrets');
  // What the engines do anyway (a RuntimeDefault seccomp profile) is what a v1beta1 manifest runs with.
  if (withoutEngineDefaults(manifest.securityContext) !== undefined) refuse('securityContext');
  // A hostPath volume v1beta1 can say: no type, and mounted only at the host path itself.
  const hostMountable = new Map<string, string>();
  manifest.volumes.forEach((v, i) => {
    if (v.claim !== undefined) refuse(`volumes[${i}].claim`);
    if (v.files !== undefined) refuse(`volumes[${i}].files`);
    if (v.emptyDir !== undefined) refuse(`volumes[${i}].emptyDir`);
    if (v.hostPath === undefined) return;
    const mounts = manifest.containers.flatMap((c) => c.volumeMounts.filter((m) => m.name === v.name));
    if (v.hostPath.type === undefined && mounts.every((m) => m.mountPath === v.hostPath?.path)) hostMountable.set(v.name, v.hostPath.path);
    else refuse(v.hostPath.type === undefined ? `volumes[${i}].hostPath.path` : `volumes[${i}].hostPath.type`);
  });
  const seccomp = manifest.securityContext?.seccompProfile;
  const containers = manifest.containers.map((c, i) => container(c, `containers[${i}]`, refuse, hostMountable, seccomp));
  if (errors.length > 0) {
    throw new KubeletError('InvalidManifest', `${manifest.id}: ${formatFieldErrors(errors)}`, { fieldErrors: errors });
  }
  return {
    version: 'v1beta1',
    id: manifest.id,
    ...(manifest.uuid === undefined ? {} : { uuid: manifest.uuid }),
    ...(manifest.volumes.length === 0 ? {} : { volumes: manifest.volumes.map((v) => ({ name: v.name })) }),
    containers,
    ...(manifest.restartPolicy === undefined ? {} : { restartPolicy: manifest.restartPolicy }),
    ...(manifest.terminationGracePeriodSeconds === undefined
      ? {}
      : { terminationGracePeriodSeconds: manifest.terminationGracePeriodSeconds }),
  };
}

function container(
  c: Container,
  path: string,
  refuse: (path: string) => void,
  hostMountable: ReadonlyMap<string, string>,
  seccomp: SecurityProfile | undefined,
): Record<string, unknown> {
  if (c.entrypoint !== undefined) refuse(`${path}.entrypoint`);
  if (c.cpuLimitMillis !== undefined) refuse(`${path}.cpuLimitMillis`);
  if (c.memoryRequest !== undefined) refuse(`${path}.memoryRequest`);
  c.env.forEach((e, j) => e.valueFrom !== undefined && refuse(`${path}.env[${j}].valueFrom`));
  if (c.envFrom !== undefined) refuse(`${path}.envFrom`);
  if (c.lifecycle !== undefined) refuse(`${path}.lifecycle`);
  for (const field of ['stdin', 'stdinOnce', 'tty'] as const) if (c[field] === true) refuse(`${path}.${field}`);
  c.volumeMounts.forEach((m, j) => m.subPath !== undefined && refuse(`${path}.volumeMounts[${j}].subPath`));
  if (c.readinessProbe !== undefined) refuse(`${path}.readinessProbe`);
  if (c.startupProbe !== undefined) refuse(`${path}.startupProbe`);
  if (withoutEngineDefaults(c.securityContext, seccomp) !== undefined) refuse(`${path}.securityContext`);
  c.ports.forEach((p, j) => p.hostIP !== undefined && refuse(`${path}.ports[${j}].hostIP`));
  if (c.livenessProbe !== undefined) probeFields(c.livenessProbe, `${path}.livenessProbe`, refuse);
  const mount = (m: VolumeMount) => ({
    name: m.name,
    mountPath: m.mountPath,
    ...(m.readOnly ? { readOnly: true } : {}),
    ...(m.mountType === 'HOST' || hostMountable.has(m.name) ? { mountType: 'HOST' } : {}),
  });
  return {
    name: c.name,
    image: c.image,
    ...(c.command === undefined ? {} : { command: [...c.command] }),
    ...(c.workingDir === undefined ? {} : { workingDir: c.workingDir }),
    ...(c.ports.length === 0
      ? {}
      : {
          ports: c.ports.map((p) => ({
            ...(p.name === undefined ? {} : { name: p.name }),
            containerPort: p.containerPort,
            // 0 written out keeps the port unpublished in a manifest that names its version.
            hostPort: p.hostPort ?? 0,
            protocol: p.protocol,
          })),
        }),
    ...(c.env.length === 0 ? {} : { env: c.env.map((e) => ({ name: e.name, value: e.value })) }),
    ...(c.memory === undefined ? {} : { memory: c.memory }),
    ...(c.cpu === undefined ? {} : { cpu: c.cpu }),
    ...(c.volumeMounts.length === 0 ? {} : { volumeMounts: c.volumeMounts.map(mount) }),
    ...(c.imagePullPolicy === undefined ? {} : { imagePullPolicy: c.imagePullPolicy }),
    ...(c.livenessProbe === undefined ? {} : { livenessProbe: c.livenessProbe }),
  };
}

function probeFields(p: Probe, path: string, refuse: (path: string) => void): void {
  if (p.httpGet?.host !== undefined) refuse(`${path}.httpGet.host`);
  if (p.httpGet?.scheme !== undefined) refuse(`${path}.httpGet.scheme`);
  if (p.httpGet?.httpHeaders !== undefined) refuse(`${path}.httpGet.httpHeaders`);
  if (p.tcpSocket?.host !== undefined) refuse(`${path}.tcpSocket.host`);
  if (p.grpc !== undefined) refuse(`${path}.grpc`);
  if (p.successThreshold !== undefined) refuse(`${path}.successThreshold`);
}
