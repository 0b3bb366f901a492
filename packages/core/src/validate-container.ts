import { posix } from 'node:path';
import { isIP } from 'node:net';
import { describeValue } from './field-checks.js';
import { ENV_RESOURCES, KEYED_FIELD_PATH, POD_FIELD_PATHS } from './container-env.js';
import type { Container, EnvVar, EnvVarSource, Port, Probe, Protocol, PullPolicy, VolumeMount } from './manifest.js';
import { PROBE_KINDS } from './validate-probe.js';
import { ObjectRefChecks } from './validate-files.js';

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
// Docker's reference grammar is looser than this, but no valid reference contains whitespace or
// control characters, and rejecting them here gives a field error instead of an engine error later.
const IMAGE = /^[A-Za-z0-9][A-Za-z0-9._\-/:@+]*$/;

const CONTAINER_FIELDS = new Set([
  'name',
  'image',
  'command',
  'entrypoint',
  'workingDir',
  'ports',
  'env',
  'envFrom',
  'memory',
  'memoryRequest',
  'cpu',
  'cpuLimitMillis',
  'volumeMounts',
  'imagePullPolicy',
  'livenessProbe',
  'readinessProbe',
  'startupProbe',
  'securityContext',
  'restartPolicy',
  'lifecycle',
  'stdin',
  'stdinOnce',
  'tty',
]);
// The late-2014 v1beta1 spellings (`PullAlways`) mean the same as ours.
const PULL_POLICIES: Readonly<Record<string, PullPolicy>> = {
  Always: 'Always',
  IfNotPresent: 'IfNotPresent',
  Never: 'Never',
  PullAlways: 'Always',
  PullIfNotPresent: 'IfNotPresent',
  PullNever: 'Never',
};
const PORT_FIELDS = new Set(['name', 'containerPort', 'hostPort', 'hostIP', 'protocol']);
// `key` and `path` are the first 2014 spellings of `name` and `mountPath`.
const ENV_FIELDS = new Set(['name', 'key', 'value', 'valueFrom']);
const ENV_SOURCE_FIELDS = new Set(['fieldRef', 'resourceFieldRef', 'configMapKeyRef', 'secretKeyRef']);
const FIELD_REF_FIELDS = new Set(['fieldPath', 'apiVersion']);
const RESOURCE_REF_FIELDS = new Set(['containerName', 'resource', 'divisor']);
const MOUNT_FIELDS = new Set(['name', 'mountPath', 'path', 'readOnly', 'mountType', 'subPath']);

/** The checks of one container and what is in it, for the manifest walker. */
export class ContainerChecks extends ObjectRefChecks {
  /**
   * Set by the manifest walker when the manifest names its version: a port without `hostPort` is
   * then published on its `containerPort`, as the 2014 agent did.
   */
  protected publishUnmappedPorts = false;
  /** Ports published only because of that rule, so a clash can say why the port is claimed. */
  protected readonly implicitlyPublished = new WeakSet<Port>();

