import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import {
  buildContainerName,
  escapeNamePart,
  identityOf,
  isDnsLabel,
  isManagedBy,
  Labels,
  parseContainerName,
  unescapeNamePart,
} from '../src/naming.js';
import { validateManifest } from '../src/validate.js';

describe('container naming', () => {
  it.each([
    ['web', 'nginx'],
    ['web-frontend', 'nginx-proxy'],
    ['a--b', 'c---d'],
    ['under_score', 'x_-_y'],
    ['-', '_'],
  ])('round-trips pod %j container %j', (podId, container) => {
    const name = buildContainerName(podId, container);
    expect(name.split('--')).toHaveLength(3);
    expect(parseContainerName(name)).toEqual({ podId, container, suffix: name.slice(-8) });
    expect(parseContainerName(`/${name}`)?.podId).toBe(podId);
  });

  it('escapes so that no escaped part contains the separator', () => {
    for (const s of ['a-b', 'a--b', '-a-', '_-_', '___']) {
      expect(escapeNamePart(s)).not.toContain('--');
      expect(unescapeNamePart(escapeNamePart(s))).toBe(s);
    }
  });

  it('leaves names that do not follow the scheme alone', () => {
    expect(parseContainerName('my-own-container')).toBeUndefined();
    expect(parseContainerName('a--b')).toBeUndefined();
    expect(parseContainerName('a--b--notahexsuffix')).toBeUndefined();
    expect(parseContainerName('a--b--c--0badcafe')).toBeUndefined();
  });

  const ours = {
    [Labels.manifestId]: 'web',
    [Labels.containerName]: 'nginx',
    [Labels.specHash]: 'v1-0123456789abcdef',
    [Labels.node]: 'h1',
  };

  it('reads identity from labels and treats unlabelled containers as foreign', () => {
    expect(identityOf({})).toBeUndefined();
    expect(identityOf({ [Labels.manifestId]: 'web' })).toBeUndefined();
    expect(identityOf(ours)).toEqual({ podId: 'web', container: 'nginx', specHash: 'v1-0123456789abcdef', source: '', node: 'h1' });
    expect(isManagedBy(ours, 'h1')).toBe(true);
    expect(isManagedBy(ours, 'h2')).toBe(false);
  });

  it('treats labels the agent could not have written as foreign, without throwing', () => {
    const garbage: Array<Record<string, string>> = [
      { ...ours, [Labels.specHash]: '' },
      { ...ours, [Labels.specHash]: 'garbage' },
      { ...ours, [Labels.specHash]: 'v1-0123456789ABCDEF' },
      { ...ours, [Labels.manifestId]: '../../etc' },
      { ...ours, [Labels.manifestId]: 'Web' },
      { ...ours, [Labels.manifestId]: 'a'.repeat(254) },
      { ...ours, [Labels.manifestId]: 'web..example' },
      { ...ours, [Labels.containerName]: 'nginx\n' },
      { ...ours, [Labels.containerName]: '' },
      Object.fromEntries(Object.entries(ours).filter(([k]) => k !== Labels.specHash)),
      Object.fromEntries(Object.entries(ours).filter(([k]) => k !== Labels.node)),
    ];
    for (const labels of garbage) {
      expect(isManagedBy(labels, 'h1')).toBe(false);
      if (labels[Labels.node] === undefined) continue;
      expect(identityOf(labels)).toBeUndefined();
    }
    // Values the agent reads leniently stay lenient: garbage counters do not make a container foreign.
    expect(isManagedBy({ ...ours, [Labels.restartCount]: 'NaN', [Labels.crashStreak]: '-1', [Labels.gracePeriod]: 'x' }, 'h1')).toBe(true);
    expect(isManagedBy(ours, '')).toBe(false);
  });

  it('accepts as ours only manifest ids and container names the validator accepts', () => {
    // Labels are written from validated manifests, so anything the validator refuses is forged.
    const name = fc.oneof(fc.string({ maxLength: 70 }), fc.stringMatching(/^[a-z0-9-]{1,70}$/));
    fc.assert(
      fc.property(name, name, (podId, container) => {
        const labels = { ...ours, [Labels.manifestId]: podId, [Labels.containerName]: container };
        const valid = validateManifest({ id: podId, containers: [{ name: container, image: 'app:1' }] }).ok;
        expect(isManagedBy(labels, 'h1')).toBe(valid);
      }),
      { numRuns: 500 },
    );
  });
});

describe('isDnsLabel', () => {
  it('accepts lower-case letters, digits and inner dashes, up to 63 characters', () => {
    for (const ok of ['a', '0', 'web', 'web-1', 'a-b-c', 'x'.repeat(63), `a${'-'.repeat(61)}b`]) expect(isDnsLabel(ok)).toBe(true);
  });

  it('refuses the empty string, upper case, edge dashes, dots, slashes and 64 characters', () => {
    for (const bad of ['', 'Web', '-web', 'web-', 'a.b', 'a/b', '..', 'a_b', 'x'.repeat(64), 'é']) expect(isDnsLabel(bad)).toBe(false);
  });
});
