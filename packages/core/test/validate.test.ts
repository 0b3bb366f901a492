import { describe, expect, it } from '@jest/globals';
import { formatFieldErrors, type FieldError } from '../src/errors.js';
import { validateManifest } from '../src/validate.js';

type Obj = Record<string, unknown>;

/** Validates and asserts rejection; returns the field errors. */
function rejectedErrors(input: unknown): readonly FieldError[] {
  const result = validateManifest(input);
  expect(result.ok).toBe(false);
  if (result.ok) throw new Error('unreachable');
  return result.errors;
}

function paths(input: unknown): string[] {
  return rejectedErrors(input).map((e) => e.path);
}

/** A manifest whose first container is `first` (merged into a valid default); fresh on every call. */
function withContainer(first: Obj, extra: Obj = {}): Obj {
  return {
    version: 'v1beta1',
    id: 'web',
    volumes: [{ name: 'data' }],
    containers: [{ name: 'app', image: 'nginx', ...first }],
    ...extra,
  };
}

describe('validateManifest: a valid manifest', () => {
  const input = {
    version: 'v1beta1',
    id: 'web',
    volumes: [{ name: 'data' }, { name: 'logs' }],
    containers: [
      {
        name: 'nginx',
        image: 'registry.example.com:5000/library/nginx:1.7',
        command: ['nginx', '-g', 'daemon off;'],
        workingDir: '/srv',
        ports: [
          { name: 'http', containerPort: 80, hostPort: 8080, protocol: 'tcp' },
          { name: 'dns', containerPort: 53, hostPort: 5353, protocol: 'udp' },
          { containerPort: 443 },
          { containerPort: 9000, hostPort: 0, protocol: 'TCP' },
          { containerPort: 9001, protocol: 'UDP' },
        ],
        env: [
          { name: 'PORT', value: 8080 },
          { name: 'MODE', value: 'prod' },
          { name: 'DEBUG', value: true },
          { name: '_EMPTY' },
        ],
        memory: 67108864,
        cpu: 512,
        volumeMounts: [
          { name: 'data', mountPath: '/data', readOnly: true },
          { name: 'logs', mountPath: '/var/log/nginx' },
        ],
      },
      { name: 'sidecar', image: 'busybox' },
    ],
  };

  it('is accepted', () => {
    const result = validateManifest(input);
    expect(result.ok).toBe(true);
  });

  it('keeps version, id and volumes', () => {
    const result = validateManifest(input);
    if (!result.ok) throw new Error(formatFieldErrors(result.errors));
    expect(result.manifest.version).toBe('v1beta1');
    expect(result.manifest.id).toBe('web');
    expect(result.manifest.volumes).toEqual([{ name: 'data' }, { name: 'logs' }]);
    expect(result.manifest.containers.map((c) => c.name)).toEqual(['nginx', 'sidecar']);
  });

  it('upper-cases protocols, defaults a missing protocol to TCP and drops hostPort 0', () => {
    const result = validateManifest(input);
    if (!result.ok) throw new Error(formatFieldErrors(result.errors));
    const ports = result.manifest.containers[0]!.ports;
    expect(ports).toEqual([
      { name: 'http', containerPort: 80, hostPort: 8080, protocol: 'TCP' },
      { name: 'dns', containerPort: 53, hostPort: 5353, protocol: 'UDP' },
      { containerPort: 443, protocol: 'TCP' },
      { containerPort: 9000, protocol: 'TCP' },
      { containerPort: 9001, protocol: 'UDP' },
    ]);
    // toEqual ignores undefined properties; "absent" must really mean absent (it feeds the spec hash).
    expect(ports[2]).not.toHaveProperty('name');
    expect(ports[2]).not.toHaveProperty('hostPort');
    expect(ports[3]).not.toHaveProperty('hostPort');
  });

  it('turns number and boolean env values into strings and a missing value into ""', () => {
    const result = validateManifest(input);
    if (!result.ok) throw new Error(formatFieldErrors(result.errors));
    expect(result.manifest.containers[0]!.env).toEqual([
      { name: 'PORT', value: '8080' },
      { name: 'MODE', value: 'prod' },
      { name: 'DEBUG', value: 'true' },
      { name: '_EMPTY', value: '' },
    ]);
  });

  it('keeps command, workingDir, memory, cpu and volume mounts (readOnly defaults to false)', () => {
    const result = validateManifest(input);
    if (!result.ok) throw new Error(formatFieldErrors(result.errors));
    const nginx = result.manifest.containers[0]!;
    expect(nginx.image).toBe('registry.example.com:5000/library/nginx:1.7');
    expect(nginx.command).toEqual(['nginx', '-g', 'daemon off;']);
    expect(nginx.workingDir).toBe('/srv');
    expect(nginx.memory).toBe(67108864);
    expect(nginx.cpu).toBe(512);
    expect(nginx.volumeMounts).toEqual([
      { name: 'data', mountPath: '/data', readOnly: true },
      { name: 'logs', mountPath: '/var/log/nginx', readOnly: false },
    ]);
  });

  it('leaves optional fields of a minimal container absent and lists empty', () => {
    const result = validateManifest(input);
    if (!result.ok) throw new Error(formatFieldErrors(result.errors));
    const sidecar = result.manifest.containers[1]!;
    expect(sidecar).toEqual({ name: 'sidecar', image: 'busybox', ports: [], env: [], volumeMounts: [] });
    for (const field of ['command', 'workingDir', 'memory', 'cpu']) expect(sidecar).not.toHaveProperty(field);
  });

  it('accepts a manifest without version, and without volumes', () => {
    const result = validateManifest({ id: 'web', containers: [{ name: 'a', image: 'nginx' }] });
    if (!result.ok) throw new Error(formatFieldErrors(result.errors));
    expect(result.manifest.version).toBe('v1beta1');
    expect(result.manifest.volumes).toEqual([]);
  });

  it('does not alias or mutate the input', () => {
    const copy = structuredClone(input);
    const result = validateManifest(copy);
    if (!result.ok) throw new Error(formatFieldErrors(result.errors));
    expect(copy).toEqual(input);
    expect(result.manifest.containers[0]).not.toBe(copy.containers[0]);
  });
});

