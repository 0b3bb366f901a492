import fc from 'fast-check';

/** A manifest as an author writes it: plain JSON data, before validation. */
export type ManifestInput = Record<string, unknown>;

/** What `validManifest` and `fuzzInput` generate: which ids to leave out, and the fewest containers. */
export interface ValidManifestOptions {
  /** Ids the generator never produces, e.g. a sentinel's, so that a fuzz input cannot replace it. */
  readonly avoidId?: (id: string) => boolean;
  /** The fewest containers a manifest has. Default 0 (`containers: []` is a valid pod). */
  readonly minContainers?: number;
}

const dnsLabel = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?$/);
/** Sometimes at the 63-character limit, where an off-by-one would show. */
const longDnsLabel = fc.stringMatching(/^[a-z][-a-z0-9]{61}[a-z0-9]$/);
/** A DNS subdomain (the 2014 id): labels joined by dots. */
const subdomain = fc.array(dnsLabel, { minLength: 2, maxLength: 4 }).map((labels) => labels.join('.'));
const id = fc.oneof({ weight: 8, arbitrary: dnsLabel }, { weight: 1, arbitrary: longDnsLabel }, { weight: 1, arbitrary: subdomain });

const image = fc.oneof(
  fc.constantFrom('nginx', 'nginx:1.7', 'redis:latest', 'registry.example.com:5000/team/app:v2', 'busybox@sha256:' + 'a'.repeat(64)),
  fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._\-/:@+]{0,40}$/),
);

/** Free text: any code point but NUL (no process argument can hold one), control characters and astral planes included. */
const text = fc.string({ unit: 'binary', maxLength: 24 }).map((s) => s.replaceAll('\u0000', '0'));
const absolutePath = fc.array(fc.stringMatching(/^[-._a-zA-Z0-9]{1,12}$/), { maxLength: 4 }).map((parts) => `/${parts.join('/')}`);
const envName = fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,20}$/);

const port = fc.record(
  {
    name: dnsLabel,
    containerPort: fc.integer({ min: 1, max: 65535 }),
    hostPort: fc.integer({ min: 0, max: 65535 }),
    protocol: fc.constantFrom('TCP', 'UDP', 'tcp', 'udp', 'Udp', ''),
  },
  { requiredKeys: ['containerPort'] },
);

// Strings only: a number or boolean env value is refused (issue 17), whatever text it was written as.
// The name sometimes in its 2014 spelling, `key`.
const env = fc
  .tuple(
    fc.record(
      { name: envName, value: fc.oneof(text, fc.constantFrom('01234', '0x1F', '1.10', 'true', 'yes', '')) },
      { requiredKeys: ['name'] },
    ),
    fc.boolean(),
  )
  .map(([{ name, ...rest }, old]) => (old ? { key: name, ...rest } : { name, ...rest }));

/** A mount of one of `volumes`, its path sometimes in the 2014 spelling (`path`), sometimes `mountType: LOCAL`. */
const volumeMount = (volumes: readonly string[]) =>
  fc
    .tuple(
      fc.record(
        {
          name: fc.constantFrom(...volumes),
          mountPath: absolutePath,
          readOnly: fc.boolean(),
          mountType: fc.constantFrom('LOCAL', 'local'),
        },
        { requiredKeys: ['name', 'mountPath'] },
      ),
      fc.boolean(),
    )
    .map(([{ mountPath, ...rest }, old]) => (old ? { path: mountPath, ...rest } : { mountPath, ...rest }));

const probeTimings = {
  initialDelaySeconds: fc.integer({ min: 0, max: 86_400 }),
  periodSeconds: fc.integer({ min: 1, max: 86_400 }),
  timeoutSeconds: fc.integer({ min: 1, max: 86_400 }),
  failureThreshold: fc.integer({ min: 1, max: 86_400 }),
};
/** The handler is chosen later: an http, tcp or grpc probe needs a published TCP port of its container. */
const probe = fc.record({
  kind: fc.constantFrom('exec', 'httpGet', 'tcpSocket', 'grpc'),
  command: fc.array(text, { minLength: 1, maxLength: 3 }),
  path: absolutePath,
  byName: fc.boolean(),
  timings: fc.record(probeTimings, { requiredKeys: [] }),
});

const container = (volumes: readonly string[]) =>
  fc.record(
    {
      image,
      command: fc.array(text, { maxLength: 3 }),
      workingDir: absolutePath,
      ports: fc.array(port, { maxLength: 3 }),
      env: fc.array(env, { maxLength: 3 }),
      memory: fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
      cpu: fc.integer({ min: 0, max: 262_144 }),
      volumeMounts: volumes.length === 0 ? fc.constant([]) : fc.array(volumeMount(volumes), { maxLength: 2 }),
      imagePullPolicy: fc.constantFrom('Always', 'IfNotPresent', 'Never', 'PullAlways', 'PullIfNotPresent', 'PullNever'),
      livenessProbe: probe,
    },
    { requiredKeys: ['image'] },
  );

