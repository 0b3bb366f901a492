/**
 * The container manifest of 2014 (what later became a pod), after validation and normalisation.
 * Optional fields stay absent rather than being filled with defaults, so that the spec hash of an
 * old manifest does not change when a later version adds a field.
 */
export interface ContainerManifest {
  /**
   * The version a manifest is written in, as input: it changes a meaning (in a manifest that names
   * its version, a port without `hostPort` is published on its `containerPort`, the 2014 rule; see
   * `Port.hostPort`). Validation applies that meaning and leaves the version out of the manifest it
   * returns, so that a validated manifest validates again to itself: kept, it would publish a port
   * that `hostPort: 0` had kept unpublished.
   */
  readonly version?: ManifestVersion;
  /**
   * Unique per host; a DNS subdomain (at most 253 characters, dots allowed). A source names a
   * manifest written without one after where it came from (see `derivedManifestId`).
   */
  readonly id: string;
  /**
   * The late-2014 API's instance id of the pod, kept as written and shown with the pod. It is not
   * part of what runs: a new uuid alone restarts nothing.
   */
  readonly uuid?: string;
  readonly volumes: readonly Volume[];
  readonly containers: readonly Container[];
  /** What to do when a container exits. Default `Always`. */
  readonly restartPolicy?: RestartPolicy;
  /** Seconds between the stop signal and the kill. Default 30, as in the kubelet. */
  readonly terminationGracePeriodSeconds?: number;
}

/** The two 2014 versions, which share one container shape. */
export type ManifestVersion = 'v1beta1' | 'v1beta2';

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
  /**
   * Absent means the port is not published on the host. In a manifest that names its version, a
   * port written without `hostPort` is published on its `containerPort` (as in 2014), so it is
   * present here; `hostPort: 0` written out is the way to keep such a port unpublished.
   */
  readonly hostPort?: number;
  readonly protocol: Protocol;
}

export interface EnvVar {
  readonly name: string;
  readonly value: string;
}

export interface VolumeMount {
  readonly name: string;
  /** Where it appears in the container (written `path` in the first 2014 manifests). */
  readonly mountPath: string;
  readonly readOnly: boolean;
  /**
   * `HOST`: the host's directory at `mountPath` itself is bound there (the 2014 `mountType: HOST`),
   * which validation accepts only with `allowHostMounts`. Absent (`LOCAL`, the default): the pod
   * volume `name`.
   */
  readonly mountType?: 'HOST';
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