describe('validateManifest: ports', () => {
  it('reports a hostPort out of range with its full path and the allowed range 0-65535', () => {
    const input = {
      id: 'web',
      containers: [
        { name: 'a', image: 'nginx', ports: [{ containerPort: 80, hostPort: 8080 }] },
        { name: 'b', image: 'nginx', ports: [{ containerPort: 80, hostPort: 70000 }] },
      ],
    };
    const errors = rejectedErrors(input);
    expect(errors).toHaveLength(1);
    expect(errors[0]!.path).toBe('containers[1].ports[0].hostPort');
    expect(errors[0]!.message).toContain('0-65535');
    expect(errors[0]!.message).toContain('70000');
  });

  it.each([
    [0, 'must be 1-65535'],
    [65536, 'must be 1-65535'],
    [80.5, 'must be an integer'],
    ['80', 'must be an integer'],
    [undefined, 'must be an integer'],
  ])('rejects containerPort %j (%s)', (containerPort, message) => {
    const errors = rejectedErrors(withContainer({ ports: [{ containerPort }] }));
    expect(errors).toHaveLength(1);
    expect(errors[0]!.path).toBe('containers[0].ports[0].containerPort');
    expect(errors[0]!.message).toContain(message);
  });

  it('accepts the port range boundaries', () => {
    const result = validateManifest(withContainer({ ports: [{ containerPort: 1, hostPort: 65535 }, { containerPort: 65535 }] }));
    expect(result.ok).toBe(true);
  });

  it.each(['SCTP', 'Tcp', 'http', 6])('rejects protocol %j', (protocol) => {
    const errors = rejectedErrors(withContainer({ ports: [{ containerPort: 80, protocol }] }));
    expect(errors).toHaveLength(1);
    expect(errors[0]!.path).toBe('containers[0].ports[0].protocol');
    expect(errors[0]!.message).toContain('must be TCP or UDP');
  });

  it('reports a host port claimed twice (same protocol) once, on the second container', () => {
    const input = {
      id: 'web',
      containers: [
        { name: 'a', image: 'nginx', ports: [{ containerPort: 80, hostPort: 8080, protocol: 'TCP' }] },
        { name: 'b', image: 'nginx', ports: [{ containerPort: 81 }, { containerPort: 80, hostPort: 8080, protocol: 'tcp' }] },
      ],
    };
    const errors = rejectedErrors(input);
    expect(errors).toHaveLength(1);
    expect(errors[0]!.path).toBe('containers[1].ports[1].hostPort');
    expect(errors[0]!.message).toContain('8080/TCP');
    expect(errors[0]!.message).toContain('containers[0].ports[0].hostPort');
  });

  it('allows the same host port for TCP and UDP', () => {
    const input = {
      id: 'dns',
      containers: [
        { name: 'a', image: 'coredns', ports: [{ containerPort: 53, hostPort: 53, protocol: 'TCP' }] },
        { name: 'b', image: 'coredns', ports: [{ containerPort: 53, hostPort: 53, protocol: 'UDP' }] },
      ],
    };
    expect(validateManifest(input).ok).toBe(true);
  });

  it('does not treat several unpublished ports (hostPort absent or 0) as a conflict', () => {
    const input = {
      id: 'web',
      containers: [
        { name: 'a', image: 'nginx', ports: [{ containerPort: 80, hostPort: 0 }] },
        { name: 'b', image: 'nginx', ports: [{ containerPort: 80, hostPort: 0 }, { containerPort: 80 }] },
      ],
    };
    expect(validateManifest(input).ok).toBe(true);
  });
});

