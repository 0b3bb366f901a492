import type { FieldError } from './errors.js';
import { LABEL_VALUE, MAX_LIST_ENTRIES, describeValue, isRecord, type ValidationWarning, type WrittenAs } from './field-checks.js';
import type { Container, ContainerManifest, HostPathType, ManifestVersion, RestartPolicy, Volume } from './manifest.js';
import { hostAccessOf, type HostAccess } from './host-access.js';
import { DnsChecks } from './validate-dns.js';
import { isLabelKey } from './validate-placement.js';

export type { ValidationWarning } from './field-checks.js';

/** What `validateManifest` returns: the validated manifest with its warnings, or the field errors. */
export type ValidationResult =
  | {
      readonly ok: true;
      readonly manifest: ContainerManifest;
      /** Deprecated spellings the manifest uses (one per field), for the source to report. */
      readonly warnings: readonly ValidationWarning[];
    }
  | { readonly ok: false; readonly errors: readonly FieldError[]; readonly id?: string };

export { hostAccessOf, type HostAccess } from './host-access.js';

/** What `validateManifest` allows of the host (`HostAccess`), and how the manifest's text wrote its values. */
export interface ValidateOptions extends HostAccess {
  /**
   * How values that are not strings were written in the text the manifest came from, so that a
   * message can say what to quote (`"01234"`, not the number 1234 it was read as).
   * `parseManifests` (`@kubelet-ts/manifest`) passes it; without it, messages show the value as
   * JavaScript prints it.
   */
  readonly writtenAs?: WrittenAs;
  /**
   * The id of the manifest when it has none (or an empty one), as the source that read it names
   * such manifests (see `derivedManifestId`). Without it, an id is required: the agent's server,
   * whose requests have no origin to name a pod after, passes none.
   */
  readonly defaultId?: string | undefined;
  /** A pod's placement is matched at the agent's admission, not here (see `ContainerCheckOptions.placementAtAdmission`). */
  readonly placementAtAdmission?: boolean | undefined;
  /** Its source asks an API server for service-account tokens (see `ContainerCheckOptions.serviceAccountTokens`). */
  readonly serviceAccountTokens?: boolean | undefined;
}

/** An RFC 3339 time, as the API server writes one (`2026-12-06T10:00:00Z`, fractions and offsets allowed). */
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;

/** Containers in one manifest. The kubelet sets none; a pod of more than this is a mistake or an attack. */
export const MAX_CONTAINERS = 250;

const MANIFEST_FIELDS = new Set([
  'serviceAccountName',
  'enableServiceLinks',
  'version',
  'id',
  'uuid',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'namespace',
  'labels',
  'annotations',
  'hostNetwork',
  'securityContext',
  'hostname',
  'dnsPolicy',
  'dnsConfig',
  'shareProcessNamespace',
  'hostPID',
  'hostIPC',
  'nodeSelector',
  'nodeAffinity',
  'imagePullSecrets',
  'volumes',
  'initContainers',
  'containers',
  'restartPolicy',
  'terminationGracePeriodSeconds',
]);
const VERSIONS: readonly ManifestVersion[] = ['v1beta1', 'v1beta2'];
const RESTART_POLICIES: readonly RestartPolicy[] = ['Always', 'OnFailure', 'Never'];
/** The late-2014 v1beta1 form, `restartPolicy: {always: {}}`, by its one key. */
const RESTART_POLICY_KEYS: Readonly<Record<string, RestartPolicy>> = { always: 'Always', onFailure: 'OnFailure', never: 'Never' };
const VOLUME_FIELDS = new Set(['name', 'hostPath', 'claim', 'files', 'emptyDir']);
const CLAIM_FIELDS = new Set(['name', 'readOnly']);
const HOST_PATH_FIELDS = new Set(['path', 'type']);
const HOST_PATH_TYPES: readonly HostPathType[] = [
  '',
  'DirectoryOrCreate',
  'Directory',
  'FileOrCreate',
  'File',
  'Socket',
  'CharDevice',
  'BlockDevice',
];
/** Kubernetes' limit on all of a pod's annotations together. */
const MAX_ANNOTATION_BYTES = 256 * 1024;
const UUID = /^[A-Za-z0-9][-A-Za-z0-9_.:]{0,252}$/;

/**
 * Validates one decoded manifest and normalises it (protocol upper-cased, 2014 spellings read as
 * today's, defaults made explicit where the runtime needs them). Every problem is reported with
 * its field path; a manifest is valid as a whole or rejected as a whole. A manifest this returns
 * validates again to an equal one (with the same options), so validating twice is harmless.
 */
