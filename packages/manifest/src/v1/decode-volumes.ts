import { isRecord, type FieldError, type WrittenAs } from '@kubelet-ts/core';
import { MAPPED_V1_FIELDS, REFUSED_ADVICE } from './fields.js';
import { ceilMillis, ceilUnits, parseQuantity } from './quantity.js';

/**
 * What every part of the v1 Pod decoder shares (its errors, the paths it moved, how a value was
 * written), and the volumes: `emptyDir`, `hostPath`, `persistentVolumeClaim`, and the volumes of
 * files (`configMap`, `secret`, `downwardAPI`, `projected`) as the projections they are.
 */
export class V1VolumeDecoder {
  readonly errors: FieldError[] = [];
  readonly writtenAt = new Map<string, string>();
  readonly renamed: Array<readonly [string, string]> = [];

  constructor(
    private readonly writtenAs: WrittenAs | undefined,
    /** The source asks an API server for tokens: a `serviceAccountToken` projection is read, not refused. */
    private readonly tokens = false,
  ) {}

  protected fail(path: string, message: string): undefined {
    this.errors.push({ path, message });
    return undefined;
  }

  /** Refuses every key of `value` that is neither mapped nor ignored, naming what to do instead. */
  protected known(
    value: Record<string, unknown>,
    path: string,
    mapped: readonly string[],
    ignored: readonly string[] = [],
    advice?: string,
  ): void {
    for (const key of Object.keys(value)) {
      if (mapped.includes(key) || ignored.includes(key)) continue;
      const instead = advice ?? REFUSED_ADVICE[key];
      this.fail(path === '' ? key : `${path}.${key}`, `not supported${instead === undefined ? '' : `; ${instead}`}`);
    }
  }

  /** Maps each object of a list; anything else is passed on for validation to report. */
  protected each(input: unknown, path: string, map: (item: Record<string, unknown>, path: string) => unknown): unknown {
    if (!Array.isArray(input)) return input;
    return input.map((item, i) => (isRecord(item) ? map(item, `${path}[${i}]`) : item));
  }

  /**
   * A file mode as Kubernetes reads it: written `0644` it is octal, as in YAML 1.1 (which the
   * API's YAML reader follows, and every example assumes); YAML 1.2 would read 644.
   */
  protected mode(holder: Record<string, unknown>, key: string): unknown {
    const written = this.writtenAs?.(holder, key);
    return written !== undefined && /^0[0-7]+$/.test(written) ? Number.parseInt(written, 8) : holder[key];
  }

  /** The items of a source with their modes read as Kubernetes reads them. */
  protected items(
    input: unknown,
    path: string,
    map: (item: Record<string, unknown>, at: string) => Record<string, unknown> = (i) => i,
  ): unknown {
    return this.each(input, path, (item, at) => {
      const out = map(item, at);
      return item['mode'] == null ? out : { ...out, mode: this.mode(item, 'mode') };
    });
  }

  /** A resourceFieldRef with its `divisor` quantity in millicores (CPU) or bytes (memory). */
  protected divisor(ref: Record<string, unknown>, at: string): Record<string, unknown> | undefined {
    const q = parseQuantity(ref['divisor']);
    if (!q.ok) return void this.fail(at, q.message);
    const cpu = typeof ref['resource'] === 'string' && ref['resource'].endsWith('.cpu');
    const divisor = Number(cpu ? ceilMillis(q.value) : ceilUnits(q.value));
    if (!(divisor >= 1)) return void this.fail(at, `must be at least ${cpu ? '1m' : '1'}`);
    return { ...ref, divisor };
  }

  protected volume(input: unknown, path: string): unknown {
    if (!isRecord(input)) return input;
    for (const key of Object.keys(input)) {
      if ((MAPPED_V1_FIELDS.volume as readonly string[]).includes(key)) continue;
      this.fail(
        `${path}.${key}`,
        `not supported; ${NETWORK_VOLUMES.has(key) ? NETWORK_VOLUME_ADVICE : 'use emptyDir, hostPath or persistentVolumeClaim'}`,
      );
    }
    const { emptyDir, hostPath, persistentVolumeClaim: pvc } = input;
    const files = this.volumeFiles(input, path);
    if ([emptyDir, hostPath, pvc, ...FILE_VOLUMES.map((k) => input[k])].filter((source) => source != null).length > 1)
      this.fail(path, `must have exactly one of emptyDir, hostPath, persistentVolumeClaim, ${FILE_VOLUMES.join(', ')}`);
    // A hostPath is passed on as written: validation checks it, and refuses it without allowHostMounts.
    return defined({
      name: input['name'],
      hostPath,
      claim: this.claim(pvc, `${path}.persistentVolumeClaim`),
      files,
      emptyDir: this.emptyDir(emptyDir, `${path}.emptyDir`),
    });
  }

  /** An emptyDir for validation to check: its `sizeLimit` quantity in bytes, its `mode` read as Kubernetes reads it (octal written `01777`). */
  private emptyDir(input: unknown, path: string): unknown {
    if (!isRecord(input)) return input == null ? undefined : input;
    this.known(input, path, MAPPED_V1_FIELDS.emptyDir);
    let sizeLimit: unknown = input['sizeLimit'];
    if (sizeLimit != null) {
      const q = parseQuantity(sizeLimit);
      sizeLimit = q.ok ? Number(ceilUnits(q.value)) : this.fail(`${path}.sizeLimit`, q.message);
    }
    const out = defined({
      medium: input['medium'],
      sizeLimit,
      mode: input['mode'] == null ? undefined : this.mode(input, 'mode'),
    });
    return Object.keys(out).length === 0 ? undefined : out;
  }

