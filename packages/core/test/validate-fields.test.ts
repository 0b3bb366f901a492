import { describe, expect, it } from '@jest/globals';
import { formatFieldErrors } from '../src/errors.js';
import { validateManifest } from '../src/validate.js';
import { paths, rejectedErrors, withContainer } from './validation-fixtures.js';

describe('validateManifest: names and ids', () => {
  // The 2014 API took a DNS subdomain as the id: dots, and up to 253 characters.
  it.each([
    ['Web', 'upper case'],
    ['a'.repeat(254), '254 characters'],
    ['-web', 'a leading "-"'],
    ['web-', 'a trailing "-"'],
    ['web_1', 'an underscore'],
    ['web..example', 'an empty label'],
    ['.web', 'a leading "."'],
    ['web.', 'a trailing "."'],
    ['web.-x', 'a label starting with "-"'],
    ['../etc', 'a path'],
  ])('rejects id %j (%s)', (id) => {
    const errors = rejectedErrors(withContainer({}, { id }));
    expect(errors).toHaveLength(1);
    expect(errors[0]!.path).toBe('id');
    expect(errors[0]!.message).toContain('must be a DNS subdomain');
  });

  it.each([
    'a'.repeat(63),
    'web-1',
    '0',
    'a-b-c',
    'web.example',
    'web.example.com',
    `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(61)}`,
    'a'.repeat(64),
  ])('accepts id %j', (id) => {
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
    const errors = rejectedErrors(
      withContainer({
        volumeMounts: [
          { name: 'data', mountPath: '/data' },
          { name: 'cache', mountPath: '/cache' },
        ],
      }),
    );
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
    const errors = rejectedErrors(
      withContainer({
        env: [
          { name: 'OK', value: 'x' },
          { name, value: 'x' },
        ],
      }),
    );
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
    [{ volumes: [{ name: 'data', emptyDir: { medium: 'Memory', size: 1 } }] }, 'volumes[0].emptyDir.size'],
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

  it('reports a manifest without containers (an empty list is a pod with nothing to run)', () => {
    expect(rejectedErrors({ id: 'web' })).toEqual([{ path: 'containers', message: 'is required' }]);
  });

  it.each(['v1beta3', 'v1', 'v1beta', 1])('rejects version %j', (version) => {
    const errors = rejectedErrors(withContainer({}, { version }));
    expect(errors).toHaveLength(1);
    expect(errors[0]!.path).toBe('version');
    expect(errors[0]!.message).toContain('v1beta1 or v1beta2');
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

/**
 * Issue 17 item 3: YAML reads `01234` as 1234, `0x1F` as 31, `1.10` as 1.1, so a number turned
 * back into text is not what its author wrote. The kubelet refuses a number where a string goes.
 */
describe('validateManifest: numbers and booleans where a string goes', () => {
  it.each([
    [8080, '"8080"'],
    [1.1, '"1.1"'],
    [true, '"true"'],
  ])('refuses env value %j with its path, saying what to quote', (value, quoted) => {
    expect(
      rejectedErrors(
        withContainer({
          env: [
            { name: 'A', value: 'a' },
            { name: 'B', value },
          ],
        }),
      ),
    ).toEqual([{ path: 'containers[0].env[1].value', message: `must be a string; quote it: ${quoted}` }]);
  });

  it('quotes the value as it was written when the text it came from is known', () => {
    const input = withContainer({ env: [{ name: 'ZIP', value: 1234 }], command: ['sleep', 31] });
    const container = (input['containers'] as Array<Record<string, unknown>>)[0]!;
    const env = (container['env'] as Array<Record<string, unknown>>)[0]!;
    const command = container['command'] as unknown[];
    const writtenAs = (holder: object, key: string | number) =>
      holder === env && key === 'value' ? '01234' : holder === command && key === 1 ? '0x1F' : undefined;
    const result = validateManifest(input, { writtenAs });
    expect(result.ok ? [] : result.errors).toEqual([
      { path: 'containers[0].command[1]', message: 'must be a string; quote it: "0x1F"' },
      { path: 'containers[0].env[0].value', message: 'must be a string; quote it: "01234"' },
    ]);
  });

  it('keeps every string as it is, and a missing or null value as ""', () => {
    const env = ['01234', '0x1F', '1.10', 'yes', 'true', ''].map((value, i) => ({ name: `V${i}`, value }));
    const result = validateManifest(withContainer({ env: [...env, { name: 'NONE', value: null }, { name: 'MISSING' }] }));
    if (!result.ok) throw new Error(formatFieldErrors(result.errors));
    expect(result.manifest.containers[0]!.env.map((e) => e.value)).toEqual(['01234', '0x1F', '1.10', 'yes', 'true', '', '', '']);
  });

  it('refuses a number in a command the same way', () => {
    expect(rejectedErrors(withContainer({ command: ['sleep', 3600] }))).toEqual([
      { path: 'containers[0].command[1]', message: 'must be a string; quote it: "3600"' },
    ]);
  });
});
