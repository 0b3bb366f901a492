import { describeValue } from './field-checks.js';
import { ENV_RESOURCES } from './container-env.js';
import type {
  DownwardFile,
  EmptyDir,
  EnvFromSource,
  FileSource,
  ObjectFiles,
  ObjectKeyRef,
  ServiceAccountTokenFile,
  Volume,
  VolumeFiles,
} from './manifest.js';
import { SecurityChecks } from './validate-security.js';

const FILES_FIELDS = new Set(['sources', 'defaultMode']);
const EMPTY_DIR_FIELDS = new Set(['medium', 'sizeLimit', 'mode']);
const SOURCE_FIELDS = new Set(['configMap', 'secret', 'downwardAPI', 'serviceAccountToken']);
const TOKEN_FIELDS = new Set(['audience', 'expirationSeconds', 'path']);
/** A token's lifetime: the API server's bounds (`ValidateProjectedVolumeSource`), and its default. */
const TOKEN_SECONDS = { min: 600, max: 2 ** 32, default: 3600 } as const;
const OBJECT_FILES_FIELDS = new Set(['name', 'items', 'optional']);
const ITEM_FIELDS = new Set(['key', 'path', 'mode']);
const DOWNWARD_FIELDS = new Set(['items']);
const DOWNWARD_ITEM_FIELDS = new Set(['path', 'fieldRef', 'resourceFieldRef', 'mode']);
const FIELD_REF_FIELDS = new Set(['fieldPath', 'apiVersion']);
const RESOURCE_REF_FIELDS = new Set(['containerName', 'resource', 'divisor']);
const KEY_REF_FIELDS = new Set(['name', 'key', 'optional']);
const ENV_FROM_FIELDS = new Set(['prefix', 'configMapRef', 'secretRef']);
const OBJECT_REF_FIELDS = new Set(['name', 'optional']);
/** A ConfigMap's or Secret's key (Kubernetes' `IsConfigMapKey`). */
export const OBJECT_KEY = /^[-._a-zA-Z0-9]{1,253}$/;
/** What a downward API file may hold: the pod's identity and metadata (the kubelet's volume rule). */
const DOWNWARD_FIELD_PATHS = ['metadata.name', 'metadata.namespace', 'metadata.uid', 'metadata.labels', 'metadata.annotations'];
const KEYED = /^metadata\.(labels|annotations)\['[^']+'\]$/;
const MAX_MODE = 0o777;

/** The checks of what reads ConfigMaps and Secrets: volumes of files, key refs, `envFrom`. */
export class ObjectRefChecks extends SecurityChecks {
  /** A volume of files: its sources (each exactly one of configMap, secret, downwardAPI), their default mode. */
  protected volumeFiles(input: unknown, path: string): VolumeFiles | undefined {
    const f = this.record(input, path, FILES_FIELDS);
    if (f === undefined) return undefined;
    const before = this.errors.length;
    const defaultMode = f['defaultMode'] == null ? undefined : this.integer(f['defaultMode'], `${path}.defaultMode`, 0, MAX_MODE);
    const sources: FileSource[] = [];
    const paths = new Map<string, string>();
    (this.list(f['sources'], `${path}.sources`) ?? []).forEach((raw, i) => {
      const here = `${path}.sources[${i}]`;
      const s = this.record(raw, here, SOURCE_FIELDS);
      if (s === undefined) return;
      const given = [...SOURCE_FIELDS].filter((k) => s[k] != null);
      if (given.length !== 1) return void this.fail(here, 'must have exactly one of configMap, secret, downwardAPI, serviceAccountToken');
      const kind = given[0] as keyof FileSource;
      const source =
        kind === 'downwardAPI'
          ? this.downward(s[kind], `${here}.${kind}`)
          : kind === 'serviceAccountToken'
            ? this.tokenFile(s[kind], `${here}.${kind}`)
            : this.objectFiles(s[kind], `${here}.${kind}`);
      if (source === undefined) return;
      for (const [file, at] of filePaths(source, `${here}.${kind}`)) {
        // Within one source a path is one file; across sources, the later one wins (as the kubelet projects them).
        const first = paths.get(file);
        if (first?.startsWith(`${here}.`)) this.fail(at, `path "${file}" is already used by ${first}`);
        paths.set(file, at);
      }
      sources.push({ [kind]: source } as FileSource);
    });
    if (this.errors.length > before) return undefined;
    return { sources, ...(defaultMode === undefined ? {} : { defaultMode }) };
  }

