import { isRecord, validateManifest, type ValidateOptions, type ValidationResult } from '@kubelet-ts/core';
import { decodeV1Pod } from './decode.js';
import { v1PathOf } from './paths.js';

/**
 * Whether a decoded document is a Kubernetes object (it names an `apiVersion` or a `kind`) rather
 * than a 2014 manifest, which has neither. The 2014 list wrapper `kind: ContainerManifestList` is
 * the one exception, read as it always was.
 */
export function isKubernetesObject(value: unknown): value is Record<string, unknown> {
  if (!isRecord(value)) return false;
  if (value['apiVersion'] !== undefined) return true;
  return value['kind'] !== undefined && !(typeof value['kind'] === 'string' && value['kind'].toLowerCase() === 'containermanifestlist');
}

/** The items of a v1 `List` or `PodList`; undefined for anything else. */
export function v1ListItems(value: unknown): readonly unknown[] | undefined {
  if (!isRecord(value) || value['apiVersion'] !== 'v1' || (value['kind'] !== 'List' && value['kind'] !== 'PodList')) return undefined;
  return Array.isArray(value['items']) ? value['items'] : undefined;
}

const fromV1Pod = new WeakSet<object>();
/** A container field's domain path inside a message (`already used by containers[0].ports[1].hostPort`). */
const DOMAIN_PATH = /\b(?:initContainers|containers)\[\d+\](?:\.[A-Za-z]+(?:\[\d+\])?)*/g;

/**
 * Whether `parseManifests` read this manifest from a v1 Pod (rather than a 2014 manifest), so a
 * converter can write it in the other format by default. A manifest built any other way is not.
 */
export function isFromV1Pod(manifest: object): boolean {
  return fromV1Pod.has(manifest);
}

/**
 * Validates a Kubernetes object as a v1 Pod: the mapping refuses what is not supported, then the
 * domain manifest gets every check a 2014 manifest gets. Every error names the v1 path written.
 */
export function validateV1Pod(input: unknown, options: Omit<ValidateOptions, 'defaultId'>): ValidationResult {
  if (!isRecord(input)) return { ok: false, errors: [{ path: '', message: 'must be a v1 Pod object' }] };
  const kind = input['kind'];
  if (input['apiVersion'] !== 'v1') {
    return {
      ok: false,
      errors: [
        {
          path: 'apiVersion',
          message: `must be v1 (a Kubernetes v1 Pod), got ${JSON.stringify(input['apiVersion'] ?? null)}; a 2014 manifest has neither apiVersion nor kind`,
        },
      ],
    };
  }
  if (kind !== 'Pod') {
    return {
      ok: false,
      errors: [
        {
          path: 'kind',
          message: `must be Pod (or List or PodList of Pods), ConfigMap or Secret, got ${JSON.stringify(kind ?? null)}; other kinds are not supported on one host`,
        },
      ],
    };
  }
  const decoded = decodeV1Pod(input, options.writtenAs, options.serviceAccountTokens === true);
  const result = validateManifest(decoded.manifest, options);
  if (result.ok && decoded.errors.length === 0) {
    fromV1Pod.add(result.manifest);
    return result;
  }
  const seen = new Set(decoded.errors.map((e) => e.path));
  const checked = (result.ok ? [] : result.errors)
    .map((e) => ({
      path: movedPath(writtenPath(v1PathOf(e.path), decoded.writtenAt), decoded.renamed),
      message: e.message === 'unknown field' ? 'not supported' : e.message.replace(DOMAIN_PATH, (p) => v1PathOf(p)),
    }))
    .filter((e) => !seen.has(e.path));
  const id = result.ok ? result.manifest.id : result.id;
  const errors = [...decoded.errors, ...checked];
  return id === undefined ? { ok: false, errors } : { ok: false, errors, id };
}

/** `path` where the mapping moved it from (see `DecodedV1Pod.renamed`), its rest kept. */
function movedPath(path: string, renamed: ReadonlyArray<readonly [string, string]>): string {
  for (const [from, to] of renamed) {
    const next = path.charAt(from.length);
    if (path.startsWith(from) && (next === '' || next === '.' || next === '[')) return `${to}${path.slice(from.length)}`;
  }
  return path;
}

/** Where the author wrote the field at `path` (see `DecodedV1Pod.writtenAt`): `path` itself unless the mapping made it. */
function writtenPath(path: string, writtenAt: ReadonlyMap<string, string>): string {
  for (const [made, written] of writtenAt) if (path === made || path.startsWith(`${made}.`)) return written;
  return path;
}
