import type { Container, ContainerManifest, EnvVar } from './manifest.js';
import { podNameOf } from './naming.js';
import { envFromValues, objectKeyValue, serviceVariables, type ObjectLookup } from './objects.js';

/** The pod's fields a container's env can read (v1 `env[].valueFrom.fieldRef.fieldPath`). */
export const POD_FIELD_PATHS = [
  'metadata.name',
  'metadata.namespace',
  'metadata.uid',
  'spec.nodeName',
  'spec.serviceAccountName',
  'status.hostIP',
  'status.hostIPs',
  'status.podIP',
  'status.podIPs',
] as const;
/** `metadata.labels['<key>']` and `metadata.annotations['<key>']`. */
export const KEYED_FIELD_PATH = /^metadata\.(labels|annotations)\['([^']+)'\]$/;
/** The resources a container's env can read (v1 `env[].valueFrom.resourceFieldRef.resource`). */
export const ENV_RESOURCES = ['limits.cpu', 'requests.cpu', 'limits.memory', 'requests.memory'] as const;
/** A resource a container's env can read (one of `ENV_RESOURCES`). */
export type EnvResource = (typeof ENV_RESOURCES)[number];

/** What only the running pod knows, for the fields that read it. */
export interface PodRuntimeFields {
  /** The pod's IP (its sandbox's; the host's in a hostNetwork pod). */
  readonly podIP?: string;
  /** The node's address. */
  readonly hostIP?: string;
}

/** What the env of a container reads besides its pod: the node, and the pod's uid as the agent names it. */
export interface EnvContext extends PodRuntimeFields {
  readonly node: string;
  readonly podUid: string;
  /** What `limits.cpu`/`limits.memory` read for a container without a limit (as the kubelet reads its allocatable). */
  readonly nodeCapacity?: NodeCapacity;
  /**
   * The ConfigMaps and Secrets of the pod's source, for `envFrom` and the key refs. Absent: those
   * variables are left out (a plan's preview of the spec; the executor resolves them at create).
   */
  readonly objects?: ObjectLookup;
}

/** The node's CPUs (in millicores) and memory (in bytes). */
export interface NodeCapacity {
  readonly cpuMillis: number;
  readonly memoryBytes: number;
}

/** A container's env, command and entrypoint with every reference resolved. */
export interface ResolvedEnv {
  readonly env: Readonly<Record<string, string>>;
  readonly command?: readonly string[];
  readonly entrypoint?: readonly string[];
}

/**
 * The kubelet's `$(VAR)` expansion (`third_party/forked/golang/expansion`): `$(NAME)` becomes the
 * value `lookup` gives, or stays as written when it gives none; `$$` is a literal `$`; any other
 * `$` stays.
 */
export function expandVariables(input: string, lookup: (name: string) => string | undefined): string {
  if (!input.includes('$')) return input;
  let out = '';
  let i = 0;
  while (i < input.length) {
    const c = input[i];
    if (c !== '$' || i + 1 >= input.length) {
      out += c;
      i++;
      continue;
    }
    const next = input[i + 1];
    if (next === '$') {
      out += '$';
      i += 2;
    } else if (next === '(') {
      const close = input.indexOf(')', i + 2);
      if (close === -1) {
        out += '$(';
        i += 2;
      } else {
        const name = input.slice(i + 2, close);
        out += lookup(name) ?? `$(${name})`;
        i = close + 1;
      }
    } else {
      out += `$${next}`;
      i += 2;
    }
  }
  return out;
}

/**
 * The container's env as the kubelet makes it (`makeEnvironmentVariables`): each variable in
 * order, a written value expanded against the variables before it (then the services'), a
 * `valueFrom` read from the pod, the node or the resources; the services' variables (see
 * `serviceVariables`) where the container sets none; then `command` and `args` expanded against
 * them all.
 */
