import { describe, expect, it } from '@jest/globals';
import { formatFieldErrors } from '../src/errors.js';
import type { ContainerManifest } from '../src/manifest.js';
import { sandboxHash } from '../src/sandbox.js';
import { buildContainerSpec, podPorts, specHash } from '../src/spec.js';
import { validateManifest, type ValidateOptions } from '../src/validate.js';
import { withContainer, type Obj } from './validation-fixtures.js';

function valid(input: unknown, options: ValidateOptions = {}): ContainerManifest {
  const result = validateManifest(input, options);
  if (!result.ok) throw new Error(formatFieldErrors(result.errors));
  return result.manifest;
}
function errors(input: unknown, options: ValidateOptions = {}) {
  const result = validateManifest(input, options);
  if (result.ok) throw new Error(`accepted: ${JSON.stringify(input)}`);
  return result.errors;
}
const ports = (version: string | undefined, list: Obj[]): Obj => withContainer({ ports: list }, { version });

describe('2014 rule 4: a port without hostPort in a v1beta1 manifest is published on its containerPort', () => {
  it.each(['v1beta1', 'v1beta2', 'V1BETA1'])('publishes it when the version is %j', (version) => {
    const m = valid(ports(version, [{ containerPort: 5000 }, { containerPort: 53, protocol: 'udp' }]));
    expect(m.containers[0]!.ports).toEqual([
      { containerPort: 5000, hostPort: 5000, protocol: 'TCP' },
      { containerPort: 53, hostPort: 53, protocol: 'UDP' },
    ]);
    expect(podPorts(m)).toEqual([
      { containerPort: 5000, hostPort: 5000, protocol: 'TCP' },
      { containerPort: 53, hostPort: 53, protocol: 'UDP' },
    ]);
  });

  it('keeps hostPort 0 written out unpublished, in every version (the opt-out)', () => {
    for (const version of ['v1beta1', 'v1beta2', undefined]) {
      const port = valid(ports(version, [{ containerPort: 5000, hostPort: 0 }])).containers[0]!.ports[0]!;
      expect(port).toEqual({ containerPort: 5000, protocol: 'TCP' });
      expect(port).not.toHaveProperty('hostPort');
    }
  });

  it('leaves it unpublished in a manifest without a version, as before the rule', () => {
    const port = valid(ports(undefined, [{ containerPort: 5000 }])).containers[0]!.ports[0]!;
    expect(port).not.toHaveProperty('hostPort');
  });

  it('keeps an explicit hostPort as written', () => {
    expect(valid(ports('v1beta1', [{ containerPort: 8080, hostPort: 80 }])).containers[0]!.ports[0]!.hostPort).toBe(80);
  });

  it('reports two ports published on one host port, saying why an implicit one is', () => {
    const input = {
      version: 'v1beta1',
      id: 'web',
      containers: [
        { name: 'a', image: 'nginx', ports: [{ containerPort: 80 }] },
        { name: 'b', image: 'nginx', ports: [{ containerPort: 80 }] },
      ],
    };
    expect(errors(input)).toEqual([
      {
        path: 'containers[1].ports[0].hostPort',
        message: expect.stringMatching(
          /host port 80\/TCP is already used by containers\[0\]\.ports\[0\]\.hostPort \(a v1beta1 port without hostPort .*write hostPort: 0/,
        ),
      },
    ]);
    // Without a version, both stay unpublished and nothing clashes.
    expect(validateManifest({ ...input, version: undefined }).ok).toBe(true);
  });

  it('lets a probe reach a port published this way', () => {
    const input = withContainer({
      ports: [{ name: 'http', containerPort: 8080 }],
      livenessProbe: { httpGet: { path: '/', port: 'http' } },
    });
    expect(valid(input).containers[0]!.livenessProbe?.httpGet).toEqual({ path: '/', port: 'http' });
  });

  it('changes the hash only of a versioned manifest whose ports lack hostPort', () => {
    const hash = (input: Obj) => {
      const m = valid(input);
      return [specHash(m, m.containers[0]!), sandboxHash(podPorts(m))];
    };
    const explicit = hash(ports('v1beta1', [{ containerPort: 5000, hostPort: 5000 }]));
    expect(hash(ports('v1beta1', [{ containerPort: 5000 }]))).toEqual(explicit);
    expect(hash(ports(undefined, [{ containerPort: 5000, hostPort: 5000 }]))).toEqual(explicit);
    expect(hash(ports(undefined, [{ containerPort: 5000 }]))).toEqual(hash(ports('v1beta1', [{ containerPort: 5000, hostPort: 0 }])));
    expect(hash(ports(undefined, [{ containerPort: 5000 }]))).not.toEqual(explicit);
  });
});

describe('2014 rule 2: volumeMounts[].mountType', () => {
  const mount = (fields: Obj, extra: Obj = {}): Obj => withContainer({ volumeMounts: [{ name: 'data', ...fields }] }, extra);
  const allowed = { allowHostMounts: true };

  it.each([undefined, 'LOCAL', 'local', ''])('reads mountType %j as a pod volume, leaving the field absent', (mountType) => {
    const m = valid(mount({ mountPath: '/data', mountType }));
    expect(m.containers[0]!.volumeMounts).toEqual([{ name: 'data', mountPath: '/data', readOnly: false }]);
    expect(m.containers[0]!.volumeMounts[0]).not.toHaveProperty('mountType');
  });

  it('refuses a HOST mount unless allowed, naming the flag', () => {
    expect(errors(mount({ mountPath: '/var/run', mountType: 'HOST' }))).toEqual([
      { path: 'containers[0].volumeMounts[0].mountType', message: expect.stringContaining('--allow-host-mounts') },
    ]);
  });

  it('accepts a HOST mount when allowed, and the container spec binds the host path itself', () => {
    const m = valid(mount({ mountPath: '/var/lib/docker', mountType: 'host', readOnly: true }), allowed);
    expect(m.containers[0]!.volumeMounts).toEqual([{ name: 'data', mountPath: '/var/lib/docker', readOnly: true, mountType: 'HOST' }]);
    const spec = buildContainerSpec(m, m.containers[0]!, { node: 'n', source: 'file' });
    expect(spec.mounts).toEqual([{ volume: 'data', containerPath: '/var/lib/docker', readOnly: true, hostPath: '/var/lib/docker' }]);
  });

  it('gives a LOCAL mount no hostPath in the container spec', () => {
    const m = valid(mount({ mountPath: '/data' }));
    expect(buildContainerSpec(m, m.containers[0]!, { node: 'n', source: 'file' }).mounts[0]).not.toHaveProperty('hostPath');
  });

  it('takes the deprecated path as the host path too', () => {
    expect(valid(mount({ path: '/sys/fs/cgroup', mountType: 'HOST' }), allowed).containers[0]!.volumeMounts[0]!.mountPath).toBe(
      '/sys/fs/cgroup',
    );
  });

  it.each([
    ['/', 'root'],
    ['/.', 'root'],
    ['//', 'root'],
    ['/var/../etc', '".."'],
    ['/..', '".."'],
    ['/var/./run', 'normal path'],
    ['/var//run', 'normal path'],
    ['/var/run/', 'normal path'],
    ['var/run', 'absolute'],
  ])('refuses HOST mount path %j even when allowed (%s)', (mountPath, why) => {
    expect(errors(mount({ mountPath, mountType: 'HOST' }), allowed)).toEqual([
      { path: 'containers[0].volumeMounts[0].mountPath', message: expect.stringContaining(why) },
    ]);
  });

  it('accepts ".." inside a LOCAL mount path as before (it is a path in the container)', () => {
    expect(validateManifest(mount({ mountPath: '/a/../b' })).ok).toBe(true);
  });

  it.each(['NFS', 'Host ', 7])('rejects mountType %j', (mountType) => {
    expect(errors(mount({ mountPath: '/data', mountType }), allowed).map((e) => e.path)).toEqual([
      'containers[0].volumeMounts[0].mountType',
    ]);
  });

  it('still requires the mount to name a declared volume', () => {
    expect(
      errors(withContainer({ volumeMounts: [{ name: 'other', mountPath: '/var/run', mountType: 'HOST' }] }), allowed).map((e) => e.path),
    ).toEqual(['containers[0].volumeMounts[0].name']);
  });

  it('changes the hash of a container whose mount becomes HOST, and of no other', () => {
    const local = valid(mount({ mountPath: '/var/run' }));
    const host = valid(mount({ mountPath: '/var/run', mountType: 'HOST' }), allowed);
    const explicitLocal = valid(mount({ mountPath: '/var/run', mountType: 'LOCAL' }));
    expect(specHash(host, host.containers[0]!)).not.toBe(specHash(local, local.containers[0]!));
    expect(specHash(explicitLocal, explicitLocal.containers[0]!)).toBe(specHash(local, local.containers[0]!));
  });
});
