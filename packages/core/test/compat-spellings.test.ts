import { describe, expect, it } from '@jest/globals';
import { formatFieldErrors } from '../src/errors.js';
import type { ContainerManifest } from '../src/manifest.js';
import { validateManifest, type ValidateOptions } from '../src/validate.js';
import { rejectedErrors, withContainer, type Obj } from './validation-fixtures.js';

function accepted(input: unknown, options: ValidateOptions = {}) {
  const result = validateManifest(input, options);
  if (!result.ok) throw new Error(formatFieldErrors(result.errors));
  return result;
}
const manifestOf = (input: unknown): ContainerManifest => accepted(input).manifest;

describe('2014 rule 1: volumeMounts[].path and env[].key, the deprecated spellings', () => {
  it('reads path as mountPath and key as name', () => {
    const m = manifestOf(
      withContainer({ volumeMounts: [{ name: 'data', path: '/mnt/data', readOnly: true }], env: [{ key: 'VAR1', value: 'v' }] }),
    );
    expect(m.containers[0]!.volumeMounts).toEqual([{ name: 'data', mountPath: '/mnt/data', readOnly: true }]);
    expect(m.containers[0]!.env).toEqual([{ name: 'VAR1', value: 'v' }]);
  });

  it('uses mountPath and name when both spellings are given', () => {
    const m = manifestOf(
      withContainer({ volumeMounts: [{ name: 'data', mountPath: '/new', path: '/old' }], env: [{ name: 'NEW', key: 'OLD', value: '' }] }),
    );
    expect(m.containers[0]!.volumeMounts[0]!.mountPath).toBe('/new');
    expect(m.containers[0]!.env[0]!.name).toBe('NEW');
  });

  it('normalises to exactly what the current spelling gives (same spec, same hash)', () => {
    const old = manifestOf(withContainer({ volumeMounts: [{ name: 'data', path: '/d' }], env: [{ key: 'A', value: '1' }] }));
    const now = manifestOf(withContainer({ volumeMounts: [{ name: 'data', mountPath: '/d' }], env: [{ name: 'A', value: '1' }] }));
    expect(old).toEqual(now);
  });

  it('warns once per deprecated field, naming every place it is used', () => {
    const result = accepted({
      id: 'web',
      volumes: [{ name: 'a' }, { name: 'b' }],
      containers: [
        {
          name: 'one',
          image: 'x',
          volumeMounts: [
            { name: 'a', path: '/a' },
            { name: 'b', path: '/b' },
          ],
          env: [{ key: 'K', value: 'v' }],
        },
        { name: 'two', image: 'x', volumeMounts: [{ name: 'a', path: '/a' }] },
      ],
    });
    expect(result.warnings).toEqual([
      {
        reason: 'DeprecatedField',
        field: 'containers[].env[].key',
        paths: ['containers[0].env[0].key'],
        message: expect.stringContaining('write name'),
      },
      {
        reason: 'DeprecatedField',
        field: 'containers[].volumeMounts[].path',
        paths: ['containers[0].volumeMounts[0].path', 'containers[0].volumeMounts[1].path', 'containers[1].volumeMounts[0].path'],
        message: expect.stringContaining('write mountPath'),
      },
    ]);
  });

  it('warns about nothing when only the current spellings are used', () => {
    expect(accepted(withContainer({ volumeMounts: [{ name: 'data', mountPath: '/d' }], env: [{ name: 'A' }] })).warnings).toEqual([]);
  });

  it('names the spelling that was written in an error', () => {
    expect(rejectedErrors(withContainer({ volumeMounts: [{ name: 'data', path: 'relative' }] }))).toEqual([
      { path: 'containers[0].volumeMounts[0].path', message: 'must be an absolute path' },
    ]);
    expect(rejectedErrors(withContainer({ env: [{ key: '1BAD', value: 'v' }] })).map((e) => e.path)).toEqual(['containers[0].env[0].key']);
    expect(rejectedErrors(withContainer({ volumeMounts: [{ name: 'data' }] }))).toEqual([
      { path: 'containers[0].volumeMounts[0].mountPath', message: 'is required' },
    ]);
    expect(rejectedErrors(withContainer({ env: [{ value: 'v' }] }))).toEqual([
      { path: 'containers[0].env[0].name', message: 'is required' },
    ]);
  });
});