  /** A service-account token as a file: only from a source that asks an API server for one. */
  private tokenFile(input: unknown, path: string): ServiceAccountTokenFile | undefined {
    if (this.checks.serviceAccountTokens !== true)
      return this.fail(
        path,
        'not supported: a service-account token is issued by an API server, which this source has not; give the pod what it needs as a Secret beside it (a secret volume)',
      );
    const t = this.record(input, path, TOKEN_FIELDS);
    if (t === undefined) return undefined;
    const audience = t['audience'] == null || t['audience'] === '' ? undefined : this.string(t['audience'], `${path}.audience`, true);
    const seconds =
      t['expirationSeconds'] == null
        ? TOKEN_SECONDS.default
        : this.integer(t['expirationSeconds'], `${path}.expirationSeconds`, TOKEN_SECONDS.min, TOKEN_SECONDS.max);
    const file = this.filePath(t['path'], `${path}.path`);
    if (seconds === undefined || file === undefined) return undefined;
    return { ...(audience === undefined ? {} : { audience }), expirationSeconds: seconds, path: file };
  }

  private objectFiles(input: unknown, path: string): ObjectFiles | undefined {
    const o = this.record(input, path, OBJECT_FILES_FIELDS);
    if (o === undefined) return undefined;
    const name = this.manifestId(o['name'], `${path}.name`, true);
    const optional = this.optionalFlag(o['optional'], `${path}.optional`);
    const items =
      o['items'] == null
        ? undefined
        : (this.list(o['items'], `${path}.items`) ?? []).map((raw, i) => {
            const here = `${path}.items[${i}]`;
            const item = this.record(raw, here, ITEM_FIELDS);
            if (item === undefined) return undefined;
            const key = this.objectKey(item['key'], `${here}.key`);
            const file = this.filePath(item['path'], `${here}.path`);
            const mode = item['mode'] == null ? undefined : this.integer(item['mode'], `${here}.mode`, 0, MAX_MODE);
            return key === undefined || file === undefined ? undefined : { key, path: file, ...(mode === undefined ? {} : { mode }) };
          });
    if (name === undefined || items?.includes(undefined) === true) return undefined;
    return {
      name,
      ...(items === undefined || items.length === 0 ? {} : { items: items as NonNullable<(typeof items)[number]>[] }),
      ...(optional === true ? { optional } : {}),
    };
  }

  private downward(input: unknown, path: string): { items: DownwardFile[] } | undefined {
    const d = this.record(input, path, DOWNWARD_FIELDS);
    if (d === undefined) return undefined;
    const before = this.errors.length;
    const items: DownwardFile[] = [];
    (this.list(d['items'], `${path}.items`) ?? []).forEach((raw, i) => {
      const here = `${path}.items[${i}]`;
      const item = this.record(raw, here, DOWNWARD_ITEM_FIELDS);
      if (item === undefined) return;
      const file = this.filePath(item['path'], `${here}.path`);
      const mode = item['mode'] == null ? undefined : this.integer(item['mode'], `${here}.mode`, 0, MAX_MODE);
      if ((item['fieldRef'] == null) === (item['resourceFieldRef'] == null))
        return void this.fail(here, 'must have exactly one of fieldRef, resourceFieldRef');
      const ref = item['fieldRef'] != null ? this.downwardField(item['fieldRef'], `${here}.fieldRef`) : undefined;
      const resource =
        item['resourceFieldRef'] != null ? this.downwardResource(item['resourceFieldRef'], `${here}.resourceFieldRef`) : undefined;
      if (file === undefined || (ref === undefined && resource === undefined)) return;
      items.push({ path: file, ...ref, ...resource, ...(mode === undefined ? {} : { mode }) });
    });
    return this.errors.length > before ? undefined : { items };
  }