describe('validateManifest: names and ids', () => {
  it.each([
    ['Web', 'upper case'],
    ['a'.repeat(64), '64 characters'],
    ['-web', 'a leading "-"'],
    ['web-', 'a trailing "-"'],
    ['web_1', 'an underscore'],
    ['web.example', 'a dot'],
  ])('rejects id %j (%s)', (id) => {
    const errors = rejectedErrors(withContainer({}, { id }));
    expect(errors).toHaveLength(1);
    expect(errors[0]!.path).toBe('id');
    expect(errors[0]!.message).toContain('must be a DNS label');
  });

  it.each(['a'.repeat(63), 'web-1', '0', 'a-b-c'])('accepts id %j', (id) => {
    expect(validateManifest(withContainer({}, { id })).ok).toBe(true);
  });

  it.each([
    [undefined, 'is required'],
    ['', 'is required'],
    [42, 'must be a string'],
  ])('rejects id %j (%s)', (id, message) => {
    const errors = rejectedErrors(withContainer({}, { id }));
    expect(errors).toEqual([{ path: 'id', message: expect.stringContaining(message) }]);
  });

  it('reports a duplicate container name on the second container only', () => {
    const input = {
      id: 'web',
      containers: [
        { name: 'app', image: 'nginx' },
        { name: 'other', image: 'nginx' },
        { name: 'app', image: 'busybox' },
      ],
    };
    const errors = rejectedErrors(input);
    expect(errors).toHaveLength(1);
    expect(errors[0]!.path).toBe('containers[2].name');
    expect(errors[0]!.message).toContain('duplicate container name "app"');
    expect(errors[0]!.message).toContain('containers[0]');
  });

  it('rejects a container name that is not a DNS label', () => {
    expect(paths(withContainer({ name: 'App' }))).toEqual(['containers[0].name']);
  });

  it('reports a duplicate volume name', () => {
    expect(paths(withContainer({}, { volumes: [{ name: 'data' }, { name: 'data' }] }))).toEqual(['volumes[1].name']);
  });

  it('reports a volume mount that names an undeclared volume', () => {
    const errors = rejectedErrors(withContainer({ volumeMounts: [{ name: 'data', mountPath: '/data' }, { name: 'cache', mountPath: '/cache' }] }));
    expect(errors).toHaveLength(1);
    expect(errors[0]!.path).toBe('containers[0].volumeMounts[1].name');
    expect(errors[0]!.message).toContain('"cache"');
  });

  it.each([
    ['1ABC', 'a leading digit'],
    ['MY-VAR', 'a dash'],
    ['MY VAR', 'a space'],
    ['', 'empty'],
  ])('rejects env name %j (%s)', (name) => {
    const errors = rejectedErrors(withContainer({ env: [{ name: 'OK', value: 'x' }, { name, value: 'x' }] }));
    expect(errors).toHaveLength(1);
    expect(errors[0]!.path).toBe('containers[0].env[1].name');
  });

  it.each(['nginx latest', 'nginx\n', ' nginx', 'nginx\t:1.7'])('rejects image %j', (image) => {
    const errors = rejectedErrors(withContainer({ image }));
    expect(errors).toHaveLength(1);
    expect(errors[0]!.path).toBe('containers[0].image');
    expect(errors[0]!.message).toContain('is not a valid image reference');
  });

  it.each(['nginx', 'nginx:1.7', 'localhost:5000/team/app:v2', 'nginx@sha256:' + 'a'.repeat(64)])('accepts image %j', (image) => {
    expect(validateManifest(withContainer({ image })).ok).toBe(true);
  });
});

