import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { isManagedBy, nodeNameProblem } from '../src/naming.js';
import { buildContainerSpec } from '../src/spec.js';
import { MAX_LIST_ENTRIES } from '../src/field-checks.js';
import { MAX_CONTAINERS, validateManifest } from '../src/validate.js';

/**
 * Manifest values that could break out of where the agent puts them: into an environment block,
 * an argv, a Docker bind (`host:container:mode`), a probe's HTTP request line, a label. Each must
 * be refused with a field error before any runtime sees it.
 */

type Obj = Record<string, unknown>;

function container(fields: Obj): Obj {
  return { id: 'web', volumes: [{ name: 'data' }], containers: [{ name: 'app', image: 'nginx', ...fields }] };
}

/** The field paths a rejected manifest's errors name. */
function rejected(input: Obj): string[] {
  const result = validateManifest(input);
  if (result.ok) throw new Error(`accepted: ${JSON.stringify(input)}`);
  return result.errors.map((e) => e.path);
}

describe('validateManifest against values that could break out', () => {
  it.each(['A=B', 'PATH=/evil', '=', 'A\nB', 'A\u0000', 'A B', 'Ä'])('rejects env name %j', (name) => {
    expect(rejected(container({ env: [{ name, value: 'x' }] }))).toEqual(['containers[0].env[0].name']);
  });

  it('rejects a NUL in an env value or a command argument, which no process can be given', () => {
    expect(rejected(container({ env: [{ name: 'A', value: 'x\u0000y' }] }))).toEqual(['containers[0].env[0].value']);
    expect(rejected(container({ command: ['sh', '-c', 'echo\u0000 hi'] }))).toEqual(['containers[0].command[2]']);
  });

  it('keeps newlines in env values and commands: scripts have them', () => {
    expect(validateManifest(container({ env: [{ name: 'A', value: 'line 1\nline 2' }], command: ['sh', '-c', 'echo a\necho b'] })).ok).toBe(
      true,
    );
  });

  it.each(['-rm', '--privileged', 'nginx\r', 'nginx\n', 'nginx:1\u2028', 'nginx;rm', 'nginx$(id)', 'ngi\u0000nx', 'a'.repeat(4097)])(
    'rejects image %j',
    (image) => {
      expect(rejected(container({ image }))).toEqual(['containers[0].image']);
    },
  );

  it.each([
    ['/data:/etc', 'a second bind target'],
    ['/data:ro', 'a mode'],
    ['/data\n', 'a line break'],
    ['/da\u0000ta', 'a NUL'],
    ['/data\t', 'a tab'],
    ['data', 'a relative path'],
  ])('rejects mountPath %j (%s)', (mountPath) => {
    expect(rejected(container({ volumeMounts: [{ name: 'data', mountPath }] }))).toEqual(['containers[0].volumeMounts[0].mountPath']);
  });

  it.each(['/srv\n', '/s\u0000rv', '/srv\r'])('rejects workingDir %j', (workingDir) => {
    expect(rejected(container({ workingDir }))).toEqual(['containers[0].workingDir']);
  });

  it.each(['/health\r\nHost: evil', '/health check', '/h\u0000', '/h\u007f'])('rejects httpGet probe path %j', (path) => {
    const probe = { httpGet: { path, port: 80 } };
    expect(rejected(container({ ports: [{ containerPort: 80, hostPort: 8080 }], livenessProbe: probe }))).toEqual([
      'containers[0].livenessProbe.httpGet.path',
    ]);
  });

  it.each([
    ['id', { id: 'web\n' }],
    ['id', { id: 'web\u0000' }],
    ['id', { id: 'a'.repeat(254) }],
    ['id', { id: '../etc' }],
    ['id', { id: 'a/b' }],
    ['containers[0].name', { containers: [{ name: 'app\n', image: 'nginx' }] }],
    ['volumes[0].name', { volumes: [{ name: '../data' }] }],
    ['containers[0].ports[0].name', { containers: [{ name: 'app', image: 'nginx', ports: [{ name: 'http\n', containerPort: 80 }] }] }],
  ])('rejects a name that becomes a label or a path (%s)', (path, fields) => {
    expect(rejected({ ...container({}), ...fields })).toEqual([path]);
  });

  it('writes only labels it recognises as its own, for any manifest it accepts', () => {
    const label = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/);
    fc.assert(
      fc.property(label, fc.uniqueArray(label, { minLength: 1, maxLength: 3 }), fc.string(), (id, names, image) => {
        const result = validateManifest({
          id,
          containers: names.map((name) => ({ name, image: `app${image.replace(/[^a-z0-9]/g, '')}:1` })),
        });
        if (!result.ok) throw new Error(JSON.stringify(result.errors));
        for (const c of result.manifest.containers) {
          const spec = buildContainerSpec(result.manifest, c, { node: 'node-a', source: 'file' });
          expect(isManagedBy(spec.labels, 'node-a')).toBe(true);
        }
      }),
      { numRuns: 200 },
    );
  });
});

