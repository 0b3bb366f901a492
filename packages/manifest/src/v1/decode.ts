import { describeValue, isRecord, type FieldError, type WrittenAs } from '@kubelet-ts/core';
import { IGNORED_V1_FIELDS, MAPPED_V1_FIELDS } from './fields.js';
import { joinV1PodId } from './pod-id.js';
import { decodeResources } from './resources.js';
import { V1VolumeDecoder, defined } from './decode-volumes.js';

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
 * `command` to `entrypoint`, `args` to `command`, resources to bytes and shares, volumes to volumes
 * (see `V1VolumeDecoder`). What means nothing on one host is ignored (IGNORED_V1_FIELDS);
 * what would change what runs and is not supported is refused here by its v1 path. Values are
 * passed on as written, for `validateManifest` to check as it checks every manifest.
 */
export function decodeV1Pod(input: Record<string, unknown>, writtenAs?: WrittenAs, tokens = false): DecodedV1Pod {
  const d = new V1PodDecoder(writtenAs, tokens);
  return { manifest: d.pod(input), errors: d.errors, writtenAt: d.writtenAt, renamed: d.renamed };
}

class V1PodDecoder extends V1VolumeDecoder {
  private hostNetwork = false;

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
      deletionTimestamp: m['deletionTimestamp'],
      deletionGracePeriodSeconds: m['deletionGracePeriodSeconds'],
      // A dotted name in `default` is kept under `name.default` (see `joinV1PodId`): its namespace is
      // then written, so that the pod's name can be read back from its id.
      namespace:
        namespace == null || namespace === '' ? (typeof name === 'string' && name.includes('.') ? 'default' : undefined) : namespace,
      labels: m['labels'],
      annotations: m['annotations'],
      hostNetwork: s['hostNetwork'],
      securityContext: this.securityContext(s['securityContext'], 'spec.securityContext', 'pod'),
      hostname: s['hostname'],
      dnsPolicy: s['dnsPolicy'],
      dnsConfig: s['dnsConfig'],
      shareProcessNamespace: s['shareProcessNamespace'],
      hostPID: s['hostPID'],
      hostIPC: s['hostIPC'],
      nodeSelector: s['nodeSelector'],
      nodeAffinity: this.nodeAffinity(s['affinity']),
      // (`serviceAccount`, the deprecated spelling, is ignored: the API server copies it here, and the kubelet reads only this one.)
      serviceAccountName: s['serviceAccountName'],
      enableServiceLinks: s['enableServiceLinks'],
      volumes: Array.isArray(volumes) ? volumes.map((v, i) => this.volume(v, `spec.volumes[${i}]`)) : volumes,
      initContainers,
      containers,
      restartPolicy: s['restartPolicy'],
      terminationGracePeriodSeconds: s['terminationGracePeriodSeconds'],
      imagePullSecrets: this.pullSecrets(s['imagePullSecrets']),
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
      stdin: input['stdin'],
      stdinOnce: input['stdinOnce'],
      tty: input['tty'],
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
        return defined({ name: v['name'], mountPath: v['mountPath'], readOnly: v['readOnly'], subPath: v['subPath'] });
      }),
      imagePullPolicy: input['imagePullPolicy'],
      restartPolicy: input['restartPolicy'],
      securityContext: this.securityContext(input['securityContext'], `${path}.securityContext`, 'container'),
      lifecycle: this.lifecycle(input['lifecycle'], `${path}.lifecycle`),
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

  /**
   * The required node affinity, which the kubelet's admission checks; the preferred one and pod
   * (anti-)affinity place a pod among nodes, which one host does not do, and are ignored.
   */
  private nodeAffinity(input: unknown): unknown {
    if (!isRecord(input) || !isRecord(input['nodeAffinity'])) return undefined;
    this.renamed.push(['spec.nodeAffinity', 'spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution']);
    return input['nodeAffinity']['requiredDuringSchedulingIgnoredDuringExecution'] ?? undefined;
  }

  /**
   * `imagePullSecrets: [{name}]` as the names, for validation to check (and to leave out an empty
   * one, as the kubelet does). An entry with more than `name` is refused as the API server refuses
   * it; one that is not an object is refused at its `name`, where validation would name it too.
   */
  private pullSecrets(input: unknown): unknown {
    if (!Array.isArray(input)) return input;
    return input.map((entry, i) => {
      const path = `spec.imagePullSecrets[${i}]`;
      if (!isRecord(entry)) return this.fail(`${path}.name`, `must be {name: <Secret>}, got ${describeValue(entry)}`) ?? '';
      this.known(entry, path, MAPPED_V1_FIELDS.localObjectReference);
      return entry['name'] ?? '';
    });
  }

  /** Hooks as they are, but `stopSignal`, which this agent cannot give the engines, refused by its path. */
  private lifecycle(input: unknown, path: string): unknown {
    if (!isRecord(input)) return input ?? undefined;
    const { stopSignal, ...rest } = input;
    if (stopSignal != null) this.fail(`${path}.stopSignal`, "not supported; the image's STOPSIGNAL is what stops the container");
    return rest;
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
    // A probe whose only handler is refused is refused once, not also as one without a handler.
    if (!['exec', 'httpGet', 'tcpSocket', 'grpc'].some((h) => input[h] != null))
      return Object.keys(input).some((k) => !isMapped(k)) ? undefined : input;
    return Object.fromEntries(Object.entries(input).filter(([key]) => isMapped(key)));
  }
}

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