describe('validateManifest: structure and types', () => {
  it('reports an unknown container field by its path', () => {
    const errors = rejectedErrors({ id: 'web', containers: [{ name: 'app', imagee: 'nginx' }] });
    expect(formatFieldErrors(errors)).toContain('containers[0].imagee: unknown field');
    expect(errors).toContainEqual({ path: 'containers[0].imagee', message: 'unknown field' });
    expect(errors).toContainEqual({ path: 'containers[0].image', message: 'is required' });
    expect(errors).toHaveLength(2);
  });

  it.each([
    [{ kind: 'Pod' }, 'kind'],
    [{ volumes: [{ name: 'data', hostPath: '/x' }] }, 'volumes[0].hostPath'],
  ])('reports an unknown manifest field %j', (extra, path) => {
    expect(rejectedErrors(withContainer({}, extra))).toEqual([{ path, message: 'unknown field' }]);
  });

  it.each([
    [{ ports: [{ containerPort: 80, hostport: 8080 }] }, 'containers[0].ports[0].hostport'],
    [{ env: [{ name: 'A', val: 'x' }] }, 'containers[0].env[0].val'],
    [{ volumeMounts: [{ name: 'data', mountPath: '/d', readonly: true }] }, 'containers[0].volumeMounts[0].readonly'],
  ])('reports an unknown nested field %j', (container, path) => {
    expect(rejectedErrors(withContainer(container))).toEqual([{ path, message: 'unknown field' }]);
  });

  it('reports containers that are not a list', () => {
    const errors = rejectedErrors({ id: 'web', containers: { name: 'app', image: 'nginx' } });
    expect(errors).toEqual([{ path: 'containers', message: 'must be a list, got an object' }]);
  });

  it('reports a port that is a string', () => {
    const errors = rejectedErrors(withContainer({ ports: ['80:80'] }));
    expect(errors).toHaveLength(1);
    expect(errors[0]!.path).toBe('containers[0].ports[0]');
    expect(errors[0]!.message).toContain('must be an object');
  });

  it('reports memory given as a string', () => {
    const errors = rejectedErrors(withContainer({ memory: '64m' }));
    expect(errors).toHaveLength(1);
    expect(errors[0]!.path).toBe('containers[0].memory');
    expect(errors[0]!.message).toContain('must be an integer');
  });

  it.each([
    [{ memory: -1 }, 'containers[0].memory'],
    [{ cpu: 262145 }, 'containers[0].cpu'],
    [{ cpu: 1.5 }, 'containers[0].cpu'],
  ])('reports out-of-range resources %j', (container, path) => {
    expect(paths(withContainer(container))).toEqual([path]);
  });

  it('reports readOnly given as a string', () => {
    const errors = rejectedErrors(withContainer({ volumeMounts: [{ name: 'data', mountPath: '/data', readOnly: 'true' }] }));
    expect(errors).toHaveLength(1);
    expect(errors[0]!.path).toBe('containers[0].volumeMounts[0].readOnly');
    expect(errors[0]!.message).toContain('must be true or false');
  });

  it.each([
    [{ command: 'nginx -g daemon' }, 'containers[0].command'],
    [{ command: ['nginx', 7] }, 'containers[0].command[1]'],
    [{ env: { A: 'b' } }, 'containers[0].env'],
    [{ env: [{ name: 'A', value: { x: 1 } }] }, 'containers[0].env[0].value'],
    [{ image: 7 }, 'containers[0].image'],
  ])('reports a wrong type %j', (container, path) => {
    expect(paths(withContainer(container))).toEqual([path]);
  });

  it.each([null, [], 'web', 7])('rejects a manifest that is not an object (%j) at the root path', (input) => {
    const errors = rejectedErrors(input);
    expect(errors).toHaveLength(1);
    expect(errors[0]!.path).toBe('');
    expect(errors[0]!.message).toContain('must be an object');
  });

  it('reports missing containers as required', () => {
    expect(rejectedErrors({ id: 'web' })).toEqual([{ path: 'containers', message: 'is required' }]);
  });

  it('reports an empty container list', () => {
    expect(rejectedErrors({ id: 'web', containers: [] })).toEqual([
      { path: 'containers', message: 'must list at least one container' },
    ]);
  });

  it.each(['v1beta2', 'v1', 1])('rejects version %j', (version) => {
    const errors = rejectedErrors(withContainer({}, { version }));
    expect(errors).toHaveLength(1);
    expect(errors[0]!.path).toBe('version');
    expect(errors[0]!.message).toContain('v1beta1');
  });

  it('rejects a relative mountPath', () => {
    const errors = rejectedErrors(withContainer({ volumeMounts: [{ name: 'data', mountPath: 'data' }] }));
    expect(errors).toEqual([{ path: 'containers[0].volumeMounts[0].mountPath', message: 'must be an absolute path' }]);
  });

  it('rejects a relative workingDir', () => {
    const errors = rejectedErrors(withContainer({ workingDir: 'srv/app' }));
    expect(errors).toEqual([{ path: 'containers[0].workingDir', message: 'must be an absolute path' }]);
  });

  it('rejects strings longer than 4096 characters', () => {
    expect(paths(withContainer({ env: [{ name: 'BIG', value: 'x'.repeat(4097) }] }))).toEqual(['containers[0].env[0].value']);
  });
});

