import { describe, expect, it } from '@jest/globals';
import {
  Labels,
  buildContainerName,
  derivedManifestId,
  identityOf,
  isDnsLabel,
  isManagedBy,
  isManifestId,
  parseContainerName,
} from '../src/naming.js';
import { buildSandboxSpec, isManagedSandbox, podHostname } from '../src/sandbox.js';
import { buildContainerSpec } from '../src/spec.js';
import { validateManifest } from '../src/validate.js';

const pod = (extra: Record<string, unknown> = {}) => ({ version: 'v1beta1', containers: [{ name: 'main', image: 'app:1' }], ...extra });

describe('2014 rule 3: an id is optional where the source can name the pod', () => {
  it('takes defaultId when the id is absent or empty', () => {
    for (const input of [pod(), pod({ id: '' }), pod({ id: null })]) {
      const result = validateManifest(input, { defaultId: 'named-here' });
      expect(result.ok && result.manifest.id).toBe('named-here');
    }
  });

  it('prefers a written id to defaultId', () => {
    const result = validateManifest(pod({ id: 'mine' }), { defaultId: 'named-here' });
    expect(result.ok && result.manifest.id).toBe('mine');
  });

  it('requires an id without defaultId (the server names no pod), naming the field', () => {
    const result = validateManifest(pod());
    expect(result.ok).toBe(false);
    expect(!result.ok && result.errors).toEqual([{ path: 'id', message: 'is required' }]);
  });

  it('returns defaultId with a rejection, so that the last good version of an id-less manifest is kept', () => {
    const result = validateManifest(pod({ containers: [{ name: 'main' }] }), { defaultId: 'named-here' });
    expect(!result.ok && result.id).toBe('named-here');
  });

  it('still refuses a written id that is not a DNS subdomain, even with defaultId', () => {
    const result = validateManifest(pod({ id: 'Not_Valid' }), { defaultId: 'named-here' });
    expect(!result.ok && result.errors.map((e) => e.path)).toEqual(['id']);
  });
});

describe('derivedManifestId', () => {
  it('is readable, deterministic and a DNS label', () => {
    const id = derivedManifestId('cadvisor.manifest', '/etc/kubernetes/manifests/cadvisor.manifest');
    expect(id).toMatch(/^cadvisor-manifest-[0-9a-f]{12}$/);
    expect(derivedManifestId('cadvisor.manifest', '/etc/kubernetes/manifests/cadvisor.manifest')).toBe(id);
    expect(isDnsLabel(id)).toBe(true);
  });

  it('differs by origin and by position, and says the position', () => {
    const ids = [
      derivedManifestId('web.yaml', '/a/web.yaml'),
      derivedManifestId('web.yaml', '/b/web.yaml'),
      derivedManifestId('web.yaml', '/a/web.yaml', 0),
      derivedManifestId('web.yaml', '/a/web.yaml', 1),
    ];
    expect(new Set(ids).size).toBe(4);
    expect(ids[3]).toMatch(/^web-yaml-1-[0-9a-f]{12}$/);
  });

  it.each(['', '...', '___', 'ÜBER', `${'x'.repeat(100)}.yaml`, 'My Pods (2014).YAML'])('makes a DNS label of name %j', (name) => {
    const id = derivedManifestId(name, 'origin', 999_999);
    expect(isDnsLabel(id)).toBe(true);
  });
});

describe('dotted ids in names, labels and sandboxes', () => {
  const ids = ['web.example.com', 'a.b-c.d', 'x-1.yz', `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(61)}`];

  it.each(ids)('accepts %j as an id, and round-trips it through a container name', (id) => {
    expect(isManifestId(id)).toBe(true);
    expect(validateManifest(pod({ id })).ok).toBe(true);
    const name = buildContainerName(id, 'web-server');
    expect(name).toMatch(/^[a-zA-Z0-9][a-zA-Z0-9_.-]+$/); // Docker's name grammar
    expect(parseContainerName(name)).toEqual({ podId: id, container: 'web-server', suffix: name.slice(-8) });
  });

  it.each(ids)('recognises the container and sandbox made for %j as managed', (id) => {
    const result = validateManifest(pod({ id }));
    if (!result.ok) throw new Error('invalid');
    const m = result.manifest;
    const spec = buildContainerSpec(m, m.containers[0]!, { node: 'h1', source: 'file' });
    expect(isManagedBy(spec.labels, 'h1')).toBe(true);
    expect(identityOf(spec.labels)?.podId).toBe(id);
    const sandbox = buildSandboxSpec(m, { node: 'h1', source: 'file' });
    expect(isManagedSandbox(sandbox, 'h1')).toBe(true);
    expect(isManagedSandbox({ ...sandbox, name: `/${sandbox.name}` }, 'h1')).toBe(true);
  });

  it('refuses a sandbox whose name holds another dotted id', () => {
    const result = validateManifest(pod({ id: 'web.example.com' }));
    if (!result.ok) throw new Error('invalid');
    const sandbox = buildSandboxSpec(result.manifest, { node: 'h1', source: 'file' });
    expect(isManagedSandbox({ ...sandbox, name: buildContainerName('web.example.org', 'POD') }, 'h1')).toBe(false);
    expect(isManagedSandbox({ ...sandbox, labels: { ...sandbox.labels, [Labels.sandbox]: 'web..example.com' } }, 'h1')).toBe(false);
  });

  it('gives a pod a hostname of at most 63 characters, unchanged for ids that fit', () => {
    expect(podHostname('web.example.com')).toBe('web.example.com');
    expect(podHostname('a'.repeat(63))).toBe('a'.repeat(63));
    const long = `${'a'.repeat(62)}.b${'c'.repeat(100)}`;
    expect(podHostname(long)).toBe('a'.repeat(62));
    expect(podHostname(`${'a'.repeat(62)}-b`)).toBe(`${'a'.repeat(62)}`);
  });
});