  private downwardField(input: unknown, path: string): Pick<DownwardFile, 'fieldRef'> | undefined {
    const f = this.record(input, path, FIELD_REF_FIELDS);
    if (f === undefined) return undefined;
    if (f['apiVersion'] != null && f['apiVersion'] !== 'v1')
      return this.fail(`${path}.apiVersion`, `must be v1, got ${describeValue(f['apiVersion'])}`);
    const fieldPath = this.string(f['fieldPath'], `${path}.fieldPath`, true);
    if (fieldPath === undefined) return undefined;
    if (!DOWNWARD_FIELD_PATHS.includes(fieldPath) && !KEYED.test(fieldPath))
      return this.fail(
        `${path}.fieldPath`,
        `must be one of ${DOWNWARD_FIELD_PATHS.join(', ')}, metadata.labels['<key>'], metadata.annotations['<key>'] in a file (the pod's IPs and node are for env only), got ${JSON.stringify(fieldPath.slice(0, 70))}`,
      );
    return { fieldRef: { fieldPath } };
  }

  private downwardResource(input: unknown, path: string): Pick<DownwardFile, 'resourceFieldRef'> | undefined {
    const r = this.record(input, path, RESOURCE_REF_FIELDS);
    if (r === undefined) return undefined;
    const containerName = this.dnsLabel(r['containerName'], `${path}.containerName`, true);
    const resource =
      r['resource'] == null ? this.fail(`${path}.resource`, 'is required') : this.oneOf(r['resource'], `${path}.resource`, ENV_RESOURCES);
    const divisor = r['divisor'] == null ? undefined : this.integer(r['divisor'], `${path}.divisor`, 1, Number.MAX_SAFE_INTEGER);
    if (containerName === undefined || resource === undefined) return undefined;
    return { resourceFieldRef: { containerName, resource, ...(divisor === undefined ? {} : { divisor }) } };
  }

  /** Each downward file's resource is read from a container of the pod (`names`: the pod's containers). */
  protected downwardContainers(volumes: readonly Volume[], names: ReadonlyMap<string, string>): void {
    volumes.forEach((v, i) =>
      v.files?.sources.forEach((s, j) =>
        s.downwardAPI?.items.forEach((item, k) => {
          const other = item.resourceFieldRef?.containerName;
          if (other !== undefined && !names.has(other))
            this.fail(
              `volumes[${i}].files.sources[${j}].downwardAPI.items[${k}].resourceFieldRef.containerName`,
              `names no container of the pod ("${other}")`,
            );
        }),
      ),
    );
  }

  /**
   * How a pod's own volume is made: `medium: Memory` (a tmpfs; `sizeLimit` in bytes its size) and
   * the directory's `mode`. A size limit on the disk is kept and not enforced, as the kubelet keeps
   * it for a static pod (its eviction manager evicts no critical pod, and every static pod is one):
   * the housekeeping's walk of the volume says when it is over the limit.
   */
  protected emptyDirOf(input: unknown, path: string): EmptyDir | undefined {
    const e = this.record(input, path, EMPTY_DIR_FIELDS);
    if (e === undefined) return undefined;
    const medium = e['medium'] == null || e['medium'] === '' ? undefined : this.oneOf(e['medium'], `${path}.medium`, ['Memory'] as const);
    const sizeLimit = e['sizeLimit'] == null ? undefined : this.integer(e['sizeLimit'], `${path}.sizeLimit`, 1, Number.MAX_SAFE_INTEGER);
    const mode = e['mode'] == null ? undefined : this.integer(e['mode'], `${path}.mode`, 0, 0o7777);
    const out = {
      ...(medium === undefined ? {} : { medium }),
      ...(sizeLimit === undefined ? {} : { sizeLimit }),
      ...(mode === undefined ? {} : { mode }),
    };
    return Object.keys(out).length === 0 ? undefined : out;
  }

