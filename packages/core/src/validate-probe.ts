import { FieldChecks } from './field-checks.js';
import type { Container, Lifecycle, LifecycleHandler, Probe } from './manifest.js';

// A probe's path goes into its HTTP request line, which a space or a line break would end.
const UNSAFE_IN_REQUEST_LINE = /[\s\u0000-\u001f\u007f]/;
// RFC 9110 token: what an HTTP header name may hold.
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// A header value ends at a line break; any other control character but tab is not allowed.
const UNSAFE_IN_HEADER_VALUE = /[\u0000-\u0008\u000a-\u001f\u007f]/;
// A host to connect to: a name or an address, nothing that could change the request.
const PROBE_HOST = /^[A-Za-z0-9._:-]{1,253}$|^\[[0-9A-Fa-f:.]+\]$/;

/** A probe's fields, as the domain and a v1 Pod write them alike. */
export const PROBE_FIELD_NAMES = [
  'exec',
  'httpGet',
  'tcpSocket',
  'grpc',
  'initialDelaySeconds',
  'periodSeconds',
  'timeoutSeconds',
  'failureThreshold',
  'successThreshold',
] as const;
const PROBE_FIELDS = new Set<string>(PROBE_FIELD_NAMES);
type Handler = 'exec' | 'httpGet' | 'tcpSocket' | 'grpc';
const HANDLER_FIELDS: Readonly<Record<Handler, Set<string>>> = {
  exec: new Set(['command']),
  httpGet: new Set(['path', 'port', 'host', 'scheme', 'httpHeaders']),
  tcpSocket: new Set(['port', 'host']),
  grpc: new Set(['port', 'service']),
};
const HEADER_FIELDS = new Set(['name', 'value']);
const LIFECYCLE_FIELDS = new Set(['postStart', 'preStop']);
const HOOK_FIELDS = new Set(['exec', 'httpGet', 'tcpSocket', 'sleep']);
const SLEEP_FIELDS = new Set(['seconds']);
export const PROBE_KINDS = ['livenessProbe', 'readinessProbe', 'startupProbe'] as const;
export type ProbeKind = (typeof PROBE_KINDS)[number];

/** The checks of a container's liveness, readiness and startup probes, for the container checks. */
export class ProbeChecks extends FieldChecks {
  protected probe(input: unknown, path: string, kind: ProbeKind): Probe | undefined {
    const p = this.record(input, path, PROBE_FIELDS);
    if (p === undefined) return undefined;
    const handlers = (['exec', 'httpGet', 'tcpSocket', 'grpc'] as const).filter((h) => p[h] != null);
    if (handlers.length !== 1) {
      return this.fail(
        path,
        `must have exactly one of exec, httpGet, tcpSocket, grpc${handlers.length > 1 ? `, got ${handlers.join(' and ')}` : ''}`,
      );
    }
    const timing = (field: string, fallback: number, min: number) =>
      p[field] == null ? fallback : (this.integer(p[field], `${path}.${field}`, min, 86_400) ?? fallback);
    const successThreshold = timing('successThreshold', 1, 1);
    // As Kubernetes validation says: a liveness or startup probe passes at its first success.
    if (successThreshold !== 1 && kind !== 'readinessProbe')
      this.fail(`${path}.successThreshold`, `must be 1 for a ${kind}, got ${successThreshold}`);
    const common = {
      initialDelaySeconds: timing('initialDelaySeconds', 0, 0),
      periodSeconds: timing('periodSeconds', 10, 1),
      timeoutSeconds: timing('timeoutSeconds', 1, 1),
      failureThreshold: timing('failureThreshold', 3, 1),
      // Absent is 1, so a 2014 probe keeps the shape (and spec hash) it had.
      ...(successThreshold === 1 ? {} : { successThreshold }),
    };
    const handler = this.handlerOf(p, handlers[0]!, path);
    return handler === undefined ? undefined : { ...handler, ...common };
  }

