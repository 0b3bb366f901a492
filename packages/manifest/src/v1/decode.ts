import { describeValue, isRecord, type FieldError, type WrittenAs } from '@kubelet-ts/core';
import { IGNORED_V1_FIELDS, MAPPED_V1_FIELDS, REFUSED_ADVICE } from './fields.js';
import { joinV1PodId } from './pod-id.js';
import { ceilMillis, ceilUnits, parseQuantity } from './quantity.js';
import { decodeResources } from './resources.js';

/** A v1 Pod in the domain manifest's shape (for `validateManifest`), with what was refused on the way. */
export interface DecodedV1Pod {
  /** The domain manifest, unvalidated: the checks every manifest gets come after. */
  readonly manifest: Record<string, unknown>;
  /** Fields refused while mapping, by the v1 path the author wrote. */
  readonly errors: readonly FieldError[];
  /**
   * Fields the mapping made from another the author wrote, by the v1 path validation will name
   * and the path written (an AppArmor annotation becomes its container's `appArmorProfile`).
   */
  readonly writtenAt: ReadonlyMap<string, string>;
  /**
   * Paths the mapping moved, by the v1 path validation will name (its start) and the one written in
   * its place, the first that fits: a `configMap` volume's fields are those of its `files` source.
   */
  readonly renamed: ReadonlyArray<readonly [string, string]>;
}

const PROBES = ['livenessProbe', 'readinessProbe', 'startupProbe'] as const;

/**
 * Maps a v1 Pod to the domain manifest's shape: `metadata.name` (and namespace) to the id,
 * `command` to `entrypoint`, `args` to `command`, resources to bytes and shares, `emptyDir` and
 * `hostPath` volumes to volumes. What means nothing on one host is ignored (IGNORED_V1_FIELDS);
 * what would change what runs and is not supported is refused here by its v1 path. Values are
 * passed on as written, for `validateManifest` to check as it checks every manifest.
 */
export function decodeV1Pod(input: Record<string, unknown>, writtenAs?: WrittenAs): DecodedV1Pod {
  const d = new V1PodDecoder(writtenAs);
  return { manifest: d.pod(input), errors: d.errors, writtenAt: d.writtenAt, renamed: d.renamed };
}

class V1PodDecoder {
  readonly errors: FieldError[] = [];
  readonly writtenAt = new Map<string, string>();
  readonly renamed: Array<readonly [string, string]> = [];
  private hostNetwork = false;

  constructor(private readonly writtenAs: WrittenAs | undefined) {}

  /**
   * A file mode as Kubernetes reads it: written `0644` it is octal, as in YAML 1.1 (which the
   * API's YAML reader follows, and every example assumes); YAML 1.2 would read 644.
   */
  private mode(holder: Record<string, unknown>, key: string): unknown {
    const written = this.writtenAs?.(holder, key);
    return written !== undefined && /^0[0-7]+$/.test(written) ? Number.parseInt(written, 8) : holder[key];
  }

  /** The items of a source with their modes read as Kubernetes reads them. */
  private items(
    input: unknown,
    path: string,
    map: (item: Record<string, unknown>, at: string) => Record<string, unknown> = (i) => i,
  ): unknown {
    return this.each(input, path, (item, at) => {
      const out = map(item, at);
      return item['mode'] == null ? out : { ...out, mode: this.mode(item, 'mode') };
    });
  }

  private fail(path: string, message: string): undefined {
    this.errors.push({ path, message });
    return undefined;
  }

