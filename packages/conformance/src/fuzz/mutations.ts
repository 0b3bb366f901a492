import fc from 'fast-check';
import { MAX_LIST_ENTRIES } from '@kubelet-ts/core';
import { Picks, containersOf, env, freshName, list, port, setOwn, someContainer, someVolumeMount, type Rec } from './mutation-sites.js';
import { claimedHostPort, validManifest, type ManifestInput, type ValidManifestOptions } from './valid-manifests.js';

/** A valid manifest broken in one place, and the field path the validator must name for it. */
export interface InvalidManifest {
  /** The valid manifest it was made from. */
  readonly base: ManifestInput;
  readonly input: unknown;
  readonly path: string;
  /** Which mutation broke it (for figures and failure messages). */
  readonly mutation: string;
  /** The broken manifest still carries `base.id`, so "retain last good" can keep `base` in force. */
  readonly keepsId: boolean;
}

const BAD_LABELS = ['', 'Upper', 'has_underscore', 'has.dot', '-lead', 'trail-', 'a'.repeat(64), 'spa ce', 'ünï', 'tab\t', '0'.repeat(70)];
// An id is a DNS subdomain (dots, up to 253). No empty id here: a source that names id-less
// manifests after their origin accepts one.
const BAD_IDS = [
  'Upper',
  'has_underscore',
  'a..b',
  '.lead',
  'trail.',
  '-lead',
  'trail-',
  'a.-b',
  'a'.repeat(254),
  'spa ce',
  'ünï',
  'tab\t',
  'a/b',
  '..',
];
const BAD_IMAGES = [' nginx', 'nginx latest', 'ngi\nnx', '-nginx', 'nginx\u0000', 'ünicode', ':tag', 'a\u007f'];
const BAD_ENV_NAMES = ['1ABC', 'A-B', 'A B', 'A=B', '', 'é', 'A\u0000'];
const UNKNOWN_KEYS = ['labels', 'Image', 'hostNetwork', 'ports ', '__proto__', 'constructor', 'toString', ''];