describe('validateManifest: rejection as a whole', () => {
  it('reports every problem, not just the first', () => {
    const input = {
      version: 'v1beta1',
      id: 'Web',
      volumes: [{ name: 'data' }],
      containers: [
        { name: 'app', image: 'nginx latest', volumeMounts: [{ name: 'cache', mountPath: '/cache' }] },
        { name: 'side', image: 'busybox', ports: [{ containerPort: 53, protocol: 'SCTP' }] },
      ],
    };
    const errors = rejectedErrors(input);
    expect(errors.map((e) => e.path).sort()).toEqual(
      ['id', 'containers[0].image', 'containers[0].volumeMounts[0].name', 'containers[1].ports[0].protocol'].sort(),
    );
  });

  // Found while writing the fuzz suite's mutations: the probe check counted only the valid
  // containers, so a bad probe after an invalid container was blamed on the container before it.
  it('names the right container for a probe port after an invalid container', () => {
    const errors = rejectedErrors({
      id: 'web',
      containers: [
        { name: 'broken', image: '' },
        { name: 'app', image: 'nginx', livenessProbe: { tcpSocket: { port: 81 } } },
      ],
    });
    expect(errors.map((e) => e.path)).toEqual(['containers[0].image', 'containers[1].livenessProbe.tcpSocket.port']);
  });

  it('returns the id of a rejected manifest when it could be read', () => {
    const result = validateManifest({ id: 'web', containers: [{ name: 'app', image: 'nginx', memory: '1g' }] });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.id).toBe('web');
    expect(result.errors.map((e) => e.path)).toEqual(['containers[0].memory']);
  });

  it('returns no id when the id is missing or not a string', () => {
    for (const input of [{ containers: [] }, { id: 7, containers: [] }, 'web']) {
      const result = validateManifest(input);
      expect(result.ok).toBe(false);
      expect(result).not.toHaveProperty('id');
    }
  });
});

describe('validateManifest: a duplicate name on a container with other problems', () => {
  it('is reported together with those problems', () => {
    const result = validateManifest({
      id: 'web',
      containers: [
        { name: 'main', image: 'app:1' },
        { name: 'main', image: '', ports: [{ containerPort: 0 }] },
      ],
    });
    expect(result.ok).toBe(false);
    const paths = result.ok ? [] : result.errors.map((e) => e.path);
    expect(paths.sort()).toEqual(['containers[1].image', 'containers[1].name', 'containers[1].ports[0].containerPort']);
  });
});