  /**
   * A container's lifecycle hooks (`postStart`, `preStop`): each exactly one of `exec`, `httpGet`,
   * `sleep` (whole seconds). `tcpSocket` is refused, as the kubelet runs none (Kubernetes keeps it
   * only for old objects).
   */
  protected lifecycle(input: unknown, path: string): Lifecycle | undefined {
    const l = this.record(input, path, LIFECYCLE_FIELDS);
    if (l === undefined) return undefined;
    const out: { postStart?: LifecycleHandler; preStop?: LifecycleHandler } = {};
    for (const hook of ['postStart', 'preStop'] as const) {
      if (l[hook] == null) continue;
      const here = `${path}.${hook}`;
      const h = this.record(l[hook], here, HOOK_FIELDS);
      if (h === undefined) continue;
      if (h['tcpSocket'] != null) {
        this.fail(`${here}.tcpSocket`, 'is not run as a hook (the kubelet runs none either); use exec, httpGet or sleep');
        continue;
      }
      const handlers = (['exec', 'httpGet', 'sleep'] as const).filter((k) => h[k] != null);
      if (handlers.length !== 1) {
        this.fail(here, `must have exactly one of exec, httpGet, sleep${handlers.length > 1 ? `, got ${handlers.join(' and ')}` : ''}`);
        continue;
      }
      const kind = handlers[0]!;
      if (kind === 'sleep') {
        const sleep = this.record(h['sleep'], `${here}.sleep`, SLEEP_FIELDS);
        const seconds = sleep === undefined ? undefined : this.integer(sleep['seconds'], `${here}.sleep.seconds`, 0, 86_400);
        if (seconds !== undefined) out[hook] = { sleep: { seconds } };
        continue;
      }
      const handler = this.handlerOf(h, kind, here);
      if (handler !== undefined) out[hook] = handler as LifecycleHandler;
    }
    return Object.keys(out).length === 0 ? undefined : out;
  }

  /** The one handler `handler` of a probe or hook `p`. */
  private handlerOf(p: Record<string, unknown>, handler: Handler, path: string): Pick<Probe, Handler> | undefined {
    const h = this.record(p[handler], `${path}.${handler}`, HANDLER_FIELDS[handler]);
    if (h === undefined) return undefined;
    if (handler === 'grpc') return this.grpc(h, `${path}.grpc`);
    if (handler === 'exec') {
      const before = this.errors.length;
      const command = this.command(h['command'], `${path}.exec.command`);
      // A command that is wrong (not a list, too long) is one error, not also a missing one.
      if (command === undefined) return this.errors.length > before ? undefined : this.fail(`${path}.exec.command`, 'is required');
      return { exec: { command } };
    }
    const before = this.errors.length;
    const port = this.probePort(h['port'], `${path}.${handler}.port`);
    const host = this.probeHost(h['host'], `${path}.${handler}.host`);
    if (handler === 'tcpSocket') {
      if (port === undefined || this.errors.length > before) return undefined;
      return { tcpSocket: { port, ...(host === undefined ? {} : { host }) } };
    }
    const probePath = this.string(h['path'], `${path}.httpGet.path`, false) ?? '/';
    if (!probePath.startsWith('/')) this.fail(`${path}.httpGet.path`, 'must start with /');
    else if (UNSAFE_IN_REQUEST_LINE.test(probePath))
      this.fail(`${path}.httpGet.path`, `must not contain spaces or control characters, got ${JSON.stringify(probePath.slice(0, 70))}`);
    const scheme = h['scheme'] == null ? undefined : this.oneOf(h['scheme'], `${path}.httpGet.scheme`, ['HTTP', 'HTTPS'] as const);
    const headers = h['httpHeaders'] == null ? undefined : this.headers(h['httpHeaders'], `${path}.httpGet.httpHeaders`);
    if (port === undefined || this.errors.length > before) return undefined;
    return {
      httpGet: {
        path: probePath,
        port,
        ...(host === undefined ? {} : { host }),
        // HTTP is what absent means: left out, so one probe has one form.
        ...(scheme === undefined || scheme === 'HTTP' ? {} : { scheme }),
        ...(headers === undefined || headers.length === 0 ? {} : { httpHeaders: headers }),
      },
    };
  }