export function validateManifest(input: unknown, options: ValidateOptions = {}): ValidationResult {
  const access = hostAccessOf(options);
  const v = new Walker(options.writtenAs, {
    ...access,
    ...(options.placementAtAdmission === true ? { placementAtAdmission: true } : {}),
    ...(options.serviceAccountTokens === true ? { serviceAccountTokens: true } : {}),
  });
  const manifest = v.manifest(input, options.defaultId);
  if (v.errors.length > 0 || manifest === undefined) {
    const written = isRecord(input) && typeof input['id'] === 'string' && input['id'] !== '' ? input['id'] : undefined;
    const id = written ?? (isRecord(input) && (input['id'] == null || input['id'] === '') ? options.defaultId : undefined);
    return id === undefined ? { ok: false, errors: v.errors } : { ok: false, errors: v.errors, id };
  }
  validated.add(manifest);
  return { ok: true, manifest, warnings: v.warnings() };
}

const validated = new WeakSet<object>();

/**
 * Whether `manifest` is an object `validateManifest` returned (so its fields are in the normal
 * form the agent relies on): the agent validates what a source hands it only when it is not, as
 * when an embedder's own source builds manifests from plain objects.
 */
export function isValidatedManifest(manifest: unknown): boolean {
  return typeof manifest === 'object' && manifest !== null && validated.has(manifest);
}