  /** A ConfigMap's or Secret's key read into a variable. */
  protected keyRef(input: unknown, path: string): ObjectKeyRef | undefined {
    const r = this.record(input, path, KEY_REF_FIELDS);
    if (r === undefined) return undefined;
    const name = this.manifestId(r['name'], `${path}.name`, true);
    const key = this.objectKey(r['key'], `${path}.key`);
    const optional = this.optionalFlag(r['optional'], `${path}.optional`);
    if (name === undefined || key === undefined) return undefined;
    return { name, key, ...(optional === true ? { optional } : {}) };
  }

  /** A container's `envFrom`: each exactly one of configMapRef, secretRef, with an optional prefix. */
  protected envFrom(input: unknown, path: string): EnvFromSource[] | undefined {
    if (input == null) return undefined;
    const out: EnvFromSource[] = [];
    (this.list(input, path) ?? []).forEach((raw, i) => {
      const here = `${path}[${i}]`;
      const e = this.record(raw, here, ENV_FROM_FIELDS);
      if (e === undefined) return;
      if ((e['configMapRef'] == null) === (e['secretRef'] == null))
        return void this.fail(here, 'must have exactly one of configMapRef, secretRef');
      const field = e['configMapRef'] != null ? 'configMapRef' : 'secretRef';
      const prefix = e['prefix'] == null || e['prefix'] === '' ? undefined : this.string(e['prefix'], `${here}.prefix`, false);
      if (prefix !== undefined && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(prefix))
        return void this.fail(
          `${here}.prefix`,
          `must begin a variable name (letters, digits and '_', not a digit first), got ${JSON.stringify(prefix.slice(0, 70))}`,
        );
      const ref = this.record(e[field], `${here}.${field}`, OBJECT_REF_FIELDS);
      if (ref === undefined) return;
      const name = this.manifestId(ref['name'], `${here}.${field}.name`, true);
      const optional = this.optionalFlag(ref['optional'], `${here}.${field}.optional`);
      if (name === undefined) return;
      out.push({ ...(prefix === undefined ? {} : { prefix }), [field]: { name, ...(optional === true ? { optional } : {}) } });
    });
    return out.length === 0 ? undefined : out;
  }

  private objectKey(input: unknown, path: string): string | undefined {
    const key = this.string(input, path, true);
    if (key === undefined) return undefined;
    if (!OBJECT_KEY.test(key) || key === '.' || key === '..')
      return this.fail(
        path,
        `must be a key of a ConfigMap or Secret (letters, digits, '-', '_' and '.'), got ${JSON.stringify(key.slice(0, 70))}`,
      );
    return key;
  }

  /** A file's path inside its volume: relative, no `..` step, no empty step. */
  private filePath(input: unknown, path: string): string | undefined {
    const file = this.string(input, path, true);
    if (file === undefined) return undefined;
    const steps = file.split('/');
    if (file.startsWith('/') || steps.some((s) => s === '' || s === '..') || /[\u0000-\u001f]/.test(file))
      return this.fail(path, `must be a relative path without '..' or empty steps, got ${JSON.stringify(file.slice(0, 70))}`);
    if (steps[0]!.startsWith('..'))
      return this.fail(path, `must not begin with '..' (the agent's own names in the volume), got ${JSON.stringify(file.slice(0, 70))}`);
    return file;
  }

  private optionalFlag(input: unknown, path: string): boolean | undefined {
    if (input == null) return undefined;
    return typeof input === 'boolean' ? input : this.fail(path, `must be true or false, got ${describeValue(input)}`);
  }
}

/** The file paths a source names where it says them (items); a whole object's keys are known only when it is read. */
function filePaths(
  source: ObjectFiles | { items: readonly DownwardFile[] } | ServiceAccountTokenFile,
  path: string,
): Array<[string, string]> {
  if ('expirationSeconds' in source) return [[source.path, `${path}.path`]];
  return (source.items ?? []).map((item, i) => [item.path, `${path}.items[${i}].path`]);
}
