import { randomBytes } from 'node:crypto';

/** Labels on everything the agent creates. A container without `MANIFEST_ID` is foreign. */
export const Labels = {
  manifestId: 'io.kubelet-ts.manifest-id',
  containerName: 'io.kubelet-ts.container-name',
  specHash: 'io.kubelet-ts.spec-hash',
  source: 'io.kubelet-ts.source',
  /** The agent's hostname, so that several agents can share one engine without touching each other. */
  node: 'io.kubelet-ts.node',
  /** How many times this manifest container was restarted before this container was made. */
  restartCount: 'io.kubelet-ts.restart-count',
  /** Consecutive restarts after short runs: the crash back-off step. Survives an agent restart. */
  crashStreak: 'io.kubelet-ts.crash-streak',
  /** The grace period the manifest gave, for stopping the container after its manifest is gone. */
  gracePeriod: 'io.kubelet-ts.grace-period',
  /** On a pod sandbox: the manifest id it holds the namespace of (the key the first releases used). */
  sandbox: 'io.kubelet-ts.pod-infra',
  /** On a pod sandbox: `sandboxHash` of the ports it was made with. */
  sandboxHash: 'io.kubelet-ts.pod-ports-hash',
} as const;

/** The identity of a managed container, read from its labels. */
export interface ContainerIdentity {
  readonly podId: string;
  readonly container: string;
  readonly specHash: string;
  readonly source: string;
  readonly node: string;
}

/** RFC 1123 label: lower-case letters, digits and '-', at most 63, starting and ending alphanumeric. */
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/**
 * Whether `s` is a DNS label: what manifest ids, container, volume and port names must be (the
 * validator's rule), and so what the agent writes into labels and host paths. The one definition of it.
 */
export function isDnsLabel(s: string): boolean {
  return DNS_LABEL.test(s);
}

// Spec hashes, as the agent writes them (see `buildContainerSpec`): `v<version>-<16 hex>`.
const SPEC_HASH = /^v[0-9]{1,4}-[0-9a-f]{16}$/;

/**
 * Whether the labels are ones this agent could have written: our label keys with values of the
 * form the agent gives them. Anything else (no labels, some of them, garbage values) is foreign,
 * so a container someone labelled by hand is never stopped, removed or inspected. Allocates
 * nothing: the planner asks this of every container on every pass.
 */
function wellFormed(labels: Readonly<Record<string, string>>): boolean {
  const podId = labels[Labels.manifestId];
  const container = labels[Labels.containerName];
  const hash = labels[Labels.specHash];
  return podId !== undefined && container !== undefined && hash !== undefined && isDnsLabel(podId) && isDnsLabel(container) && SPEC_HASH.test(hash);
}

/** Whether the container is one the agent on `node` manages: the one test every code path uses. */
export function isManagedBy(labels: Readonly<Record<string, string>>, node: string): boolean {
  return node !== '' && labels[Labels.node] === node && wellFormed(labels);
}

/** Reads our labels; `undefined` for a foreign container (see `isManagedBy` for the node). */
export function identityOf(labels: Readonly<Record<string, string>>): ContainerIdentity | undefined {
  if (!wellFormed(labels)) return undefined;
  return {
    podId: labels[Labels.manifestId]!,
    container: labels[Labels.containerName]!,
    specHash: labels[Labels.specHash]!,
    source: labels[Labels.source] ?? '',
    node: labels[Labels.node] ?? '',
  };
}

const NODE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * Why `name` cannot name a node, or `undefined` when it can: a lower-case DNS name of at most 253
 * characters, as Kubernetes requires. It becomes a label value the engine is filtered by and a
 * segment of the node's etcd key (`/registry/hosts/<name>/kubelet`), where a `/` or `..` would
 * name another host's key.
 */
export function nodeNameProblem(name: string): string | undefined {
  if (name.length <= 253 && NODE_NAME.test(name)) return undefined;
  return `invalid hostname ${JSON.stringify(name.slice(0, 300))}: use a DNS name (lower-case letters, digits, '-' and '.', at most 253 characters), e.g. with --hostname-override`;
}

// The 2014 escaping rule: '_' becomes '___' and '-' becomes '_-_', so an escaped part never
// contains '--' and the separator stays unambiguous.
export function escapeNamePart(part: string): string {
  return part.replaceAll('_', '___').replaceAll('-', '_-_');
}

export function unescapeNamePart(part: string): string {
  return part.replaceAll('_-_', '-').replaceAll('___', '_');
}

/** `<container>--<manifest>--<8 hex>`, reversible with `parseContainerName`. */
export function buildContainerName(podId: string, container: string, suffix = randomBytes(4).toString('hex')): string {
  return `${escapeNamePart(container)}--${escapeNamePart(podId)}--${suffix}`;
}

/** Decodes a name made by `buildContainerName` (a leading `/`, as Docker reports it, is allowed). */
export function parseContainerName(name: string): { podId: string; container: string; suffix: string } | undefined {
  const parts = name.replace(/^\//, '').split('--');
  if (parts.length !== 3) return undefined;
  const [container, podId, suffix] = parts as [string, string, string];
  if (container === '' || podId === '' || !/^[0-9a-f]{8}$/.test(suffix)) return undefined;
  return { podId: unescapeNamePart(podId), container: unescapeNamePart(container), suffix };
}