  /** Refuses every key of `value` that is neither mapped nor ignored, naming what to do instead. */
  private known(
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

  pod(input: Record<string, unknown>): Record<string, unknown> {
    this.known(input, '', MAPPED_V1_FIELDS.pod, IGNORED_V1_FIELDS.pod);
    const meta = input['metadata'];
    const spec = input['spec'];
    if (!isRecord(meta))
      this.fail('metadata', meta == null ? "is required (with the pod's name)" : `must be an object, got ${describeValue(meta)}`);
    if (!isRecord(spec))
      this.fail('spec', spec == null ? "is required (with the pod's containers)" : `must be an object, got ${describeValue(spec)}`);
    const m = isRecord(meta) ? meta : {};
    const s = isRecord(spec) ? spec : {};
    this.known(m, 'metadata', MAPPED_V1_FIELDS.metadata, IGNORED_V1_FIELDS.metadata);
    this.known(s, 'spec', MAPPED_V1_FIELDS.spec, IGNORED_V1_FIELDS.spec);
    this.hostNetwork = s['hostNetwork'] === true;
    const name = m['name'];
    const namespace = m['namespace'];
    // Validation then checks the id is a DNS subdomain, and says so at `metadata.name`.
    const id =
      typeof name === 'string' && (namespace == null || typeof namespace === 'string') ? joinV1PodId(name, namespace ?? undefined) : name;
    const volumes = s['volumes'];
    const containers = Array.isArray(s['containers'])
      ? s['containers'].map((c, i) => this.container(c, `spec.containers[${i}]`))
      : (s['containers'] ?? null);
    const inits = s['initContainers'];
    const initContainers = Array.isArray(inits) ? inits.map((c, i) => this.container(c, `spec.initContainers[${i}]`)) : inits;
    this.appArmorAnnotations(m['annotations'], [
      ...(Array.isArray(initContainers) ? initContainers.map((c, i) => [c, `spec.initContainers[${i}]`] as const) : []),
      ...(Array.isArray(containers) ? containers.map((c, i) => [c, `spec.containers[${i}]`] as const) : []),
    ]);
    return defined({
      id,
      uuid: m['uid'],
      namespace: namespace === '' ? undefined : namespace,
      labels: m['labels'],
      annotations: m['annotations'],
      hostNetwork: s['hostNetwork'],
      securityContext: this.securityContext(s['securityContext'], 'spec.securityContext', 'pod'),
      hostname: s['hostname'],
      shareProcessNamespace: s['shareProcessNamespace'],
      volumes: Array.isArray(volumes) ? volumes.map((v, i) => this.volume(v, `spec.volumes[${i}]`)) : volumes,
      initContainers,
      containers,
      restartPolicy: s['restartPolicy'],
      terminationGracePeriodSeconds: s['terminationGracePeriodSeconds'],
    });
  }

  /**
   * A securityContext, passed on for validation to check, without what means nothing on a Linux
   * host (`windowsOptions`) or says what happens anyway (`procMount: Default`, the pod-level
   * `supplementalGroupsPolicy: Merge`, `fsGroupChangePolicy`, `seLinuxChangePolicy`: a pod's own
   * volumes are made for it, so their ownership is set once either way).
   */
  private securityContext(input: unknown, path: string, level: 'pod' | 'container'): unknown {
    if (!isRecord(input)) return input;
    const { windowsOptions: _windows, ...out } = input;
    if (level === 'container') {
      const procMount = out['procMount'];
      if (procMount != null && procMount !== 'Default')
        this.fail(`${path}.procMount`, `${describeValue(procMount)} is not supported; leave it out (Default)`);
      delete out['procMount'];
    } else {
      const policy = out['supplementalGroupsPolicy'];
      if (policy != null && policy !== 'Merge')
        this.fail(`${path}.supplementalGroupsPolicy`, `${describeValue(policy)} is not supported; leave it out (Merge)`);
      for (const key of ['supplementalGroupsPolicy', 'fsGroupChangePolicy', 'seLinuxChangePolicy']) delete out[key];
    }
    return out;
  }

  /**
   * The AppArmor profile each container gets from the annotation Kubernetes used before the field
   * (`container.apparmor.security.beta.kubernetes.io/<container>`: `runtime/default`,
   * `localhost/<profile>`, `unconfined`), where the container's own field does not say: never ignored.
   */
  private appArmorAnnotations(annotations: unknown, containers: ReadonlyArray<readonly [unknown, string]>): void {
    if (!isRecord(annotations)) return;
    for (const [key, value] of Object.entries(annotations)) {
      if (!key.startsWith(APPARMOR_ANNOTATION)) continue;
      const path = `metadata.annotations[${key}]`;
      const name = key.slice(APPARMOR_ANNOTATION.length);
      const [container, at] = containers.find(([c]) => isRecord(c) && c['name'] === name) ?? [undefined, ''];
      if (!isRecord(container)) {
        this.fail(path, `names no container of the pod ("${name}" is not in spec.containers)`);
        continue;
      }
      const profile = appArmorProfileOf(value);
      if (profile === undefined) {
        this.fail(path, `must be runtime/default, localhost/<profile> or unconfined, got ${describeValue(value)}`);
        continue;
      }
      const security = isRecord(container['securityContext']) ? container['securityContext'] : {};
      if (security['appArmorProfile'] != null) continue;
      container['securityContext'] = { ...security, appArmorProfile: profile };
      this.writtenAt.set(`${at}.securityContext.appArmorProfile`, path);
    }
  }

  private volume(input: unknown, path: string): unknown {
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
    if (emptyDir != null) {
      if (!isRecord(emptyDir)) this.fail(`${path}.emptyDir`, `must be an object, got ${describeValue(emptyDir)}`);
      else {
        this.known(
          emptyDir,
          `${path}.emptyDir`,
          MAPPED_V1_FIELDS.emptyDir,
          [],
          "an emptyDir is a directory of the pod on the host's disk, without a size limit",
        );
        const medium = emptyDir['medium'];
        if (medium != null && medium !== '')
          this.fail(
            `${path}.emptyDir.medium`,
            `${describeValue(medium)} is not supported; leave it out for a directory on the host's disk`,
          );
      }
    }
    // A hostPath is passed on as written: validation checks it, and refuses it without allowHostMounts.
    return defined({ name: input['name'], hostPath, claim: this.claim(pvc, `${path}.persistentVolumeClaim`), files });
  }

  /**
   * A `configMap`, `secret`, `downwardAPI` or `projected` volume as the projection it is (`files`):
   * one source, or the projected ones in order. A service account token needs an API server to
   * sign it, and is refused saying so.
   */
  private volumeFiles(input: Record<string, unknown>, path: string): unknown {
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
        const issued = ['serviceAccountToken', 'clusterTrustBundle', 'podCertificate'].filter((key) => s[key] != null);
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
  private downwardFiles(input: unknown, path: string): unknown {
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
  private claim(input: unknown, path: string): unknown {
    if (!isRecord(input)) return input ?? undefined;
    this.known(input, path, ['claimName', 'readOnly']);
    return defined({ name: input['claimName'], readOnly: input['readOnly'] });
  }

  private container(input: unknown, path: string): unknown {
    if (!isRecord(input)) return input;
    this.known(input, path, MAPPED_V1_FIELDS.container, IGNORED_V1_FIELDS.container);
    const resources = decodeResources(input['resources'], `${path}.resources`, this.errors);
    const probes: Record<string, unknown> = {};
    for (const kind of PROBES) probes[kind] = this.probe(input[kind], `${path}.${kind}`);
    return defined({
      name: input['name'],
      image: input['image'],
      entrypoint: input['command'],
      command: input['args'],
      workingDir: input['workingDir'],
      ports: this.each(input['ports'], `${path}.ports`, (p, at) => this.port(p, at)),
      envFrom: input['envFrom'],
      // Passed on as the same objects, so a message can show how a value was written (`"01234"`).
      env: this.each(input['env'], `${path}.env`, (e, at) => {
        this.known(e, at, MAPPED_V1_FIELDS.env);
        return e['valueFrom'] == null ? e : { ...e, valueFrom: this.envSource(e['valueFrom'], `${at}.valueFrom`) };
      }),
      ...resources,
      volumeMounts: this.each(input['volumeMounts'], `${path}.volumeMounts`, (v, at) => {
        this.known(v, at, MAPPED_V1_FIELDS.volumeMount);
        const propagation = v['mountPropagation'];
        if (propagation != null && propagation !== 'None')
          this.fail(`${at}.mountPropagation`, `${describeValue(propagation)} is not supported; leave it out (None)`);
        return defined({ name: v['name'], mountPath: v['mountPath'], readOnly: v['readOnly'] });
      }),
      imagePullPolicy: input['imagePullPolicy'],
      restartPolicy: input['restartPolicy'],
      securityContext: this.securityContext(input['securityContext'], `${path}.securityContext`, 'container'),
      ...probes,
    });
  }

  /**
   * A variable's source for validation to check: a pod field as it is, a resource's `divisor`
   * quantity in millicores (CPU) or bytes (memory), a ConfigMap's or Secret's key as it is.
   */
  private envSource(input: unknown, path: string): unknown {
    if (!isRecord(input)) return input;
    const { resourceFieldRef, ...rest } = input;
    if (!isRecord(resourceFieldRef) || resourceFieldRef['divisor'] == null)
      return resourceFieldRef == null ? rest : { ...rest, resourceFieldRef };
    const resolved = this.divisor(resourceFieldRef, `${path}.resourceFieldRef.divisor`);
    return resolved === undefined ? undefined : { ...rest, resourceFieldRef: resolved };
  }

  /** A resourceFieldRef with its `divisor` quantity in millicores (CPU) or bytes (memory). */
  private divisor(ref: Record<string, unknown>, at: string): Record<string, unknown> | undefined {
    const q = parseQuantity(ref['divisor']);
    if (!q.ok) return void this.fail(at, q.message);
    const cpu = typeof ref['resource'] === 'string' && ref['resource'].endsWith('.cpu');
    const divisor = Number(cpu ? ceilMillis(q.value) : ceilUnits(q.value));
    if (!(divisor >= 1)) return void this.fail(at, `must be at least ${cpu ? '1m' : '1'}`);
    return { ...ref, divisor };
  }

  /** Maps each object of a list; anything else is passed on for validation to report. */
  private each(input: unknown, path: string, map: (item: Record<string, unknown>, path: string) => unknown): unknown {
    if (!Array.isArray(input)) return input;
    return input.map((item, i) => (isRecord(item) ? map(item, `${path}[${i}]`) : item));
  }

  private port(p: Record<string, unknown>, path: string): unknown {
    this.known(p, path, MAPPED_V1_FIELDS.port);
    if (p['protocol'] === 'SCTP') this.fail(`${path}.protocol`, 'SCTP is not supported; use TCP or UDP');
    // As Kubernetes validates a v1 Pod: a hostNetwork pod's ports are the host's, so a hostPort is its containerPort.
    // (The domain form leaves such a port unpublished whatever its hostPort, so it checks nothing there.)
    if (this.hostNetwork && p['hostPort'] != null && p['hostPort'] !== 0 && p['hostPort'] !== p['containerPort']) {
      this.fail(`${path}.hostPort`, 'must equal containerPort in a hostNetwork pod; leave it out');
    }
    return p;
  }

  private probe(input: unknown, path: string): unknown {
    if (!isRecord(input)) return input;
    this.known(input, path, MAPPED_V1_FIELDS.probe);
    // A probe whose only handler is refused (grpc) is refused once, not also as one without a handler.
    if (!['exec', 'httpGet', 'tcpSocket'].some((h) => input[h] != null))
      return Object.keys(input).some((k) => !isMapped(k)) ? undefined : input;
    return Object.fromEntries(Object.entries(input).filter(([key]) => isMapped(key)));
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

const APPARMOR_ANNOTATION = 'container.apparmor.security.beta.kubernetes.io/';

/** The field's form of an AppArmor annotation's value; `undefined` for a value that is none of the three. */
function appArmorProfileOf(value: unknown): Record<string, string> | undefined {
  if (value === 'runtime/default') return { type: 'RuntimeDefault' };
  if (value === 'unconfined') return { type: 'Unconfined' };
  if (typeof value === 'string' && value.startsWith('localhost/') && value.length > 'localhost/'.length)
    return { type: 'Localhost', localhostProfile: value.slice('localhost/'.length) };
  return undefined;
}

const isMapped = (key: string): boolean => (MAPPED_V1_FIELDS.probe as readonly string[]).includes(key);

/** The object without its undefined values: a field not written stays absent. */
function defined(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}
