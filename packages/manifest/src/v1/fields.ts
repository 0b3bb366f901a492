import { PROBE_FIELD_NAMES } from '@kubelet-ts/core';

/**
 * The fields of a v1 Pod that describe it to a cluster and mean nothing on one host: accepted and
 * ignored, so a manifest written for (or read back from) a cluster runs unchanged. Every other field
 * that is not mapped is refused with its path and "not supported": a field that would change what
 * runs (`initContainers`, `lifecycle`, `hostPID`, …) is never silently dropped. docs/MANIFESTS.md's
 * "Kubernetes v1 Pods" lists these same names.
 */
export const IGNORED_V1_FIELDS = {
  /** Top level: `status` is what a cluster reported, not what is asked for. */
  pod: ['status'],
  metadata: [
    'creationTimestamp',
    'resourceVersion',
    'generation',
    'selfLink',
    'managedFields',
    'ownerReferences',
    'finalizers',
    'generateName',
  ],
  spec: [
    'priority',
    'priorityClassName',
    'preemptionPolicy',
    'schedulerName',
    'tolerations',
    'nodeName',
    'topologySpreadConstraints',
    'serviceAccount',
    // The API server's ServiceAccount admission acts on it (it adds the token's volume); the kubelet never reads it.
    'automountServiceAccountToken',
    'readinessGates',
    'overhead',
    // Gates hold a pod back from the scheduler; a pod given to its node is past it (the kubelet never reads them).
    'schedulingGates',
  ],
  /**
   * `resizePolicy` says whether an in-place resize (the API server's `resize` subresource) restarts
   * the container; a pod given to one host has no such resize: a change of its resources is a new
   * pod, here as for the kubelet's static pods.
   */
  container: ['terminationMessagePath', 'terminationMessagePolicy', 'resizePolicy'],
} as const;

/** The fields that are read (the mapping), per object; anything neither read nor ignored is refused. */
export const MAPPED_V1_FIELDS = {
  pod: ['apiVersion', 'kind', 'metadata', 'spec'],
  metadata: ['name', 'namespace', 'uid', 'labels', 'annotations', 'deletionTimestamp', 'deletionGracePeriodSeconds'],
  spec: [
    'imagePullSecrets',
    'containers',
    'initContainers',
    'volumes',
    'restartPolicy',
    'terminationGracePeriodSeconds',
    'hostNetwork',
    'securityContext',
    'hostname',
    'dnsPolicy',
    'dnsConfig',
    'shareProcessNamespace',
    'hostPID',
    'hostIPC',
    'nodeSelector',
    'affinity',
    'serviceAccountName',
    'enableServiceLinks',
  ],
  container: [
    'name',
    'image',
    'command',
    'args',
    'workingDir',
    'stdin',
    'stdinOnce',
    'tty',
    'env',
    'envFrom',
    'ports',
    'volumeMounts',
    'resources',
    'livenessProbe',
    'readinessProbe',
    'startupProbe',
    'imagePullPolicy',
    'securityContext',
    'restartPolicy',
    'lifecycle',
  ],
  port: ['name', 'containerPort', 'hostPort', 'hostIP', 'protocol'],
  env: ['name', 'value', 'valueFrom'],
  volumeMount: ['name', 'mountPath', 'readOnly', 'mountPropagation', 'subPath'],
  volume: ['name', 'emptyDir', 'hostPath', 'persistentVolumeClaim', 'configMap', 'secret', 'downwardAPI', 'projected'],
  emptyDir: ['medium', 'sizeLimit', 'mode'],
  hostPath: ['path', 'type'],
  resources: ['limits', 'requests'],
  probe: PROBE_FIELD_NAMES,
  /** An entry of `spec.imagePullSecrets`. */
  localObjectReference: ['name'],
} as const;

/** What to write instead of a refused field, where there is something to say. */
export const REFUSED_ADVICE: Readonly<Record<string, string>> = {
  ephemeralContainers: "use the engine's exec to debug a running container",
  subPathExpr: 'write the path itself as subPath',
};