  /**
   * A `configMap`, `secret`, `downwardAPI` or `projected` volume as the projection it is (`files`):
   * one source, or the projected ones in order. A service account token needs an API server to
   * sign it: refused saying so, unless the source asks one (`tokens`).
   */
  protected volumeFiles(input: Record<string, unknown>, path: string): unknown {
    const kind = FILE_VOLUMES.find((k) => input[k] != null);
    if (kind === undefined) return undefined;
    const at = `${path}.${kind}`;
    const v = input[kind];
    if (!isRecord(v)) return v;
    const { defaultMode: _mode, ...rest } = v;
    const defaultMode = v['defaultMode'] == null ? undefined : this.mode(v, 'defaultMode');
    if (isRecord(rest['items']) || Array.isArray(rest['items'])) rest['items'] = this.items(rest['items'], `${at}.items`);
    let sources: unknown;
    if (kind === 'projected') {
      this.known(v, at, ['sources', 'defaultMode']);
      const given = this.each(v['sources'], `${at}.sources`, (s, here) => {
        const issued = [...(this.tokens ? [] : ['serviceAccountToken']), 'clusterTrustBundle', 'podCertificate'].filter(
          (key) => s[key] != null,
        );
        for (const key of issued) this.fail(`${here}.${key}`, `not supported: ${NO_API_SERVER}`);
        this.known(s, here, ['configMap', 'secret', 'downwardAPI', 'serviceAccountToken', 'clusterTrustBundle', 'podCertificate']);
        // Refused once, by its own field: left out rather than refused again as a source without one.
        if (issued.length > 0) return null;
        const withItems = (o: unknown, key: string) =>
          isRecord(o) && o['items'] != null ? { ...o, items: this.items(o['items'], `${here}.${key}.items`) } : o;
        return defined({
          configMap: withItems(s['configMap'], 'configMap'),
          secret: withItems(s['secret'], 'secret'),
          downwardAPI: this.downwardFiles(s['downwardAPI'], `${here}.downwardAPI`),
          serviceAccountToken: s['serviceAccountToken'] ?? undefined,
        });
      });
      sources = Array.isArray(given) ? given.filter((s) => s !== null) : given;
    } else if (kind === 'secret') {
      this.known(v, at, ['secretName', 'items', 'optional', 'defaultMode']);
      const { secretName, ...others } = rest;
      sources = [{ secret: { name: secretName, ...others } }];
    } else if (kind === 'configMap') {
      this.known(v, at, ['name', 'items', 'optional', 'defaultMode']);
      sources = [{ configMap: rest }];
    } else {
      this.known(v, at, ['items', 'defaultMode']);
      sources = [{ downwardAPI: this.downwardFiles(rest, at) }];
    }
    const source = `${path}.files.sources[0]`;
    if (kind === 'secret') this.renamed.push([`${source}.secret.name`, `${at}.secretName`]);
    if (kind === 'projected') this.renamed.push([`${path}.files.sources`, `${at}.sources`]);
    else this.renamed.push([`${source}.${kind}`, at], [source, at]);
    this.renamed.push([`${path}.files`, at]);
    return defined({ sources, defaultMode });
  }

  /** A downward API source, its resources' divisors as quantities made numbers (as in `env`). */
  protected downwardFiles(input: unknown, path: string): unknown {
    if (!isRecord(input)) return input ?? undefined;
    return {
      ...input,
      items: this.items(input['items'], `${path}.items`, (item, at) => {
        const ref = item['resourceFieldRef'];
        if (!isRecord(ref) || ref['divisor'] == null) return item;
        const resolved = this.divisor(ref, `${at}.resourceFieldRef.divisor`);
        return resolved === undefined ? { ...item, resourceFieldRef: undefined } : { ...item, resourceFieldRef: resolved };
      }),
    };
  }

  /** A persistentVolumeClaim as the named volume it becomes (`claim`), for validation to check. */
  protected claim(input: unknown, path: string): unknown {
    if (!isRecord(input)) return input ?? undefined;
    this.known(input, path, ['claimName', 'readOnly']);
    return defined({ name: input['claimName'], readOnly: input['readOnly'] });
  }
}

/** Volume kinds a cluster attaches through a storage provider, which one host without an API server has not. */
const NETWORK_VOLUMES = new Set([
  'awsElasticBlockStore',
  'gcePersistentDisk',
  'azureDisk',
  'azureFile',
  'cinder',
  'cephfs',
  'rbd',
  'nfs',
  'iscsi',
  'glusterfs',
  'fc',
  'flocker',
  'flexVolume',
  'csi',
  'photonPersistentDisk',
  'portworxVolume',
  'quobyte',
  'scaleIO',
  'storageos',
  'vsphereVolume',
  'gitRepo',
]);
const NETWORK_VOLUME_ADVICE =
  'a network or cloud volume is attached by its storage provider, which this agent (one host, no API server) does not do; mount it on the host and use hostPath, or use a persistentVolumeClaim for a named local volume';

/** The v1 volumes that are files the agent writes (see `Volume.files`). */
const FILE_VOLUMES = ['configMap', 'secret', 'downwardAPI', 'projected'] as const;
const NO_API_SERVER =
  'it is issued by an API server, which a standalone agent has not; give the pod what it needs as a Secret beside it (a secret volume)';

/** The object without its undefined values: a field not written stays absent. */
export function defined(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}
