import { describe, expect, it } from '@jest/globals';
import { buildContainerName, escapeNamePart, identityOf, Labels, parseContainerName, unescapeNamePart } from '../src/naming.js';

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

  it('reads identity from labels and treats unlabelled containers as foreign', () => {
    expect(identityOf({})).toBeUndefined();
    expect(identityOf({ [Labels.manifestId]: 'web' })).toBeUndefined();
    expect(identityOf({ [Labels.manifestId]: 'web', [Labels.containerName]: 'nginx', [Labels.node]: 'h1' })).toEqual({
      podId: 'web',
      container: 'nginx',
      specHash: '',
      source: '',
      node: 'h1',
    });
  });
});