  protected container(input: unknown, path: string, volumes: Set<string>): Container | undefined {
    const c = this.record(input, path, CONTAINER_FIELDS);
    if (c === undefined) return undefined;
    const before = this.errors.length;
    const name = this.dnsLabel(c['name'], `${path}.name`, true);
    const image = this.string(c['image'], `${path}.image`, true);
    if (image !== undefined && !IMAGE.test(image))
      this.fail(`${path}.image`, `is not a valid image reference: ${JSON.stringify(image.slice(0, 70))}`);
    const command = this.command(c['command'], `${path}.command`);
    const entrypoint = this.command(c['entrypoint'], `${path}.entrypoint`);
    const workingDir = this.absolutePath(c['workingDir'], `${path}.workingDir`, false);
    const ports = (this.list(c['ports'], `${path}.ports`) ?? []).map((p, i) => this.port(p, `${path}.ports[${i}]`));
    const env = this.env(c['env'], `${path}.env`);
    const envFrom = this.envFrom(c['envFrom'], `${path}.envFrom`);
    const memory = c['memory'] == null ? undefined : this.integer(c['memory'], `${path}.memory`, 0, Number.MAX_SAFE_INTEGER);
    const memoryRequest =
      c['memoryRequest'] == null ? undefined : this.integer(c['memoryRequest'], `${path}.memoryRequest`, 0, Number.MAX_SAFE_INTEGER);
    const cpu = c['cpu'] == null ? undefined : this.integer(c['cpu'], `${path}.cpu`, 0, 262144);
    // At most 1,000 CPUs: far beyond any host, far below where a CFS quota overflows.
    const cpuLimitMillis =
      c['cpuLimitMillis'] == null ? undefined : this.integer(c['cpuLimitMillis'], `${path}.cpuLimitMillis`, 1, 1_000_000);
    const mounts = (this.list(c['volumeMounts'], `${path}.volumeMounts`) ?? []).map((m, i) =>
      this.mount(m, `${path}.volumeMounts[${i}]`, volumes),
    );
    const imagePullPolicy = this.pullPolicy(c['imagePullPolicy'], `${path}.imagePullPolicy`);
    const probes: Partial<Record<(typeof PROBE_KINDS)[number], Probe>> = {};
    for (const kind of PROBE_KINDS) {
      const probe = c[kind] == null ? undefined : this.probe(c[kind], `${path}.${kind}`, kind);
      if (probe !== undefined) probes[kind] = probe;
    }
    const securityContext = this.containerSecurity(c['securityContext'], `${path}.securityContext`);
    const restartPolicy =
      c['restartPolicy'] == null ? undefined : this.oneOf(c['restartPolicy'], `${path}.restartPolicy`, ['Always'] as const);
    const lifecycle = c['lifecycle'] == null ? undefined : this.lifecycle(c['lifecycle'], `${path}.lifecycle`);
    const stdin = this.boolean(c['stdin'], `${path}.stdin`);
    const stdinOnce = this.boolean(c['stdinOnce'], `${path}.stdinOnce`);
    const tty = this.boolean(c['tty'], `${path}.tty`);
    if (this.errors.length > before || name === undefined || image === undefined) return undefined;
    return {
      name,
      image,
      ...(command === undefined ? {} : { command }),
      ...(entrypoint === undefined ? {} : { entrypoint }),
      ...(workingDir === undefined || workingDir === '' ? {} : { workingDir }),
      ports: ports as Port[],
      ...(envFrom === undefined ? {} : { envFrom }),
      env,
      ...(memory === undefined || memory === 0 ? {} : { memory }),
      ...(memoryRequest === undefined || memoryRequest === 0 ? {} : { memoryRequest }),
      ...(cpu === undefined || cpu === 0 ? {} : { cpu }),
      ...(cpuLimitMillis === undefined ? {} : { cpuLimitMillis }),
      volumeMounts: mounts as VolumeMount[],
      ...(imagePullPolicy === undefined ? {} : { imagePullPolicy }),
      ...probes,
      ...(securityContext === undefined ? {} : { securityContext }),
      ...(restartPolicy === undefined ? {} : { restartPolicy }),
      ...(lifecycle === undefined ? {} : { lifecycle }),
      // Each written only when true, so one container has one form (false is what absent means).
      ...(stdin === true ? { stdin } : {}),
      ...(stdinOnce === true ? { stdinOnce } : {}),
      ...(tty === true ? { tty } : {}),
    };
  }

  /**
   * As Kubernetes validates them: only an init container takes `restartPolicy` (`Always`: a
   * sidecar), and only a sidecar of the init containers has probes or hooks, since the others run to
   * completion before anything is probed.
   */
  protected initRules(c: Container, path: string, init: boolean): void {
    if (!init && c.restartPolicy !== undefined)
      this.fail(`${path}.restartPolicy`, 'is taken only by an init container (Always: a sidecar); leave it out');
    if (!init || c.restartPolicy === 'Always') return;
    for (const kind of ['livenessProbe', 'readinessProbe', 'startupProbe', 'lifecycle'] as const)
      if (c[kind] !== undefined)
        this.fail(
          `${path}.${kind}`,
          'is not taken by an init container that runs to completion; give it restartPolicy: Always (a sidecar), or leave it out',
        );
  }

  private pullPolicy(input: unknown, path: string): PullPolicy | undefined {
    if (input == null) return undefined;
    if (typeof input === 'string' && Object.hasOwn(PULL_POLICIES, input)) return PULL_POLICIES[input];
    return this.fail(
      path,
      `must be one of Always, IfNotPresent, Never (or PullAlways, PullIfNotPresent, PullNever), got ${describeValue(input)}`,
    );
  }

  private port(input: unknown, path: string): Port | undefined {
    const p = this.record(input, path, PORT_FIELDS);
    if (p === undefined) return undefined;
    const name = p['name'] == null || p['name'] === '' ? undefined : this.dnsLabel(p['name'], `${path}.name`, false);
    const containerPort = this.integer(p['containerPort'] ?? null, `${path}.containerPort`, 1, 65535);
    const hostPort = p['hostPort'] == null ? undefined : this.integer(p['hostPort'], `${path}.hostPort`, 0, 65535);
    const hostIP = this.hostIP(p['hostIP'], `${path}.hostIP`);
    const protocol = this.protocol(p['protocol'], `${path}.protocol`);
    if (containerPort === undefined || protocol === undefined) return undefined;
    // `hostPort: 0` written out stays unpublished in every version: the way to opt out.
    const published = hostPort === undefined && p['hostPort'] == null && this.publishUnmappedPorts ? containerPort : hostPort;
    const port: Port = {
      ...(name === undefined ? {} : { name }),
      containerPort,
      ...(published === undefined || published === 0 ? {} : { hostPort: published }),
      ...(hostIP === undefined ? {} : { hostIP }),
      protocol,
    };
    if (published !== hostPort) this.implicitlyPublished.add(port);
    return port;
  }

