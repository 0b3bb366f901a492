/**
 * The parts of the agent's answers the client commands read: a v1 `Pod` (`GET /pods`), a v1
 * `Event` (`GET /events`) and the `SourceList` (`GET /sources`). Every field is optional: the
 * client shows what an answer has and `<none>` or nothing for the rest.
 */

export interface V1ContainerState {
  readonly running?: { readonly startedAt?: string };
  readonly waiting?: { readonly reason?: string; readonly message?: string };
  readonly terminated?: {
    readonly exitCode?: number;
    readonly signal?: number;
    readonly reason?: string;
    readonly message?: string;
    readonly startedAt?: string;
    readonly finishedAt?: string;
    readonly containerID?: string;
  };
}

export interface V1ContainerStatus {
  readonly name: string;
  readonly image?: string;
  readonly imageID?: string;
  readonly containerID?: string;
  readonly restartCount?: number;
  readonly ready?: boolean;
  readonly started?: boolean;
  readonly state?: V1ContainerState;
  readonly lastState?: V1ContainerState;
}

export interface V1Probe {
  readonly exec?: { readonly command?: readonly string[] };
  readonly httpGet?: { readonly path?: string; readonly port?: number | string; readonly host?: string; readonly scheme?: string };
  readonly tcpSocket?: { readonly port?: number | string; readonly host?: string };
  readonly grpc?: { readonly port?: number; readonly service?: string };
  readonly initialDelaySeconds?: number;
  readonly timeoutSeconds?: number;
  readonly periodSeconds?: number;
  readonly successThreshold?: number;
  readonly failureThreshold?: number;
}

export interface V1Container {
  readonly name: string;
  readonly image?: string;
  /** `Always` on an init container: a sidecar. */
  readonly restartPolicy?: string;
  readonly command?: readonly string[];
  readonly args?: readonly string[];
  readonly ports?: ReadonlyArray<{ readonly containerPort?: number; readonly hostPort?: number; readonly protocol?: string }>;
  readonly env?: ReadonlyArray<{ readonly name: string; readonly value?: string; readonly valueFrom?: V1EnvVarSource }>;
  readonly resources?: { readonly limits?: Readonly<Record<string, string>>; readonly requests?: Readonly<Record<string, string>> };
  readonly volumeMounts?: ReadonlyArray<{
    readonly name: string;
    readonly mountPath: string;
    readonly readOnly?: boolean;
    readonly subPath?: string;
  }>;
  readonly livenessProbe?: V1Probe;
  readonly readinessProbe?: V1Probe;
  readonly startupProbe?: V1Probe;
}

/** Where a variable's value comes from (v1 `EnvVarSource`): one of these. */
export interface V1EnvVarSource {
  readonly fieldRef?: { readonly apiVersion?: string; readonly fieldPath: string };
  readonly resourceFieldRef?: { readonly containerName?: string; readonly resource: string; readonly divisor?: string };
  readonly configMapKeyRef?: { readonly name?: string; readonly key: string; readonly optional?: boolean };
  readonly secretKeyRef?: { readonly name?: string; readonly key: string; readonly optional?: boolean };
}

export interface V1Pod {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string;
    readonly uid?: string;
    readonly creationTimestamp?: string;
    readonly deletionTimestamp?: string;
    readonly deletionGracePeriodSeconds?: number;
    readonly labels?: Readonly<Record<string, string>>;
    readonly annotations?: Readonly<Record<string, string>>;
  };
  readonly spec?: {
    readonly nodeName?: string;
    readonly initContainers?: readonly V1Container[];
    readonly containers?: readonly V1Container[];
    readonly volumes?: ReadonlyArray<{
      readonly name: string;
      readonly hostPath?: { readonly path?: string; readonly type?: string };
      readonly emptyDir?: { readonly medium?: string; readonly sizeLimit?: string };
      readonly persistentVolumeClaim?: { readonly claimName?: string; readonly readOnly?: boolean };
    }>;
  };
  readonly status?: {
    readonly phase?: string;
    readonly reason?: string;
    readonly message?: string;
    readonly conditions?: ReadonlyArray<{ readonly type: string; readonly status: string }>;
    readonly hostIP?: string;
    readonly podIP?: string;
    readonly podIPs?: ReadonlyArray<{ readonly ip: string }>;
    readonly startTime?: string;
    readonly qosClass?: string;
    readonly initContainerStatuses?: readonly V1ContainerStatus[];
    readonly containerStatuses?: readonly V1ContainerStatus[];
  };
}

export interface V1Event {
  readonly metadata?: { readonly name?: string; readonly namespace?: string };
  readonly involvedObject: {
    readonly kind?: string;
    readonly name?: string;
    readonly namespace?: string;
    readonly uid?: string;
    readonly fieldPath?: string;
  };
  readonly reason?: string;
  readonly message?: string;
  readonly source?: { readonly component?: string; readonly host?: string };
  readonly firstTimestamp?: string;
  readonly lastTimestamp?: string;
  readonly count?: number;
  readonly type?: string;
}

export interface SourceItem {
  readonly name: string;
  readonly seen?: boolean;
  readonly manifests?: number;
  readonly lastError?: string;
  readonly down?: string;
  readonly rejected?: ReadonlyArray<{ readonly message: string; readonly count?: number; readonly lastSeen?: string }>;
}

/** One line of a watch (`?watch=1`): what happened to the object. */
export interface WatchEvent<T> {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
  readonly object: T;
}

/** The pod's namespace: `default` when its metadata does not say. */
export const namespaceOf = (pod: Pick<V1Pod, 'metadata'>): string => pod.metadata.namespace ?? 'default';
