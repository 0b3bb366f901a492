import { describe, expect, it } from '@jest/globals';
import { formatFieldErrors } from '../src/errors.js';
import { validateManifest } from '../src/validate.js';
import { rejectedErrors, withContainer } from './validation-fixtures.js';

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
        env: [{ name: 'PORT', value: '8080' }, { name: 'MODE', value: 'prod' }, { name: 'DEBUG', value: 'true' }, { name: '_EMPTY' }],
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
    expect(result.manifest).not.toHaveProperty('version'); // applied: see the port rule
    expect(result.manifest.id).toBe('web');
    expect(result.manifest.volumes).toEqual([{ name: 'data' }, { name: 'logs' }]);
    expect(result.manifest.containers.map((c) => c.name)).toEqual(['nginx', 'sidecar']);
  });

  // A v1beta1 manifest publishes a port without hostPort on its containerPort (the 2014 rule).
  it('upper-cases protocols, defaults a missing protocol to TCP, publishes a port without hostPort and not one with hostPort 0', () => {
    const result = validateManifest(input);
    if (!result.ok) throw new Error(formatFieldErrors(result.errors));
    const ports = result.manifest.containers[0]!.ports;
    expect(ports).toEqual([
      { name: 'http', containerPort: 80, hostPort: 8080, protocol: 'TCP' },
      { name: 'dns', containerPort: 53, hostPort: 5353, protocol: 'UDP' },
      { containerPort: 443, hostPort: 443, protocol: 'TCP' },
      { containerPort: 9000, protocol: 'TCP' },
      { containerPort: 9001, hostPort: 9001, protocol: 'UDP' },
    ]);
    // toEqual ignores undefined properties; "absent" must really mean absent (it feeds the spec hash).
    expect(ports[2]).not.toHaveProperty('name');
    expect(ports[3]).not.toHaveProperty('hostPort');
  });

  // Numbers and booleans were turned into text here until issue 17: they are refused now (see validate-fields.test.ts).
  it('keeps env values as written and turns a missing value into ""', () => {
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

  it('accepts a manifest without version, and without volumes, leaving the version absent', () => {
    const result = validateManifest({ id: 'web', containers: [{ name: 'a', image: 'nginx' }] });
    if (!result.ok) throw new Error(formatFieldErrors(result.errors));
    expect(result.manifest).not.toHaveProperty('version');
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
    const result = validateManifest(
      withContainer({
        ports: [
          { containerPort: 1, hostPort: 65535 },
          { containerPort: 65535, hostPort: 1 },
        ],
      }),
    );
    expect(result.ok).toBe(true);
  });

  it.each(['SCTP', 'TCPX', 'http', 6])('rejects protocol %j', (protocol) => {
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
        { name: 'app', image: 'nginx', livenessProbe: { tcpSocket: { port: 'metrics' } } },
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
