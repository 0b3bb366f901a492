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
} as const;

/** The identity of a managed container, read from its labels. */
export interface ContainerIdentity {
  readonly podId: string;
  readonly container: string;
  readonly specHash: string;
  readonly source: string;
  readonly node: string;
}

/** Reads our labels; `undefined` for a foreign container. */
export function identityOf(labels: Readonly<Record<string, string>>): ContainerIdentity | undefined {
  const podId = labels[Labels.manifestId];
  const container = labels[Labels.containerName];
  if (podId === undefined || container === undefined) return undefined;
  return {
    podId,
    container,
    specHash: labels[Labels.specHash] ?? '',
    source: labels[Labels.source] ?? '',
    node: labels[Labels.node] ?? '',
  };
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
