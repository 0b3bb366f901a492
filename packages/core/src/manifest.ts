/**
 * The container manifest of 2014 (what later became a pod), after validation and normalisation.
 * Optional fields stay absent rather than being filled with defaults, so that the spec hash of an
 * old manifest does not change when a later version adds a field.
 */
export interface ContainerManifest {
  readonly version: 'v1beta1';
  /** Unique per host; a DNS label. */
  readonly id: string;
  readonly volumes: readonly Volume[];
  readonly containers: readonly Container[];
  /** What to do when a container exits. Default `Always`. */
  readonly restartPolicy?: RestartPolicy;
  /** Seconds between the stop signal and the kill. Default 30, as in the kubelet. */
  readonly terminationGracePeriodSeconds?: number;
}

export type RestartPolicy = 'Always' | 'OnFailure' | 'Never';
export type PullPolicy = 'Always' | 'IfNotPresent' | 'Never';

export const DEFAULT_GRACE_PERIOD_SECONDS = 30;

/** A liveness check; exactly one of `exec`, `httpGet`, `tcpSocket`. */
export interface Probe {
  readonly exec?: { readonly command: readonly string[] };
  /** Through the host port published for `port` (a number or a port name). */
  readonly httpGet?: { readonly path: string; readonly port: number | string };
  readonly tcpSocket?: { readonly port: number | string };
  readonly initialDelaySeconds: number;
  readonly periodSeconds: number;
  readonly timeoutSeconds: number;
  readonly failureThreshold: number;
}

export interface Volume {
  readonly name: string;
}

export type Protocol = 'TCP' | 'UDP';

export interface Port {
  readonly name?: string;
  readonly containerPort: number;
  /** Absent (or 0 in the input) means the port is not published on the host. */
  readonly hostPort?: number;
  readonly protocol: Protocol;
}

export interface EnvVar {
  readonly name: string;
  readonly value: string;
}

export interface VolumeMount {
  readonly name: string;
  readonly mountPath: string;
  readonly readOnly: boolean;
}

export interface Container {
  readonly name: string;
  readonly image: string;
  readonly command?: readonly string[];
  readonly workingDir?: string;
  readonly ports: readonly Port[];
  readonly env: readonly EnvVar[];
  /** Memory limit in bytes. */
  readonly memory?: number;
  /** Relative CPU shares. */
  readonly cpu?: number;
  readonly volumeMounts: readonly VolumeMount[];
  /** Absent: `Always` for `:latest` or an untagged image, else `IfNotPresent` (the kubelet's rule). */
  readonly imagePullPolicy?: PullPolicy;
  readonly livenessProbe?: Probe;
}

/** The kubelet's default: `:latest` or no tag → `Always`, anything else → `IfNotPresent`. */
export function effectivePullPolicy(container: Pick<Container, 'image' | 'imagePullPolicy'>): PullPolicy {
  if (container.imagePullPolicy !== undefined) return container.imagePullPolicy;
  if (container.image.includes('@')) return 'IfNotPresent'; // pinned by digest
  const lastPart = container.image.slice(container.image.lastIndexOf('/') + 1);
  const tag = lastPart.includes(':') ? lastPart.slice(lastPart.indexOf(':') + 1) : 'latest';
  return tag === 'latest' ? 'Always' : 'IfNotPresent';
}

/** A manifest together with the source that asked for it. */
export interface DesiredPod {
  readonly manifest: ContainerManifest;
  readonly source: string;
}