/** The manifest's structure, field by field; every problem found is kept. */
class Walker extends DnsChecks {
  manifest(input: unknown, defaultId: string | undefined): ContainerManifest | undefined {
    const m = this.record(input, '', MANIFEST_FIELDS);
    if (m === undefined) return undefined;
    const version = this.version(m['version']);
    // A manifest that names its version follows the 2014 port rule; one without keeps the meaning
    // it had before that rule came, so an upgrade changes (and restarts) none of them.
    this.publishUnmappedPorts = version !== undefined;
    const id = (m['id'] == null || m['id'] === '') && defaultId !== undefined ? defaultId : this.manifestId(m['id'], 'id', true);
    const uuid = this.uuid(m);
    const deletion = this.deletion(m);
    const namespace = m['namespace'] == null ? undefined : this.dnsLabel(m['namespace'], 'namespace', true);
    const labels = this.keyValues(m['labels'], 'labels', true);
    const annotations = this.keyValues(m['annotations'], 'annotations', false);
    let hostNetwork = false;
    if (m['hostNetwork'] != null) {
      if (typeof m['hostNetwork'] === 'boolean') hostNetwork = m['hostNetwork'];
      else this.fail('hostNetwork', `must be true or false, got ${describeValue(m['hostNetwork'])}`);
    }
    if (hostNetwork && !this.checks.allowHostNetwork)
      this.fail(
        'hostNetwork',
        "true puts the pod in the host's network, where it reaches this agent on 127.0.0.1 and can take its port, which this agent refuses; run it with --allow-host-network (allowHostNetwork) to accept it, or publish ports (hostPort)",
      );
    const securityContext = this.podSecurity(m['securityContext'], 'securityContext', { hostNetwork, hostIPC: m['hostIPC'] === true });
    const hostname = m['hostname'] == null || m['hostname'] === '' ? undefined : this.dnsLabel(m['hostname'], 'hostname', false);
    const dns = this.dns(m, hostNetwork);
    const sharePid = m['shareProcessNamespace'] == null ? undefined : this.flag(m['shareProcessNamespace'], 'shareProcessNamespace');
    const placement = this.placement(m['nodeSelector'], m['nodeAffinity']);
    const hostNamespaces = this.hostNamespaces(m, sharePid === true);
    const volumes = this.volumes(m['volumes']);
    const declared = new Set(volumes.map((vol) => vol.name));
    const serviceAccountName =
      m['serviceAccountName'] == null || m['serviceAccountName'] === ''
        ? undefined
        : this.manifestId(m['serviceAccountName'], 'serviceAccountName', true);
    const serviceLinks = m['enableServiceLinks'] == null ? undefined : this.flag(m['enableServiceLinks'], 'enableServiceLinks');

    const containers: Container[] = [];
    const initContainers: Container[] = [];
    /** Each valid container with its path: its index in its list skips the invalid ones. */
    const located: Array<[Container, string]> = [];
    const names = new Map<string, string>();
    const hostPorts = new Map<string, string>();
    const walk = (field: 'initContainers' | 'containers', into: Container[]) => {
      let raws: unknown[] = [];
      const given = m[field];
      if (Array.isArray(given) && given.length > MAX_CONTAINERS) {
        // Refused before any is looked at: the work of a manifest stays bounded whatever it holds.
        this.fail(field, `must list at most ${MAX_CONTAINERS} containers, got ${given.length}; split the pod into several manifests`);
      } else {
        // `containers: []` is a pod with nothing to run, as in 2014; a manifest without the key is a mistake.
        raws = this.list(given, field) ?? [];
      }
      raws.forEach((raw, i) => {
        const path = `${field}[${i}]`;
        const c = this.container(raw, path, declared);
        // Duplicates are reported even for a container with other problems: every error at once.
        const name = isRecord(raw) && typeof raw['name'] === 'string' && raw['name'] !== '' ? raw['name'] : undefined;
        if (name !== undefined) {
          const first = names.get(name);
          if (first !== undefined) this.fail(`${path}.name`, `duplicate container name "${name}" (also ${first})`);
          else names.set(name, path);
        }
        if (c === undefined) return;
        this.initRules(c, path, field === 'initContainers');
        // The containers of a manifest share one host, so a host port may be claimed once per protocol.
        c.ports.forEach((p, j) => {
          if (p.hostPort === undefined) return;
          const key = `${p.hostPort}/${p.protocol}`;
          const owner = hostPorts.get(key);
          const here = `${path}.ports[${j}].hostPort`;
          const why = this.implicitlyPublished.has(p)
            ? ` (a ${version} port without hostPort is published on its containerPort; write hostPort: 0 to publish none)`
            : '';
          if (owner !== undefined) this.fail(here, `host port ${key} is already used by ${owner}${why}`);
          else hostPorts.set(key, here);
        });
        into.push(c);
        located.push([c, path]);
      });
    };
    walk('initContainers', initContainers);
    walk('containers', containers);
    if (m['containers'] === undefined || m['containers'] === null) this.fail('containers', 'is required');
    const restartPolicy = this.restartPolicy(m['restartPolicy']);
    const grace =
      m['terminationGracePeriodSeconds'] == null
        ? undefined
        : this.integer(m['terminationGracePeriodSeconds'], 'terminationGracePeriodSeconds', 0, 86_400);
    const pullSecrets = this.pullSecrets(m['imagePullSecrets']);
    for (const [c, path] of located) this.probePorts(c, path);
    // A resource is read from a container of this pod.
    for (const [c, path] of located)
      c.env.forEach((e, j) => {
        const other = e.valueFrom?.resourceFieldRef?.containerName;
        if (other !== undefined && !names.has(other))
          this.fail(`${path}.env[${j}].valueFrom.resourceFieldRef.containerName`, `names no container of the pod ("${other}")`);
      });
    this.downwardContainers(volumes, names);
    if (id === undefined || this.errors.length > 0) return undefined;
    // No version: its one meaning, the port rule, is applied (see ContainerManifest.version).
    return {
      id,
      ...(uuid === undefined ? {} : { uuid }),
      ...deletion,
      ...(namespace === undefined ? {} : { namespace }),
      ...(labels === undefined ? {} : { labels }),
      ...(annotations === undefined ? {} : { annotations }),
      ...(hostNetwork ? { hostNetwork } : {}),
      ...(securityContext === undefined ? {} : { securityContext }),
      ...(hostname === undefined ? {} : { hostname }),
      ...dns,
      ...(sharePid === true ? { shareProcessNamespace: true } : {}),
      ...placement,
      ...hostNamespaces,
      volumes,
      ...(serviceAccountName === undefined ? {} : { serviceAccountName }),
      ...(serviceLinks === false ? { enableServiceLinks: false } : {}),
      ...(initContainers.length === 0 ? {} : { initContainers }),
      containers,
      ...(restartPolicy === undefined ? {} : { restartPolicy }),
      ...(grace === undefined ? {} : { terminationGracePeriodSeconds: grace }),
      ...(pullSecrets.length === 0 ? {} : { imagePullSecrets: pullSecrets }),
    };
  }