/** Each mutation breaks the draft in place and returns the path of the field it broke. */
const MUTATIONS: Record<string, (m: Rec, r: Picks) => string> = {
  'id-not-dns-subdomain': (m, r) => ((m['id'] = r.pick(BAD_IDS)), 'id'),
  'bad-version': (m, r) => ((m['version'] = r.pick(['v1beta3', 'v1', 'v1beta', 1])), 'version'),
  'containers-missing': (m) => (delete m['containers'], 'containers'),
  'bad-uuid': (m, r) => ((m['uuid'] = r.pick(['has space', 'a\nb', 'x'.repeat(254), 42, '-lead'])), 'uuid'),
  'container-name-not-dns-label': (m, r) => {
    const [c, path] = someContainer(m, r);
    c['name'] = r.pick(BAD_LABELS);
    return `${path}.name`;
  },
  'duplicate-container-name': (m, r) => {
    const cs = containersOf(m);
    if (cs.length < 2) cs.push({ ...cs[0]!, ports: [] });
    const j = 1 + r.index(cs.length - 1);
    cs[j]!['name'] = cs[r.index(j)]!['name'];
    return `containers[${j}].name`;
  },
  'duplicate-volume-name': (m, r) => {
    const volumes = list(m['volumes']);
    m['volumes'] = volumes;
    if (volumes.length === 0) volumes.push({ name: 'data' });
    volumes.push({ name: r.pick(volumes)['name'] });
    return `volumes[${volumes.length - 1}].name`;
  },
  'host-port-out-of-range': (m, r) => {
    const [c, path] = someContainer(m, r);
    const [p, here] = port(c, path, r);
    p['hostPort'] = r.pick([65536, 70000, -1, 1e6]);
    return `${here}.hostPort`;
  },
  'container-port-out-of-range': (m, r) => {
    const [c, path] = someContainer(m, r);
    const [p, here] = port(c, path, r);
    p['containerPort'] = r.pick([0, -80, 65536, 100000]);
    return `${here}.containerPort`;
  },
  'port-not-an-integer': (m, r) => {
    const [c, path] = someContainer(m, r);
    const [p, here] = port(c, path, r);
    const field = r.pick(['containerPort', 'hostPort']);
    p[field] = r.pick([80.5, '80', true, [80]]);
    return `${here}.${field}`;
  },
  'duplicate-host-port': (m) => {
    const cs = containersOf(m);
    // A port without hostPort is published on its containerPort when the manifest names its version.
    const claim = cs
      .flatMap((c) => list(c['ports']))
      .map((p) => claimedHostPort(p, m['version'] !== undefined))
      .find((key) => key !== undefined);
    const [hostPort, protocol] = claim === undefined ? [8080, 'TCP'] : [Number(claim.split('/')[0]), claim.split('/')[1]!];
    // Added to the end of the last container, so that it comes after the port it clashes with.
    const last = cs[cs.length - 1]!;
    const ports = list(last['ports']);
    last['ports'] = ports;
    const clash = { containerPort: 1, hostPort, protocol };
    if (claim === undefined) ports.push({ ...clash, containerPort: 2 });
    ports.push(clash);
    return `containers[${cs.length - 1}].ports[${ports.length - 1}].hostPort`;
  },
  'bad-protocol': (m, r) => {
    const [c, path] = someContainer(m, r);
    const [p, here] = port(c, path, r);
    p['protocol'] = r.pick(['SCTP', 'TCPX', 'http', 6]);
    return `${here}.protocol`;
  },
  'port-name-not-dns-label': (m, r) => {
    const [c, path] = someContainer(m, r);
    const [p, here] = port(c, path, r);
    p['name'] = r.pick(['HTTP', 'web_port', 'x'.repeat(64), 8080]);
    return `${here}.name`;
  },
  'mount-of-undeclared-volume': (m, r) => {
    const [c, path] = someContainer(m, r);
    const mounts = list(c['volumeMounts']);
    c['volumeMounts'] = mounts;
    mounts.push({
      name: freshName(
        list(m['volumes']).map((v) => String(v['name'])),
        'undeclared',
      ),
      mountPath: '/x',
    });
    return `${path}.volumeMounts[${mounts.length - 1}].name`;
  },
  'relative-mount-path': (m, r) => {
    const [mount, here] = someVolumeMount(m, r);
    mount['mountPath'] = r.pick(['data', './data', '']);
    return `${here}.mountPath`;
  },
  'mount-path-with-colon-or-control': (m, r) => {
    const [mount, here] = someVolumeMount(m, r);
    mount['mountPath'] = r.pick(['/data:/etc:rw', '/da\nta', '/data\u001b']);
    return `${here}.mountPath`;
  },
  'nul-in-value': (m, r) => {
    const [c, path] = someContainer(m, r);
    if (r.index(2) === 0) {
      c['command'] = ['sh', '-c', 'echo\u0000rm'];
      return `${path}.command[2]`;
    }
    const [e, here] = env(c, path, r);
    e['value'] = 'a\u0000b';
    return `${here}.value`;
  },
  'host-mount-not-allowed': (m, r) => {
    const [mount, here] = someVolumeMount(m, r);
    mount['mountType'] = r.pick(['HOST', 'host']);
    return `${here}.mountType`;
  },
  'bad-mount-type': (m, r) => {
    const [mount, here] = someVolumeMount(m, r);
    mount['mountType'] = r.pick(['NFS', 'Host ', 7, true]);
    return `${here}.mountType`;
  },
  'mount-read-only-not-boolean': (m, r) => {
    const [mount, here] = someVolumeMount(m, r);
    mount['readOnly'] = r.pick(['yes', 1, 'true']);
    return `${here}.readOnly`;
  },
  'bad-image': (m, r) => {
    const [c, path] = someContainer(m, r);
    c['image'] = r.pick([...BAD_IMAGES, '']);
    return `${path}.image`;
  },
  'image-missing': (m, r) => {
    const [c, path] = someContainer(m, r);
    delete c['image'];
    return `${path}.image`;
  },
  'bad-env-name': (m, r) => {
    const [c, path] = someContainer(m, r);
    const [e, here] = env(c, path, r);
    e['name'] = r.pick(BAD_ENV_NAMES);
    return `${here}.name`;
  },
  'relative-working-dir': (m, r) => {
    const [c, path] = someContainer(m, r);
    c['workingDir'] = r.pick(['app', './app', 'C:\\app']);
    return `${path}.workingDir`;
  },
  'huge-string': (m, r) => {
    const [c, path] = someContainer(m, r);
    const size = 4097 + r.index(16_000);
    switch (r.pick(['image', 'workingDir', 'command', 'env'])) {
      case 'image':
        c['image'] = 'a'.repeat(size);
        return `${path}.image`;
      case 'workingDir':
        c['workingDir'] = `/${'d'.repeat(size)}`;
        return `${path}.workingDir`;
      case 'command':
        c['command'] = ['sh', 'x'.repeat(size)];
        return `${path}.command[1]`;
      default: {
        const [e, here] = env(c, path, r);
        e['value'] = 'v'.repeat(size);
        return `${here}.value`;
      }
    }
  },
  'memory-or-cpu-out-of-range': (m, r) => {
    const [c, path] = someContainer(m, r);
    const field = r.pick(['memory', 'cpu']);
    c[field] = field === 'memory' ? r.pick([-1, 2 ** 60, 1.5]) : r.pick([-1, 262_145, 0.5]);
    return `${path}.${field}`;
  },
  'bad-restart-policy': (m, r) => (
    (m['restartPolicy'] = r.pick(['always', 'Sometimes', 1, {}, { always: {}, never: {} }, { sometimes: {} }])), 'restartPolicy'
  ),
  'bad-pull-policy': (m, r) => {
    const [c, path] = someContainer(m, r);
    c['imagePullPolicy'] = r.pick(['always', 'IfNewer', false, 'pullAlways']);
    return `${path}.imagePullPolicy`;
  },
  'grace-period-out-of-range': (m, r) => (
    (m['terminationGracePeriodSeconds'] = r.pick([-1, 86_401, 2.5])), 'terminationGracePeriodSeconds'
  ),
  'probe-with-two-handlers': (m, r) => {
    const [c, path] = someContainer(m, r);
    c['livenessProbe'] = { exec: { command: ['true'] }, tcpSocket: { port: 80 } };
    return `${path}.livenessProbe`;
  },
  // Any port number may be probed (on the pod's IP when not published); a name must be one of the container's TCP ports.
  'probe-on-unknown-port-name': (m, r) => {
    const [c, path] = someContainer(m, r);
    const used = list(c['ports']).flatMap((p) => [p['containerPort'], p['name']]);
    const kind = r.pick(['httpGet', 'tcpSocket']);
    const target = freshName(used.map(String), 'nowhere');
    c['livenessProbe'] = { [kind]: { port: target } };
    return `${path}.livenessProbe.${kind}.port`;
  },
  'probe-timing-out-of-range': (m, r) => {
    const [c, path] = someContainer(m, r);
    const field = r.pick(['periodSeconds', 'timeoutSeconds', 'failureThreshold', 'initialDelaySeconds']);
    c['livenessProbe'] = { exec: { command: ['true'] }, [field]: r.pick([-1, 86_401, 1.5, '10']) };
    return `${path}.livenessProbe.${field}`;
  },
  'wrong-type': (m, r) => {
    const [c, path] = someContainer(m, r);
    const sites: Array<[Rec, string, string, unknown]> = [
      [m, '', 'containers', 'nginx'],
      [m, '', 'volumes', { name: 'data' }],
      [m, '', 'id', 7],
      [c, path, 'image', 42],
      [c, path, 'ports', { containerPort: 80 }],
      [c, path, 'env', 'A=1'],
      [c, path, 'command', 'echo hi'],
      [c, path, 'memory', '1Gi'],
      [c, path, 'cpu', true],
      [c, path, 'volumeMounts', {}],
      [c, path, 'workingDir', ['/app']],
      [c, path, 'livenessProbe', 'exec'],
    ];
    const [target, at, field, value] = r.pick(sites);
    target[field] = value;
    return at === '' ? field : `${at}.${field}`;
  },
  // A number or boolean is refused where a string goes, env values included (issue 17).
  'env-value-not-string': (m, r) => {
    const [c, path] = someContainer(m, r);
    const [e, here] = env(c, path, r);
    e['value'] = r.pick([1234, 0, 1.5, true, false]);
    return `${here}.value`;
  },
  'list-too-long': (m, r) => {
    const [c, path] = someContainer(m, r);
    const [target, at, field, entry] = r.pick<[Rec, string, string, unknown]>([
      [c, path, 'command', 'a'],
      [c, path, 'env', { name: 'A', value: 'b' }],
      [c, path, 'ports', { containerPort: 80 }],
      [c, path, 'volumeMounts', { name: 'data', mountPath: '/data' }],
      [m, '', 'volumes', { name: 'data' }],
    ]);
    target[field] = Array.from({ length: MAX_LIST_ENTRIES + 1 + r.index(100) }, () => entry);
    return at === '' ? field : `${at}.${field}`;
  },
  'container-not-an-object': (m, r) => {
    const cs = containersOf(m);
    const i = r.index(cs.length);
    (cs as unknown[])[i] = r.pick(['nginx', 42, null, ['nginx']]);
    return `containers[${i}]`;
  },
  'unknown-field': (m, r) => {
    const [c, path] = someContainer(m, r);
    const key = r.pick(UNKNOWN_KEYS);
    const sites: Array<() => [Rec, string]> = [
      () => [m, ''],
      () => [c, path],
      () => port(c, path, r),
      () => env(c, path, r),
      () => someVolumeMount(m, r),
    ];
    const [target, at] = r.pick(sites)();
    setOwn(target, key, 'surprise');
    return at === '' ? key : `${at}.${key}`;
  },
};

export const MUTATION_NAMES: readonly string[] = Object.keys(MUTATIONS);

/**
 * Manifests that are valid but for one field, each made by a named mutation of a valid manifest
 * that knows the path it broke (`containers[1].ports[0].hostPort`): bad names, ports out of range,
 * duplicates, undeclared volumes, wrong JSON types (numbers as env values too), unknown fields,
 * huge strings, lists too long, bad image references, bad env names, probes that cannot work.
 */
export function invalidManifest(options: ValidManifestOptions = {}): fc.Arbitrary<InvalidManifest> {
  return (
    fc
      // A mutation breaks a container, so the valid manifest it starts from has one.
      .tuple(
        validManifest({ ...options, minContainers: 1 }),
        fc.constantFrom(...MUTATION_NAMES),
        fc.array(fc.nat(), { minLength: 6, maxLength: 6 }),
      )
      .map(([base, mutation, picks]) => {
        const input = structuredClone(base);
        const path = MUTATIONS[mutation]!(input, new Picks(picks));
        return { base, input, path, mutation, keepsId: input['id'] === base['id'] };
      })
  );
}