/**
 * Manifests the validator accepts, using every field of the 2014 manifest within its rules:
 * unique container and volume names, mounts of declared volumes only, a host port claimed once
 * per protocol (in a manifest that names its version, a port without `hostPort` claims its
 * `containerPort`), probes on a published TCP port. Optional fields are sometimes absent, sometimes
 * spelled the way 2014 manifests did (`protocol: tcp`, `hostPort: 0`, `path`, `key`, `V1Beta2`,
 * `restartPolicy: {always: {}}`, `PullAlways`, a `uuid`, a dotted id), env values that would read
 * as numbers or booleans if they were not quoted (`"01234"`, `"yes"`). Every one has an id (a
 * source that names id-less manifests after their origin is tested with its own inputs) and, with
 * `minContainers` 0, sometimes no container at all.
 */
export function validManifest(options: ValidManifestOptions = {}): fc.Arbitrary<ManifestInput> {
  const avoid = options.avoidId ?? (() => false);
  const minContainers = options.minContainers ?? 0;
  return fc
    .record({
      version: fc.constantFrom('v1beta1', 'V1Beta1', 'v1beta2', undefined, undefined),
      id: id.filter((value) => !avoid(value)),
      uuid: fc.option(fc.uuid(), { nil: undefined }),
      volumes: fc.uniqueArray(dnsLabel, { maxLength: 3 }),
      containerNames: fc.oneof(
        { weight: 19, arbitrary: fc.uniqueArray(dnsLabel, { minLength: Math.max(1, minContainers), maxLength: 3 }) },
        { weight: minContainers === 0 ? 1 : 0, arbitrary: fc.constant<string[]>([]) },
      ),
      restartPolicy: fc.constantFrom('Always', 'OnFailure', 'Never', { always: {} }, { onFailure: {} }, { never: {} }, undefined),
      terminationGracePeriodSeconds: fc.option(fc.integer({ min: 0, max: 86_400 }), { nil: undefined }),
    })
    .chain((head) => fc.tuple(fc.constant(head), fc.tuple(...head.containerNames.map(() => container(head.volumes)))))
    .map(([head, containers]) => {
      const claimed = new Set<string>();
      const versioned = head.version !== undefined;
      const out: ManifestInput = {
        ...(head.version === undefined ? {} : { version: head.version }),
        id: head.id,
        ...(head.uuid === undefined ? {} : { uuid: head.uuid }),
        ...(head.volumes.length === 0 ? {} : { volumes: head.volumes.map((name) => ({ name })) }),
        containers: containers.map((c, i) => finishContainer(head.containerNames[i]!, c, claimed, versioned)),
        ...(head.restartPolicy === undefined ? {} : { restartPolicy: head.restartPolicy }),
        ...(head.terminationGracePeriodSeconds === undefined ? {} : { terminationGracePeriodSeconds: head.terminationGracePeriodSeconds }),
      };
      return out;
    });
}

interface GeneratedContainer {
  readonly ports?: ReadonlyArray<Record<string, unknown>>;
  readonly livenessProbe?: { kind: string; command: string[]; path: string; byName: boolean; timings: Partial<Record<string, number>> };
  readonly [field: string]: unknown;
}

/**
 * The host port (with protocol) a generated port claims, if any: its `hostPort`, or in a manifest
 * that names its version and a port written without one, its `containerPort` (the 2014 rule).
 */
export function claimedHostPort(p: Readonly<Record<string, unknown>>, versioned: boolean): string | undefined {
  const protocol = String(p['protocol'] ?? '').toUpperCase() || 'TCP';
  const host = p['hostPort'] === undefined && versioned ? p['containerPort'] : p['hostPort'];
  return typeof host === 'number' && host !== 0 ? `${host}/${protocol}` : undefined;
}

/** Unpublishes (`hostPort: 0`) ports whose host port is already claimed, and turns a probe with no port to use into exec. */
function finishContainer(name: string, generated: GeneratedContainer, claimed: Set<string>, versioned: boolean): ManifestInput {
  const { livenessProbe, ports, ...rest } = generated;
  const finishedPorts = ports?.map((p) => {
    const key = claimedHostPort(p, versioned);
    if (key === undefined) return p;
    if (claimed.has(key)) return { ...p, hostPort: 0 };
    claimed.add(key);
    return p;
  });
  const out: ManifestInput = { name, ...rest, ...(finishedPorts === undefined ? {} : { ports: finishedPorts }) };
  if (livenessProbe === undefined) return out;
  const { kind, command, path, byName, timings } = livenessProbe;
  const published = finishedPorts?.find(
    (p) =>
      claimedHostPort(p, versioned) !== undefined &&
      String(p['protocol'] ?? 'TCP').toUpperCase() !== 'UDP' &&
      (!byName || typeof p['name'] === 'string'),
  );
  if (kind === 'exec' || published === undefined) return { ...out, livenessProbe: { exec: { command }, ...timings } };
  // The validator takes the first port with that number or name, so that one must be the published one.
  const target = byName ? published['name'] : published['containerPort'];
  const first = finishedPorts?.find((p) => (byName ? p['name'] === target : p['containerPort'] === target));
  if (first !== published) return { ...out, livenessProbe: { exec: { command }, ...timings } };
  const handler =
    kind === 'httpGet'
      ? { httpGet: { path, port: target } }
      : kind === 'grpc'
        ? { grpc: { port: published['containerPort'] } } // a number: a gRPC probe names no port
        : { tcpSocket: { port: target } };
  return { ...out, livenessProbe: { ...handler, ...timings } };
}