  /**
   * The names of the pod's pull secrets. An empty one is left out, as the kubelet passes over it
   * (the API server admits `imagePullSecrets: [{}]`); a duplicate is kept once.
   */
  private pullSecrets(input: unknown): string[] {
    const names: string[] = [];
    (this.list(input, 'imagePullSecrets') ?? []).forEach((name, i) => {
      if (typeof name !== 'string') this.fail(`imagePullSecrets[${i}]`, `must be a Secret's name, got ${describeValue(name)}`);
      else if (name !== '' && !names.includes(name)) names.push(name);
    });
    return names;
  }

  private flag(input: unknown, path: string): boolean | undefined {
    return typeof input === 'boolean' ? input : this.fail(path, `must be true or false, got ${describeValue(input)}`);
  }

  /** `v1beta1` or `v1beta2` in any case (2014 compared without it), in lower case; undefined when not given. */
  private version(input: unknown): ManifestVersion | undefined {
    if (input == null || input === '') return undefined;
    const lower = typeof input === 'string' ? input.toLowerCase() : undefined;
    const known = VERSIONS.find((v) => v === lower);
    return known ?? this.fail('version', `must be v1beta1 or v1beta2, got ${describeValue(input)}`);
  }

  private uuid(m: Record<string, unknown>): string | undefined {
    if (m['uuid'] == null || m['uuid'] === '') return undefined;
    const s = this.string(m['uuid'], 'uuid', false, this.written(m, 'uuid'));
    if (s === undefined) return undefined;
    return UUID.test(s)
      ? s
      : this.fail('uuid', `must be letters, digits, '-', '_', '.' and ':' (at most 253), got ${JSON.stringify(s.slice(0, 70))}`);
  }

  /** The mark of a pod being deleted: an RFC 3339 time, and a grace of 0 to 86,400 s that needs it. */
  private deletion(m: Record<string, unknown>): { deletionTimestamp?: string; deletionGracePeriodSeconds?: number } {
    const at = m['deletionTimestamp'] == null || m['deletionTimestamp'] === '' ? undefined : m['deletionTimestamp'];
    const grace = m['deletionGracePeriodSeconds'];
    let deletionTimestamp: string | undefined;
    if (at !== undefined) {
      if (typeof at !== 'string' || !RFC3339.test(at) || Number.isNaN(Date.parse(at)))
        this.fail('deletionTimestamp', `must be an RFC 3339 time (2026-12-06T10:00:00Z), got ${describeValue(at)}`);
      else deletionTimestamp = at;
    }
    if (grace == null) return deletionTimestamp === undefined ? {} : { deletionTimestamp };
    const seconds = this.integer(grace, 'deletionGracePeriodSeconds', 0, 86_400);
    if (at === undefined)
      return this.fail('deletionGracePeriodSeconds', 'is given only with deletionTimestamp, the time the deletion was asked') ?? {};
    return deletionTimestamp === undefined || seconds === undefined ? {} : { deletionTimestamp, deletionGracePeriodSeconds: seconds };
  }

  /** `Always`, `OnFailure`, `Never`, or the late-2014 v1beta1 object with one of `always`, `onFailure`, `never`. */
  private restartPolicy(input: unknown): RestartPolicy | undefined {
    if (!isRecord(input)) return this.oneOf(input, 'restartPolicy', RESTART_POLICIES);
    const keys = Object.keys(input);
    const [key] = keys;
    if (keys.length !== 1 || key === undefined || !Object.hasOwn(RESTART_POLICY_KEYS, key)) {
      return this.fail(
        'restartPolicy',
        `must be Always, OnFailure or Never, or an object with exactly one of always, onFailure, never, got ${keys.length === 0 ? 'an empty object' : `keys ${keys.join(', ')}`}`,
      );
    }
    const value = input[key];
    // The 2014 form carries an empty object (`{always: {}}`); YAML's `{always: }` reads as null.
    if (value !== null && this.record(value, `restartPolicy.${key}`, new Set()) === undefined) return undefined;
    return RESTART_POLICY_KEYS[key];
  }