  /** A gRPC health check: a port number (Kubernetes takes no name here) and the service, if any. */
  private grpc(h: Record<string, unknown>, path: string): Pick<Probe, 'grpc'> | undefined {
    const before = this.errors.length;
    const port =
      typeof h['port'] === 'string'
        ? this.fail(`${path}.port`, `must be a port number (a gRPC probe names no port), got ${JSON.stringify(h['port'].slice(0, 70))}`)
        : this.probePort(h['port'], `${path}.port`);
    const service = h['service'] == null ? undefined : this.string(h['service'], `${path}.service`, false);
    if (service !== undefined && /[\u0000-\u001f\u007f]/.test(service)) this.fail(`${path}.service`, 'must not contain control characters');
    if (port === undefined || typeof port === 'string' || this.errors.length > before) return undefined;
    // The server as a whole is what an empty service asks for: left out, so one probe has one form.
    return { grpc: { port, ...(service === undefined || service === '' ? {} : { service }) } };
  }

  private probePort(input: unknown, path: string): number | string | undefined {
    if (typeof input === 'string' && input !== '') return input;
    if (input == null) return this.fail(path, 'is required');
    return this.integer(input, path, 1, 65535);
  }

  private probeHost(input: unknown, path: string): string | undefined {
    if (input == null || input === '') return undefined;
    const s = this.string(input, path, false);
    if (s === undefined) return undefined;
    return PROBE_HOST.test(s) ? s : this.fail(path, `must be a host name or an IP address, got ${JSON.stringify(s.slice(0, 70))}`);
  }

  private headers(input: unknown, path: string): Array<{ name: string; value: string }> {
    const out: Array<{ name: string; value: string }> = [];
    (this.list(input, path) ?? []).forEach((raw, i) => {
      const here = `${path}[${i}]`;
      const h = this.record(raw, here, HEADER_FIELDS);
      if (h === undefined) return;
      const name = this.string(h['name'], `${here}.name`, true);
      if (name !== undefined && !HEADER_NAME.test(name))
        this.fail(
          `${here}.name`,
          `must be an HTTP header name (letters, digits and !#$%&'*+-.^_\`|~), got ${JSON.stringify(name.slice(0, 70))}`,
        );
      const value = this.string(h['value'], `${here}.value`, false, this.written(h, 'value')) ?? '';
      if (UNSAFE_IN_HEADER_VALUE.test(value)) this.fail(`${here}.value`, 'must not contain line breaks or control characters');
      if (name !== undefined) out.push({ name, value });
    });
    return out;
  }

  /**
   * An http/tcp probe dials a port by number (the published host port when the container publishes
   * it, else the container port on the pod's own address, as the kubelet probes the pod IP), or by
   * the name of one of the container's TCP ports.
   */
  protected probePorts(c: Container, path: string): void {
    for (const kind of PROBE_KINDS) {
      const probe = c[kind];
      const handler = probe?.httpGet ?? probe?.tcpSocket;
      if (probe === undefined || handler === undefined || typeof handler.port === 'number') continue;
      const field = `${path}.${kind}.${probe.httpGet !== undefined ? 'httpGet' : 'tcpSocket'}.port`;
      const port = c.ports.find((p) => p.name === handler.port);
      if (port?.protocol !== 'TCP')
        this.fail(field, `must be a port number or name one of this container's TCP ports, got ${JSON.stringify(handler.port)}`);
    }
    for (const hook of ['postStart', 'preStop'] as const) {
      const port = c.lifecycle?.[hook]?.httpGet?.port;
      if (typeof port === 'string' && c.ports.find((p) => p.name === port)?.protocol !== 'TCP')
        this.fail(
          `${path}.lifecycle.${hook}.httpGet.port`,
          `must be a port number or name one of this container's TCP ports, got ${JSON.stringify(port)}`,
        );
    }
  }

  protected command(input: unknown, path: string): string[] | undefined {
    if (input === undefined || input === null) return undefined;
    const list = this.list(input, path);
    if (list === undefined) return undefined;
    const out = list.map((arg, i) => this.string(arg, `${path}[${i}]`, false, this.written(list, i)) ?? '');
    return out.length === 0 ? undefined : out;
  }
}
