import fc from 'fast-check';

/** A manifest as an author writes it: plain JSON data, before validation. */
export type ManifestInput = Record<string, unknown>;

export interface ValidManifestOptions {
  /** Ids the generator never produces, e.g. a sentinel's, so that a fuzz input cannot replace it. */
  readonly avoidId?: (id: string) => boolean;
}

const dnsLabel = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?$/);
/** Sometimes at the 63-character limit, where an off-by-one would show. */
const longDnsLabel = fc.stringMatching(/^[a-z][-a-z0-9]{61}[a-z0-9]$/);
const id = fc.oneof({ weight: 9, arbitrary: dnsLabel }, { weight: 1, arbitrary: longDnsLabel });

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
    protocol: fc.constantFrom('TCP', 'UDP', 'tcp', 'udp', ''),
  },
  { requiredKeys: ['containerPort'] },
);

// Strings only: a number or boolean env value is refused (issue 17), whatever text it was written as.
const env = fc.record(
  { name: envName, value: fc.oneof(text, fc.constantFrom('01234', '0x1F', '1.10', 'true', 'yes', '')) },
  { requiredKeys: ['name'] },
);

const probeTimings = {
  initialDelaySeconds: fc.integer({ min: 0, max: 86_400 }),
  periodSeconds: fc.integer({ min: 1, max: 86_400 }),
  timeoutSeconds: fc.integer({ min: 1, max: 86_400 }),
  failureThreshold: fc.integer({ min: 1, max: 86_400 }),
};
/** The handler is chosen later: an http or tcp probe needs a published TCP port of its container. */
const probe = fc.record({
  kind: fc.constantFrom('exec', 'httpGet', 'tcpSocket'),
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
      volumeMounts:
        volumes.length === 0
          ? fc.constant([])
          : fc.array(fc.record({ name: fc.constantFrom(...volumes), mountPath: absolutePath, readOnly: fc.boolean() }, { requiredKeys: ['name', 'mountPath'] }), { maxLength: 2 }),
      imagePullPolicy: fc.constantFrom('Always', 'IfNotPresent', 'Never'),
      livenessProbe: probe,
    },
    { requiredKeys: ['image'] },
  );

/**
 * Manifests the validator accepts, using every field of the 2014 manifest within its rules:
 * unique container and volume names, mounts of declared volumes only, a host port claimed once
 * per protocol, probes on a published TCP port. Optional fields are sometimes absent, sometimes
 * spelled the way 2014 examples did (`protocol: tcp`, `hostPort: 0`), env values that would read
 * as numbers or booleans if they were not quoted (`"01234"`, `"yes"`).
 */
export function validManifest(options: ValidManifestOptions = {}): fc.Arbitrary<ManifestInput> {
  const avoid = options.avoidId ?? (() => false);
  return fc
    .record({
      version: fc.constantFrom('v1beta1', undefined),
      id: id.filter((value) => !avoid(value)),
      volumes: fc.uniqueArray(dnsLabel, { maxLength: 3 }),
      containerNames: fc.uniqueArray(dnsLabel, { minLength: 1, maxLength: 3 }),
      restartPolicy: fc.constantFrom('Always', 'OnFailure', 'Never', undefined),
      terminationGracePeriodSeconds: fc.option(fc.integer({ min: 0, max: 86_400 }), { nil: undefined }),
    })
    .chain((head) =>
      fc.tuple(fc.constant(head), fc.tuple(...head.containerNames.map(() => container(head.volumes)))),
    )
    .map(([head, containers]) => {
      const claimed = new Set<string>();
      const out: ManifestInput = {
        ...(head.version === undefined ? {} : { version: head.version }),
        id: head.id,
        ...(head.volumes.length === 0 ? {} : { volumes: head.volumes.map((name) => ({ name })) }),
        containers: containers.map((c, i) => finishContainer(head.containerNames[i]!, c, claimed)),
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

/** Drops host ports another container already claimed, and turns a probe with no port to use into exec. */
function finishContainer(name: string, generated: GeneratedContainer, claimed: Set<string>): ManifestInput {
  const { livenessProbe, ports, ...rest } = generated;
  const finishedPorts = ports?.map((p) => {
    const protocol = String(p['protocol'] ?? '').toUpperCase() || 'TCP';
    const key = `${String(p['hostPort'])}/${protocol}`;
    if (typeof p['hostPort'] !== 'number' || p['hostPort'] === 0) return p;
    if (claimed.has(key)) {
      const { hostPort: _taken, ...free } = p;
      return free;
    }
    claimed.add(key);
    return p;
  });
  const out: ManifestInput = { name, ...rest, ...(finishedPorts === undefined ? {} : { ports: finishedPorts }) };
  if (livenessProbe === undefined) return out;
  const { kind, command, path, byName, timings } = livenessProbe;
  const published = finishedPorts?.find(
    (p) => typeof p['hostPort'] === 'number' && p['hostPort'] !== 0 && String(p['protocol'] ?? 'TCP').toUpperCase() !== 'UDP' && (!byName || typeof p['name'] === 'string'),
  );
  if (kind === 'exec' || published === undefined) return { ...out, livenessProbe: { exec: { command }, ...timings } };
  // The validator takes the first port with that number or name, so that one must be the published one.
  const target = byName ? published['name'] : published['containerPort'];
  const first = finishedPorts?.find((p) => (byName ? p['name'] === target : p['containerPort'] === target));
  if (first !== published) return { ...out, livenessProbe: { exec: { command }, ...timings } };
  const handler = kind === 'httpGet' ? { httpGet: { path, port: target } } : { tcpSocket: { port: target } };
  return { ...out, livenessProbe: { ...handler, ...timings } };
}