  private volumes(input: unknown): Volume[] {
    const out: Volume[] = [];
    const seen = new Set<string>();
    (this.list(input, 'volumes') ?? []).forEach((raw, i) => {
      const path = `volumes[${i}]`;
      const v = this.record(raw, path, VOLUME_FIELDS);
      if (v === undefined) return;
      const name = this.dnsLabel(v['name'], `${path}.name`, true);
      if (name === undefined) return;
      if (seen.has(name)) this.fail(`${path}.name`, `duplicate volume name "${name}"`);
      seen.add(name);
      const hostPath = v['hostPath'] == null ? undefined : this.hostPathVolume(v['hostPath'], `${path}.hostPath`);
      const claim = v['claim'] == null ? undefined : this.claim(v['claim'], `${path}.claim`);
      const files = v['files'] == null ? undefined : this.volumeFiles(v['files'], `${path}.files`);
      const emptyDir = v['emptyDir'] == null ? undefined : this.emptyDirOf(v['emptyDir'], `${path}.emptyDir`);
      const given = Object.entries({ hostPath, claim, files, emptyDir }).filter(([, k]) => k !== undefined);
      if (given.length > 1) this.fail(path, 'must have at most one of hostPath, claim, files, emptyDir');
      out.push({ name, ...Object.fromEntries(given) });
    });
    return out;
  }

  /** A named volume of the host that outlives its pods (a v1 `persistentVolumeClaim`): a DNS subdomain names its directory. */
  private claim(input: unknown, path: string): Volume['claim'] {
    const c = this.record(input, path, CLAIM_FIELDS);
    if (c === undefined) return undefined;
    const name = this.manifestId(c['name'], `${path}.name`, true);
    let readOnly = false;
    if (c['readOnly'] != null) {
      if (typeof c['readOnly'] === 'boolean') readOnly = c['readOnly'];
      else this.fail(`${path}.readOnly`, `must be true or false, got ${describeValue(c['readOnly'])}`);
    }
    if (name === undefined) return undefined;
    return readOnly ? { name, readOnly } : { name };
  }

  /** A host directory or file as a volume: accepted only with `allowHostMounts`, as `mountType: HOST` is. */
  private hostPathVolume(input: unknown, path: string): Volume['hostPath'] {
    const h = this.record(input, path, HOST_PATH_FIELDS);
    if (h === undefined) return undefined;
    if (!this.checks.allowHostMounts) {
      return this.fail(
        path,
        'binds a directory or file of the host into the pod, which this agent refuses; run it with --allow-host-mounts (allowHostMounts) to accept it, or use an emptyDir volume',
      );
    }
    const written = this.absolutePath(h['path'], `${path}.path`, true, true);
    const hostPath = written === undefined ? undefined : this.hostPath(written, `${path}.path`, 'a hostPath', true);
    const type = h['type'] == null ? undefined : this.oneOf(h['type'], `${path}.type`, HOST_PATH_TYPES);
    // '' means no check, as absent does: left out, so one volume has one form.
    return hostPath === undefined ? undefined : { path: hostPath, ...(type === undefined || type === '' ? {} : { type }) };
  }

  /**
   * Labels or annotations: Kubernetes' key syntax; a label value is at most 63 letters, digits,
   * '-', '_' and '.', an annotation value any string, all annotations together at most 256 KiB.
   * An empty map is left out.
   */
  private keyValues(input: unknown, path: string, label: boolean): Record<string, string> | undefined {
    if (input == null) return undefined;
    const map = this.record(input, path, new Set(Object.keys(isRecord(input) ? input : {})));
    if (map === undefined) return undefined;
    const keys = Object.keys(map);
    if (keys.length > MAX_LIST_ENTRIES) return this.fail(path, `must hold at most ${MAX_LIST_ENTRIES} entries, got ${keys.length}`);
    const out: Record<string, string> = {};
    let bytes = 0;
    for (const key of keys) {
      const here = `${path}.${key}`;
      if (!isLabelKey(key)) {
        this.fail(
          here,
          'must be a key: an optional DNS subdomain and "/", then at most 63 letters, digits, "-", "_" and ".", beginning and ending with a letter or digit',
        );
        continue;
      }
      // An annotation value may be long (tools keep whole objects in one); only the total is held.
      const raw = map[key];
      const value =
        (label || typeof raw !== 'string'
          ? this.string(raw, here, false, this.written(map, key))
          : raw.includes('\u0000')
            ? this.fail(here, 'must not contain a NUL character')
            : raw) ?? '';
      if (label && !LABEL_VALUE.test(value))
        this.fail(
          here,
          `must be a label value (at most 63 letters, digits, "-", "_" and ".", beginning and ending with a letter or digit), got ${JSON.stringify(value.slice(0, 70))}`,
        );
      bytes += Buffer.byteLength(key) + Buffer.byteLength(value);
      Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
    }
    if (!label && bytes > MAX_ANNOTATION_BYTES) this.fail(path, `must be at most ${MAX_ANNOTATION_BYTES} bytes together, got ${bytes}`);
    return keys.length === 0 ? undefined : out;
  }
}