describe('2014 rule 5: versions, protocols and empty pods', () => {
  // The version's one meaning is the port rule (rule 4): applied, and then left out of the manifest.
  it.each(['v1beta1', 'v1beta2', 'V1BETA1', 'V1Beta2'])('accepts version %j as naming the version', (version) => {
    const m = manifestOf(withContainer({ ports: [{ containerPort: 80 }] }, { version }));
    expect(m.containers[0]!.ports[0]!.hostPort).toBe(80);
    expect(m).not.toHaveProperty('version');
  });

  it('takes an absent or empty version as naming none', () => {
    for (const version of [undefined, '', null]) {
      expect(manifestOf(withContainer({ ports: [{ containerPort: 80 }] }, { version })).containers[0]!.ports[0]).not.toHaveProperty(
        'hostPort',
      );
    }
  });

  it.each([
    ['tcp', 'TCP'],
    ['Tcp', 'TCP'],
    ['Udp', 'UDP'],
    ['uDP', 'UDP'],
  ])('reads protocol %j as %s', (protocol, expected) => {
    expect(manifestOf(withContainer({ ports: [{ containerPort: 53, hostPort: 53, protocol }] })).containers[0]!.ports[0]!.protocol).toBe(
      expected,
    );
  });

  it('accepts a pod with no containers', () => {
    const m = manifestOf({ version: 'v1beta1', id: 'empty', containers: [] });
    expect(m.containers).toEqual([]);
  });
});

describe('2014 rule 6: the late-2014 v1beta1 spellings', () => {
  it.each([
    [{ always: {} }, 'Always'],
    [{ onFailure: {} }, 'OnFailure'],
    [{ never: {} }, 'Never'],
    [{ never: null }, 'Never'],
    ['OnFailure', 'OnFailure'],
  ])('reads restartPolicy %j as %s', (restartPolicy, expected) => {
    expect(manifestOf(withContainer({}, { restartPolicy })).restartPolicy).toBe(expected);
  });

  it.each([
    [{}, 'an empty object'],
    [{ always: {}, never: {} }, 'keys always, never'],
    [{ sometimes: {} }, 'keys sometimes'],
  ])('rejects restartPolicy %j', (restartPolicy, got) => {
    expect(rejectedErrors(withContainer({}, { restartPolicy }))).toEqual([
      { path: 'restartPolicy', message: expect.stringContaining(got) },
    ]);
  });

  it('rejects a restartPolicy object that carries anything', () => {
    expect(rejectedErrors(withContainer({}, { restartPolicy: { always: { delay: 1 } } })).map((e) => e.path)).toEqual([
      'restartPolicy.always.delay',
    ]);
    expect(rejectedErrors(withContainer({}, { restartPolicy: { always: 'yes' } })).map((e) => e.path)).toEqual(['restartPolicy.always']);
  });

  it.each([
    ['PullAlways', 'Always'],
    ['PullIfNotPresent', 'IfNotPresent'],
    ['PullNever', 'Never'],
    ['IfNotPresent', 'IfNotPresent'],
  ])('reads imagePullPolicy %j as %s', (imagePullPolicy, expected) => {
    expect(manifestOf(withContainer({ imagePullPolicy })).containers[0]!.imagePullPolicy).toBe(expected);
  });

  it.each(['pullAlways', 'Pull', 'always'])('rejects imagePullPolicy %j, naming both spellings', (imagePullPolicy) => {
    expect(rejectedErrors(withContainer({ imagePullPolicy }))).toEqual([
      { path: 'containers[0].imagePullPolicy', message: expect.stringContaining('(or PullAlways, PullIfNotPresent, PullNever)') },
    ]);
  });

  it('keeps a uuid on the manifest, and leaves it absent when not given', () => {
    const uuid = '6a3f2b1c-8d4e-11e4-b116-123b93f75cba';
    expect(manifestOf(withContainer({}, { uuid })).uuid).toBe(uuid);
    expect(manifestOf(withContainer({}))).not.toHaveProperty('uuid');
  });

  it.each([42, 'has space', 'a\nb', 'x'.repeat(254)])('rejects uuid %j', (uuid) => {
    expect(rejectedErrors(withContainer({}, { uuid })).map((e) => e.path)).toEqual(['uuid']);
  });
});

describe('validating a validated manifest', () => {
  const inputs: Obj[] = [
    withContainer(
      {
        volumeMounts: [{ name: 'data', path: '/d' }],
        env: [{ key: 'K' }],
        ports: [{ containerPort: 80 }, { containerPort: 81, hostPort: 0, protocol: 'udp' }],
        imagePullPolicy: 'PullNever',
      },
      { version: 'V1Beta2', restartPolicy: { never: {} }, uuid: 'u-1' },
    ),
    withContainer({ ports: [{ containerPort: 80 }] }, { version: undefined }),
    withContainer({ volumeMounts: [{ name: 'data', mountPath: '/srv/data', mountType: 'host' }] }),
  ];

  it.each(inputs)('gives the same manifest again, without warnings (%#)', (input) => {
    const once = accepted(input, { allowHostMounts: true }).manifest;
    const twice = accepted(structuredClone(once), { allowHostMounts: true });
    expect(twice.manifest).toEqual(once);
    expect(twice.warnings).toEqual([]);
  });
});