export function resolveContainerEnv(manifest: ContainerManifest, container: Container, context: EnvContext): ResolvedEnv {
  const { objects } = context;
  const namespace = manifest.namespace ?? 'default';
  // `envFrom` first, then `env`, whose variables win (the kubelet's order); a missing required object throws NotFound.
  const env: Record<string, string> =
    container.envFrom === undefined || objects === undefined ? {} : envFromValues(container.envFrom, namespace, objects);
  // The services' variables: read by `$(VAR)` after the container's own, and given where it sets none.
  const services = objects === undefined ? {} : serviceVariables(manifest, objects);
  const known = (n: string): string | undefined => (Object.hasOwn(env, n) ? env[n] : Object.hasOwn(services, n) ? services[n] : undefined);
  for (const e of container.env) {
    const ref = e.valueFrom?.configMapKeyRef ?? e.valueFrom?.secretKeyRef;
    if (ref !== undefined) {
      const value =
        objects === undefined
          ? undefined
          : objectKeyValue(e.valueFrom?.configMapKeyRef === undefined ? 'Secret' : 'ConfigMap', ref, namespace, objects);
      if (value !== undefined) env[e.name] = value;
      continue;
    }
    env[e.name] = e.valueFrom === undefined ? expandVariables(e.value, known) : sourced(e, manifest, container, context);
  }
  for (const [name, value] of Object.entries(services)) if (!Object.hasOwn(env, name)) env[name] = value;
  const lookup = (name: string): string | undefined => (Object.hasOwn(env, name) ? env[name] : undefined);
  return {
    env,
    ...(container.command === undefined ? {} : { command: container.command.map((a) => expandVariables(a, lookup)) }),
    ...(container.entrypoint === undefined ? {} : { entrypoint: container.entrypoint.map((a) => expandVariables(a, lookup)) }),
  };
}

/** Whether the container's env reads the pod's IP, which is known only once its sandbox runs. */
export function readsPodIP(container: Container): boolean {
  return container.env.some(
    (e) => e.valueFrom?.fieldRef?.fieldPath === 'status.podIP' || e.valueFrom?.fieldRef?.fieldPath === 'status.podIPs',
  );
}

function sourced(e: EnvVar, manifest: ContainerManifest, container: Container, context: EnvContext): string {
  const field = e.valueFrom?.fieldRef?.fieldPath;
  if (field !== undefined) return podFieldValue(field, manifest, context);
  const ref = e.valueFrom?.resourceFieldRef;
  if (ref === undefined) return '';
  const target = ref.containerName === undefined ? container : (manifest.containers.find((c) => c.name === ref.containerName) ?? container);
  return resourceFieldValue(ref.resource, target, ref.divisor, context);
}

/** A pod field as a variable or a downward API file reads it (see `POD_FIELD_PATHS`). */
export function podFieldValue(path: string, manifest: ContainerManifest, context: EnvContext): string {
  const keyed = KEYED_FIELD_PATH.exec(path);
  if (keyed !== null) return (keyed[1] === 'labels' ? manifest.labels : manifest.annotations)?.[keyed[2] ?? ''] ?? '';
  switch (path) {
    case 'metadata.name':
      return podNameOf(manifest.id, manifest.namespace);
    case 'metadata.namespace':
      return manifest.namespace ?? 'default';
    case 'metadata.uid':
      return context.podUid;
    case 'spec.nodeName':
      return context.node;
    case 'status.hostIP':
    case 'status.hostIPs':
      return context.hostIP ?? '';
    case 'status.podIP':
    case 'status.podIPs':
      return context.podIP ?? '';
    case 'spec.serviceAccountName':
      return manifest.serviceAccountName ?? '';
    default:
      return '';
  }
}

/**
 * A resource as the kubelet writes it into env (`ExtractContainerResourceValue`): CPU in whole
 * units of the divisor (default 1 core) rounded up, memory in units of the divisor (default 1
 * byte) rounded up; a limit not set is the node's capacity, a request not set is its limit or 0.
 */
export function resourceFieldValue(resource: EnvResource, c: Container, divisor: number | undefined, context: EnvContext): string {
  const capacity = context.nodeCapacity;
  switch (resource) {
    case 'limits.cpu':
      return String(Math.ceil((c.cpuLimitMillis ?? capacity?.cpuMillis ?? 0) / (divisor ?? 1000)));
    case 'requests.cpu':
      // The request, as its shares keep it (`ceil(shares × 1000 / 1024)` gives back what was written).
      return String(Math.ceil((c.cpu === undefined ? 0 : Math.ceil((c.cpu * 1000) / 1024)) / (divisor ?? 1000)));
    case 'limits.memory':
      return String(Math.ceil((c.memory ?? capacity?.memoryBytes ?? 0) / (divisor ?? 1)));
    case 'requests.memory':
      return String(Math.ceil((c.memoryRequest ?? c.memory ?? 0) / (divisor ?? 1)));
  }
}

/**
 * Labels or annotations as a downward API file holds them (the kubelet's `fieldpath.FormatMap`):
 * `key="value"` lines in key order, the value quoted, no newline after the last.
 */
export function formatLabelMap(map: Readonly<Record<string, string>> | undefined): string {
  if (map === undefined) return '';
  return Object.keys(map)
    .sort()
    .map((key) => `${key}=${JSON.stringify(map[key])}`)
    .join('\n');
}
