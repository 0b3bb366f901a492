import type { FieldError } from './errors.js';
import { FieldChecks, describe, isRecord } from './field-checks.js';
import type { Container, ContainerManifest, EnvVar, Port, Probe, Protocol, PullPolicy, RestartPolicy, Volume, VolumeMount } from './manifest.js';
import type { WrittenAs } from './yaml-decode.js';

export type ValidationResult =
  | { readonly ok: true; readonly manifest: ContainerManifest }
  | { readonly ok: false; readonly errors: readonly FieldError[]; readonly id?: string };

export interface ValidateOptions {
  /**
   * How values that are not strings were written in the text the manifest came from, so that a
   * message can say what to quote (`"01234"`, not the number 1234 it was read as). `parseManifests`
   * passes it; without it, messages show the value as JavaScript prints it.
   */
  readonly writtenAs?: WrittenAs;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
// Docker's reference grammar is looser than this, but no valid reference contains whitespace or
// control characters, and rejecting them here gives a field error instead of an engine error later.
const IMAGE = /^[A-Za-z0-9][A-Za-z0-9._\-/:@+]*$/;
/** Containers in one manifest. The kubelet sets none; a pod of more than this is a mistake or an attack. */
export const MAX_CONTAINERS = 250;
// A probe's path goes into its HTTP request line, which a space or a line break would end.
const UNSAFE_IN_REQUEST_LINE = /[\s\u0000-\u001f\u007f]/;

const MANIFEST_FIELDS = new Set(['version', 'id', 'volumes', 'containers', 'restartPolicy', 'terminationGracePeriodSeconds']);
const CONTAINER_FIELDS = new Set([
  'name', 'image', 'command', 'workingDir', 'ports', 'env', 'memory', 'cpu', 'volumeMounts', 'imagePullPolicy', 'livenessProbe',
]);
const PROBE_FIELDS = new Set(['exec', 'httpGet', 'tcpSocket', 'initialDelaySeconds', 'periodSeconds', 'timeoutSeconds', 'failureThreshold']);
const RESTART_POLICIES: readonly RestartPolicy[] = ['Always', 'OnFailure', 'Never'];
const PULL_POLICIES: readonly PullPolicy[] = ['Always', 'IfNotPresent', 'Never'];
const PORT_FIELDS = new Set(['name', 'containerPort', 'hostPort', 'protocol']);
const ENV_FIELDS = new Set(['name', 'value']);
const MOUNT_FIELDS = new Set(['name', 'mountPath', 'readOnly']);
const VOLUME_FIELDS = new Set(['name']);

/**
 * Validates one decoded manifest and normalises it (protocol upper-cased, defaults made explicit
 * where the runtime needs them). Every problem is reported with its field path; a manifest is
 * valid as a whole or rejected as a whole.
 */
export function validateManifest(input: unknown, options: ValidateOptions = {}): ValidationResult {
  const v = new Walker(options.writtenAs);
  const manifest = v.manifest(input);
  if (v.errors.length > 0 || manifest === undefined) {
    const id = isRecord(input) && typeof input['id'] === 'string' ? input['id'] : undefined;
    return id === undefined ? { ok: false, errors: v.errors } : { ok: false, errors: v.errors, id };
  }
  return { ok: true, manifest };
}

/** The manifest's structure, field by field; every problem found is kept. */
class Walker extends FieldChecks {
  manifest(input: unknown): ContainerManifest | undefined {
    const m = this.record(input, '', MANIFEST_FIELDS);
    if (m === undefined) return undefined;
    if (m['version'] != null && m['version'] !== 'v1beta1') {
      this.fail('version', `must be "v1beta1", got ${describe(m['version'])}`);
    }
    const id = this.dnsLabel(m['id'], 'id', true);
    const volumes = this.volumes(m['volumes']);
    const declared = new Set(volumes.map((vol) => vol.name));

    let rawContainers: unknown[] = [];
    if (Array.isArray(m['containers']) && m['containers'].length > MAX_CONTAINERS) {
      // Refused before any is looked at: the work of a manifest stays bounded whatever it holds.
      this.fail('containers', `must list at most ${MAX_CONTAINERS} containers, got ${m['containers'].length}; split the pod into several manifests`);
    } else {
      rawContainers = this.list(m['containers'], 'containers') ?? [];
      if (Array.isArray(m['containers']) && rawContainers.length === 0) this.fail('containers', 'must list at least one container');
    }
    if (m['containers'] === undefined || m['containers'] === null) this.fail('containers', 'is required');
    const containers: Container[] = [];
    /** Each valid container with its path: its index in `containers` skips the invalid ones. */
    const located: Array<[Container, string]> = [];
    const names = new Map<string, number>();
    const hostPorts = new Map<string, string>();
    rawContainers.forEach((raw, i) => {
      const path = `containers[${i}]`;
      const c = this.container(raw, path, declared);
      // Duplicates are reported even for a container with other problems: every error at once.
      const name = isRecord(raw) && typeof raw['name'] === 'string' && raw['name'] !== '' ? raw['name'] : undefined;
      if (name !== undefined) {
        const first = names.get(name);
        if (first !== undefined) this.fail(`${path}.name`, `duplicate container name "${name}" (also containers[${first}])`);
        else names.set(name, i);
      }
      if (c === undefined) return;
      // The containers of a manifest share one host, so a host port may be claimed once per protocol.
      c.ports.forEach((p, j) => {
        if (p.hostPort === undefined) return;
        const key = `${p.hostPort}/${p.protocol}`;
        const owner = hostPorts.get(key);
        const here = `${path}.ports[${j}].hostPort`;
        if (owner !== undefined) this.fail(here, `host port ${key} is already used by ${owner}`);
        else hostPorts.set(key, here);
      });
      containers.push(c);
      located.push([c, path]);
    });
    const restartPolicy = this.oneOf(m['restartPolicy'], 'restartPolicy', RESTART_POLICIES);
    const grace = m['terminationGracePeriodSeconds'] == null ? undefined : this.integer(m['terminationGracePeriodSeconds'], 'terminationGracePeriodSeconds', 0, 86_400);
    for (const [c, path] of located) this.probePorts(c, path);
    if (id === undefined || this.errors.length > 0) return undefined;
    return {
      version: 'v1beta1',
      id,
      volumes,
      containers,
      ...(restartPolicy === undefined ? {} : { restartPolicy }),
      ...(grace === undefined ? {} : { terminationGracePeriodSeconds: grace }),
    };
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
      out.push({ name });
    });
    return out;
  }

  private container(input: unknown, path: string, volumes: Set<string>): Container | undefined {
    const c = this.record(input, path, CONTAINER_FIELDS);
    if (c === undefined) return undefined;
    const before = this.errors.length;
    const name = this.dnsLabel(c['name'], `${path}.name`, true);
    const image = this.string(c['image'], `${path}.image`, true);
    if (image !== undefined && !IMAGE.test(image)) this.fail(`${path}.image`, `is not a valid image reference: ${JSON.stringify(image.slice(0, 70))}`);
    const command = this.command(c['command'], `${path}.command`);
    const workingDir = this.absolutePath(c['workingDir'], `${path}.workingDir`, false);
    const ports = (this.list(c['ports'], `${path}.ports`) ?? []).map((p, i) => this.port(p, `${path}.ports[${i}]`));
    const env = this.env(c['env'], `${path}.env`);
    const memory = c['memory'] == null ? undefined : this.integer(c['memory'], `${path}.memory`, 0, Number.MAX_SAFE_INTEGER);
    const cpu = c['cpu'] == null ? undefined : this.integer(c['cpu'], `${path}.cpu`, 0, 262144);
    const mounts = (this.list(c['volumeMounts'], `${path}.volumeMounts`) ?? []).map((m, i) =>
      this.mount(m, `${path}.volumeMounts[${i}]`, volumes),
    );
    const imagePullPolicy = this.oneOf(c['imagePullPolicy'], `${path}.imagePullPolicy`, PULL_POLICIES);
    const livenessProbe = c['livenessProbe'] == null ? undefined : this.probe(c['livenessProbe'], `${path}.livenessProbe`);
    if (this.errors.length > before || name === undefined || image === undefined) return undefined;
    return {
      name,
      image,
      ...(command === undefined ? {} : { command }),
      ...(workingDir === undefined || workingDir === '' ? {} : { workingDir }),
      ports: ports as Port[],
      env,
      ...(memory === undefined || memory === 0 ? {} : { memory }),
      ...(cpu === undefined || cpu === 0 ? {} : { cpu }),
      volumeMounts: mounts as VolumeMount[],
      ...(imagePullPolicy === undefined ? {} : { imagePullPolicy }),
      ...(livenessProbe === undefined ? {} : { livenessProbe }),
    };
  }

  private probe(input: unknown, path: string): Probe | undefined {
    const p = this.record(input, path, PROBE_FIELDS);
    if (p === undefined) return undefined;
    const handlers = (['exec', 'httpGet', 'tcpSocket'] as const).filter((h) => p[h] != null);
    if (handlers.length !== 1) {
      return this.fail(path, `must have exactly one of exec, httpGet, tcpSocket${handlers.length > 1 ? `, got ${handlers.join(' and ')}` : ''}`);
    }
    const timing = (field: string, fallback: number, min: number) =>
      p[field] == null ? fallback : this.integer(p[field], `${path}.${field}`, min, 86_400) ?? fallback;
    const common = {
      initialDelaySeconds: timing('initialDelaySeconds', 0, 0),
      periodSeconds: timing('periodSeconds', 10, 1),
      timeoutSeconds: timing('timeoutSeconds', 1, 1),
      failureThreshold: timing('failureThreshold', 3, 1),
    };
    const handler = handlers[0] as 'exec' | 'httpGet' | 'tcpSocket';
    const h = this.record(p[handler], `${path}.${handler}`, new Set(handler === 'exec' ? ['command'] : handler === 'httpGet' ? ['path', 'port'] : ['port']));
    if (h === undefined) return undefined;
    if (handler === 'exec') {
      const before = this.errors.length;
      const command = this.command(h['command'], `${path}.exec.command`);
      // A command that is wrong (not a list, too long) is one error, not also a missing one.
      if (command === undefined) return this.errors.length > before ? undefined : this.fail(`${path}.exec.command`, 'is required');
      return { exec: { command }, ...common };
    }
    const port = this.probePort(h['port'], `${path}.${handler}.port`);
    if (port === undefined) return undefined;
    if (handler === 'tcpSocket') return { tcpSocket: { port }, ...common };
    const probePath = this.string(h['path'], `${path}.httpGet.path`, false) ?? '/';
    if (!probePath.startsWith('/')) return this.fail(`${path}.httpGet.path`, 'must start with /');
    if (UNSAFE_IN_REQUEST_LINE.test(probePath)) return this.fail(`${path}.httpGet.path`, `must not contain spaces or control characters, got ${JSON.stringify(probePath.slice(0, 70))}`);
    return { httpGet: { path: probePath, port }, ...common };
  }

  private probePort(input: unknown, path: string): number | string | undefined {
    if (typeof input === 'string' && input !== '') return input;
    if (input == null) return this.fail(path, 'is required');
    return this.integer(input, path, 1, 65535);
  }

  /** An http/tcp probe goes through the host port published for its port, so it must have one. */
  private probePorts(c: Container, path: string): void {
    const probe = c.livenessProbe;
    const handler = probe?.httpGet ?? probe?.tcpSocket;
    if (probe === undefined || handler === undefined) return;
    const kind = probe.httpGet !== undefined ? 'httpGet' : 'tcpSocket';
    const port = c.ports.find((p) => (typeof handler.port === 'number' ? p.containerPort === handler.port : p.name === handler.port));
    if (port === undefined || port.hostPort === undefined || port.protocol !== 'TCP') {
      this.fail(`${path}.livenessProbe.${kind}.port`, `must name a TCP port of this container with a hostPort, got ${JSON.stringify(handler.port)}`);
    }
  }

  private command(input: unknown, path: string): string[] | undefined {
    if (input === undefined || input === null) return undefined;
    const list = this.list(input, path);
    if (list === undefined) return undefined;
    const out = list.map((arg, i) => this.string(arg, `${path}[${i}]`, false, this.written(list, i)) ?? '');
    return out.length === 0 ? undefined : out;
  }

  private port(input: unknown, path: string): Port | undefined {
    const p = this.record(input, path, PORT_FIELDS);
    if (p === undefined) return undefined;
    const name = p['name'] == null || p['name'] === '' ? undefined : this.dnsLabel(p['name'], `${path}.name`, false);
    const containerPort = this.integer(p['containerPort'] ?? null, `${path}.containerPort`, 1, 65535);
    const hostPort = p['hostPort'] == null ? undefined : this.integer(p['hostPort'], `${path}.hostPort`, 0, 65535);
    const protocol = this.protocol(p['protocol'], `${path}.protocol`);
    if (containerPort === undefined || protocol === undefined) return undefined;
    return {
      ...(name === undefined ? {} : { name }),
      containerPort,
      ...(hostPort === undefined || hostPort === 0 ? {} : { hostPort }),
      protocol,
    };
  }

  private protocol(input: unknown, path: string): Protocol | undefined {
    if (input === undefined || input === null || input === '') return 'TCP';
    // The 2014 examples spelled protocols in lower case; both spellings mean the same thing.
    if (input === 'TCP' || input === 'tcp') return 'TCP';
    if (input === 'UDP' || input === 'udp') return 'UDP';
    return this.fail(path, `must be TCP or UDP, got ${describe(input)}`);
  }

  private env(input: unknown, path: string): EnvVar[] {
    const out: EnvVar[] = [];
    (this.list(input, path) ?? []).forEach((raw, i) => {
      const here = `${path}[${i}]`;
      const e = this.record(raw, here, ENV_FIELDS);
      if (e === undefined) return;
      const name = this.string(e['name'], `${here}.name`, true);
      if (name !== undefined && !ENV_NAME.test(name)) this.fail(`${here}.name`, `must be a C identifier, got ${JSON.stringify(name.slice(0, 70))}`);
      // A number or boolean is refused, not turned into text (see FieldChecks.string); a missing value is "".
      const value = this.string(e['value'], `${here}.value`, false, this.written(e, 'value')) ?? '';
      if (name !== undefined) out.push({ name, value });
    });
    return out;
  }

  private mount(input: unknown, path: string, volumes: Set<string>): VolumeMount | undefined {
    const m = this.record(input, path, MOUNT_FIELDS);
    if (m === undefined) return undefined;
    const name = this.dnsLabel(m['name'], `${path}.name`, true);
    if (name !== undefined && !volumes.has(name)) this.fail(`${path}.name`, `names no declared volume ("${name}" is not in volumes)`);
    const mountPath = this.absolutePath(m['mountPath'], `${path}.mountPath`, true, true);
    let readOnly = false;
    if (m['readOnly'] != null) {
      if (typeof m['readOnly'] === 'boolean') readOnly = m['readOnly'];
      else this.fail(`${path}.readOnly`, `must be true or false, got ${describe(m['readOnly'])}`);
    }
    if (name === undefined || mountPath === undefined) return undefined;
    return { name, mountPath, readOnly };
  }
}