describe('nodeNameProblem', () => {
  it.each(['node-a', 'node-1.example.com', 'a', 'a'.repeat(63)])('accepts %j', (name) => {
    expect(nodeNameProblem(name)).toBeUndefined();
  });

  it.each(['', 'a/b', '../etc', '.', 'node_a', 'Node-A', 'node a', 'node\n', '-node', 'node.', 'a'.repeat(254)])(
    'refuses %j, saying how to fix it',
    (name) => {
      expect(nodeNameProblem(name)).toContain('--hostname-override');
    },
  );
});

describe('the size of one manifest', () => {
  const many = (n: number) => ({ id: 'big', containers: Array.from({ length: n }, (_, i) => ({ name: `c${i}`, image: 'busybox' })) });

  it(`accepts ${MAX_CONTAINERS} containers`, () => {
    expect(validateManifest(many(MAX_CONTAINERS)).ok).toBe(true);
  });

  it('refuses more, with one error naming the field and what to do, before looking at any container', () => {
    const result = validateManifest(many(20_000));
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.errors).toEqual([
      { path: 'containers', message: `must list at most ${MAX_CONTAINERS} containers, got 20000; split the pod into several manifests` },
    ]);
  });
});

/**
 * Issue 17 item 2: the lists of a container. Each entry is work later (an engine argument, a port
 * binding), and a text of a megabyte holds half a million short entries.
 */
describe('the length of the lists in a manifest', () => {
  const entries: Record<string, (i: number) => unknown> = {
    command: () => 'a',
    env: (i) => ({ name: `V${i}`, value: 'x' }),
    ports: (i) => ({ containerPort: 1 + i }),
    volumeMounts: (i) => ({ name: 'data', mountPath: `/d${i}` }),
  };

  it.each(Object.keys(entries))(`accepts ${MAX_LIST_ENTRIES} entries in %s, and refuses more with one error`, (field) => {
    const list = (n: number) => Array.from({ length: n }, (_, i) => entries[field]!(i));
    expect(validateManifest(container({ [field]: list(MAX_LIST_ENTRIES) })).ok).toBe(true);
    const result = validateManifest(container({ [field]: list(500_000) }));
    expect(result.ok ? [] : result.errors).toEqual([
      { path: `containers[0].${field}`, message: `must list at most ${MAX_LIST_ENTRIES} entries, got 500000` },
    ]);
  });

  it('bounds the volumes of a manifest and the command of an exec probe the same way', () => {
    const volumes = Array.from({ length: MAX_LIST_ENTRIES + 1 }, (_, i) => ({ name: `v${i}` }));
    expect(rejected({ ...container({}), volumes })).toEqual(['volumes']);
    const probe = { exec: { command: Array.from({ length: MAX_LIST_ENTRIES + 1 }, () => 'true') } };
    expect(rejected(container({ livenessProbe: probe }))).toEqual(['containers[0].livenessProbe.exec.command']);
  });
});