  /** The address a port is published on: an IPv4 or IPv6 address as written. */
  private hostIP(input: unknown, path: string): string | undefined {
    if (input == null || input === '') return undefined;
    const s = this.string(input, path, false);
    if (s === undefined) return undefined;
    return isIP(s) === 0 ? this.fail(path, `must be an IPv4 or IPv6 address, got ${JSON.stringify(s.slice(0, 70))}`) : s;
  }

  private protocol(input: unknown, path: string): Protocol | undefined {
    if (input === undefined || input === null || input === '') return 'TCP';
    // 2014 compared protocols without case (`tcp`, `Udp`).
    const upper = typeof input === 'string' ? input.toUpperCase() : undefined;
    if (upper === 'TCP' || upper === 'UDP') return upper;
    return this.fail(path, `must be TCP or UDP, got ${describeValue(input)}`);
  }

  private env(input: unknown, path: string): EnvVar[] {
    const out: EnvVar[] = [];
    (this.list(input, path) ?? []).forEach((raw, i) => {
      const here = `${path}[${i}]`;
      const e = this.record(raw, here, ENV_FIELDS);
      if (e === undefined) return;
      const field = this.spelling(e, 'name', 'key', here, 'containers[].env[].key');
      const name = this.string(e[field], `${here}.${field}`, true);
      if (name !== undefined && !ENV_NAME.test(name))
        this.fail(`${here}.${field}`, `must be a C identifier, got ${JSON.stringify(name.slice(0, 70))}`);
      // A number or boolean is refused, not turned into text (see FieldChecks.string); a missing value is "".
      const value = this.string(e['value'], `${here}.value`, false, this.written(e, 'value')) ?? '';
      const valueFrom = e['valueFrom'] == null ? undefined : this.envSource(e['valueFrom'], `${here}.valueFrom`);
      if (valueFrom !== undefined && value !== '') this.fail(`${here}.value`, 'must be empty when valueFrom is given; give one of them');
      if (name !== undefined) out.push(valueFrom === undefined ? { name, value } : { name, value, valueFrom });
    });
    return out;
  }

  /** Where a variable is read from: exactly one of a pod field and a container resource. */
  private envSource(input: unknown, path: string): EnvVarSource | undefined {
    const v = this.record(input, path, ENV_SOURCE_FIELDS);
    if (v === undefined) return undefined;
    const given = [...ENV_SOURCE_FIELDS].filter((k) => v[k] != null);
    if (given.length !== 1) return this.fail(path, 'must have exactly one of fieldRef, resourceFieldRef, configMapKeyRef, secretKeyRef');
    for (const kind of ['configMapKeyRef', 'secretKeyRef'] as const) {
      if (v[kind] == null) continue;
      const ref = this.keyRef(v[kind], `${path}.${kind}`);
      return ref === undefined ? undefined : { [kind]: ref };
    }
    if (v['fieldRef'] != null) {
      const f = this.record(v['fieldRef'], `${path}.fieldRef`, FIELD_REF_FIELDS);
      if (f === undefined) return undefined;
      if (f['apiVersion'] != null && f['apiVersion'] !== 'v1')
        return this.fail(`${path}.fieldRef.apiVersion`, `must be v1, got ${describeValue(f['apiVersion'])}`);
      const fieldPath = this.string(f['fieldPath'], `${path}.fieldRef.fieldPath`, true);
      if (fieldPath === undefined) return undefined;
      if (!(POD_FIELD_PATHS as readonly string[]).includes(fieldPath) && !KEYED_FIELD_PATH.test(fieldPath))
        return this.fail(
          `${path}.fieldRef.fieldPath`,
          `must be one of ${POD_FIELD_PATHS.join(', ')}, metadata.labels['<key>'], metadata.annotations['<key>'], got ${JSON.stringify(fieldPath.slice(0, 70))}`,
        );
      return { fieldRef: { fieldPath } };
    }
    const r = this.record(v['resourceFieldRef'], `${path}.resourceFieldRef`, RESOURCE_REF_FIELDS);
    if (r === undefined) return undefined;
    const resource =
      r['resource'] == null
        ? this.fail(`${path}.resourceFieldRef.resource`, 'is required')
        : this.oneOf(r['resource'], `${path}.resourceFieldRef.resource`, ENV_RESOURCES);
    const containerName =
      r['containerName'] == null || r['containerName'] === ''
        ? undefined
        : this.dnsLabel(r['containerName'], `${path}.resourceFieldRef.containerName`, false);
    const divisor =
      r['divisor'] == null ? undefined : this.integer(r['divisor'], `${path}.resourceFieldRef.divisor`, 1, Number.MAX_SAFE_INTEGER);
    if (resource === undefined) return undefined;
    return {
      resourceFieldRef: {
        ...(containerName === undefined ? {} : { containerName }),
        resource,
        ...(divisor === undefined ? {} : { divisor }),
      },
    };
  }

  /**
   * Which of a field's two spellings to read: the current one when given, else the deprecated one
   * (a warning naming it either way, since a deprecated spelling beside the current one is ignored).
   */
  private spelling(holder: Record<string, unknown>, current: string, old: string, path: string, pattern: string): string {
    if (holder[old] === undefined) return current;
    this.deprecated(
      `${path}.${old}`,
      pattern,
      `"${old}" is the deprecated 2014 spelling of "${current}"; write ${current} (where both are given, ${current} is used)`,
    );
    return holder[current] == null ? old : current;
  }

  private mount(input: unknown, path: string, volumes: Set<string>): VolumeMount | undefined {
    const m = this.record(input, path, MOUNT_FIELDS);
    if (m === undefined) return undefined;
    const name = this.dnsLabel(m['name'], `${path}.name`, true);
    if (name !== undefined && !volumes.has(name)) this.fail(`${path}.name`, `names no declared volume ("${name}" is not in volumes)`);
    const field = this.spelling(m, 'mountPath', 'path', path, 'containers[].volumeMounts[].path');
    const mountPath = this.absolutePath(m[field], `${path}.${field}`, true, true);
    let readOnly = false;
    if (m['readOnly'] != null) {
      if (typeof m['readOnly'] === 'boolean') readOnly = m['readOnly'];
      else this.fail(`${path}.readOnly`, `must be true or false, got ${describeValue(m['readOnly'])}`);
    }
    const host = this.mountType(m['mountType'], `${path}.mountType`);
    if (host === true && mountPath !== undefined) this.hostPath(mountPath, `${path}.${field}`, 'a HOST mount');
    const subPath = m['subPath'] == null || m['subPath'] === '' ? undefined : this.subPath(m['subPath'], `${path}.subPath`);
    if (subPath !== undefined && host === true)
      this.fail(`${path}.subPath`, 'is not taken by a HOST mount, which binds the host path itself');
    if (name === undefined || mountPath === undefined || host === undefined) return undefined;
    return { name, mountPath, readOnly, ...(host ? { mountType: 'HOST' as const } : {}), ...(subPath === undefined ? {} : { subPath }) };
  }

  /** A path inside a volume: relative, no `..` or empty step, nothing the engine's bind syntax reads (`:`). */
  private subPath(input: unknown, path: string): string | undefined {
    const s = this.string(input, path, false);
    if (s === undefined) return undefined;
    if (s.startsWith('/') || s.split('/').some((step) => step === '' || step === '..') || /[\u0000-\u001f:]/.test(s))
      return this.fail(path, `must be a relative path without '..', empty steps or ':', got ${JSON.stringify(s.slice(0, 70))}`);
    return s;
  }

  /** true for HOST, false for LOCAL (the default), undefined when refused. */
  private mountType(input: unknown, path: string): boolean | undefined {
    if (input == null || input === '') return false;
    const upper = typeof input === 'string' ? input.toUpperCase() : undefined;
    if (upper === 'LOCAL') return false;
    if (upper !== 'HOST') return this.fail(path, `must be LOCAL or HOST, got ${describeValue(input)}`);
    if (!this.checks.allowHostMounts) {
      return this.fail(
        path,
        'HOST binds a directory of the host into the container, which this agent refuses; run it with --allow-host-mounts (allowHostMounts) to accept it',
      );
    }
    return true;
  }

  /**
   * What a HOST mount or a hostPath volume may bind: an absolute path below the root (relative paths
   * are already refused), without `..`. A hostPath volume's is normalised (`/var/log/` is `/var/log`,
   * as the kubelet binds it) and returned; a HOST mount's, which is also where the container sees
   * it, must be normal as written.
   */
  protected hostPath(hostPath: string, path: string, what: string, normalise = false): string | undefined {
    if (hostPath.split('/').includes('..'))
      return this.fail(path, `${what} must not contain "..", got ${JSON.stringify(hostPath.slice(0, 70))}`);
    const normal = posix.normalize(hostPath).replace(/(.)\/+$/, '$1');
    if (normal === '/') return this.fail(path, `${what} must not bind the host's root directory "/"`);
    if (!normalise && normal !== hostPath)
      return this.fail(
        path,
        `${what} must be a normal path (no "." or empty segments, no trailing "/"), got ${JSON.stringify(hostPath.slice(0, 70))}`,
      );
    return normal;
  }
}
