import { describe, expect, it } from '@jest/globals';
import { objectLookupOf, pullCredentialKey, type ContainerManifest, type SourceObject } from '../src/index.js';
import { pullCredentialsFor } from '../src/pull-credentials.js';

const bytes = (text: string) => new TextEncoder().encode(text);
const b64 = (text: string) => Buffer.from(text).toString('base64');
const configJson = (auths: Record<string, object>) => bytes(JSON.stringify({ auths }));
const secret = (name: string, data: Record<string, Uint8Array>, namespace = 'default'): SourceObject => ({
  kind: 'Secret',
  namespace,
  name,
  data,
});
const pod = (imagePullSecrets: string[], namespace?: string): ContainerManifest => ({
  id: 'web',
  ...(namespace === undefined ? {} : { namespace }),
  volumes: [],
  containers: [],
  imagePullSecrets,
});
const users = (image: string, manifest: ContainerManifest, objects: SourceObject[]) =>
  pullCredentialsFor(image, manifest, objectLookupOf(objects)).credentials.map((c) => c.username);

describe('pullCredentialsFor: the kubelet keyring over a pod pull secrets', () => {
  it('reads .dockerconfigjson auths, auth winning over username and password, and says where each came from', () => {
    const objects = [
      secret('regcred', {
        '.dockerconfigjson': configJson({
          '127.0.0.1:5000': { auth: b64('alice:pa:ss'), username: 'ignored', password: 'ignored' },
          'other.example.com': { username: 'bob', password: 'x' },
        }),
      }),
    ];
    const found = pullCredentialsFor('127.0.0.1:5000/team/app:1.0', pod(['regcred']), objectLookupOf(objects));
    expect(found).toEqual({
      credentials: [{ username: 'alice', password: 'pa:ss', source: 'Secret default/regcred, 127.0.0.1:5000' }],
      missing: [],
    });
  });

  it('reads the older .dockercfg map, with a scheme and /v1/ path as docker login wrote them, unpadded base64 too', () => {
    const objects = [
      secret('old', { '.dockercfg': bytes(JSON.stringify({ 'https://quay.io/v1/': { auth: b64('carol:pw').replace(/=+$/, '') } })) }),
    ];
    expect(users('quay.io/org/app@sha256:abc', pod(['old']), objects)).toEqual(['carol']);
  });

  it('matches host and port exactly, a * per host part, and the entry path as a prefix of the repository; longer keys first, every match kept', () => {
    const objects = [
      secret('a', {
        '.dockerconfigjson': configJson({
          'registry.example.com': { username: 'host' },
          'registry.example.com/team': { username: 'team' },
          'registry.example.com/team/app': { username: 'app' },
          '*.example.com': { username: 'glob' },
          'registry.example.com:5000': { username: 'port' },
          'example.com': { username: 'fewer-parts' },
        }),
      }),
    ];
    expect(users('registry.example.com/team/app:1', pod(['a']), objects)).toEqual(['app', 'team', 'host', 'glob']);
    expect(users('registry.example.com:5000/team/app', pod(['a']), objects)).toEqual(['port']);
    expect(users('registry.example.com/other/x', pod(['a']), objects)).toEqual(['host', 'glob']);
    expect(users('mirror.example.com/x', pod(['a']), objects)).toEqual(['glob']);
    expect(users('example.org/x', pod(['a']), objects)).toEqual([]);
  });

  it('gives Docker Hub images the index.docker.io entry, and docker.io entries match them by name', () => {
    const hub = [secret('hub', { '.dockerconfigjson': configJson({ 'https://index.docker.io/v1/': { username: 'dana' } }) })];
    for (const image of ['busybox', 'busybox:1.36', 'library/busybox', 'dana/app:1', 'docker.io/dana/app', 'index.docker.io/dana/app'])
      expect([image, users(image, pod(['hub']), hub)]).toEqual([image, ['dana']]);
    expect(users('quay.io/dana/app', pod(['hub']), hub)).toEqual([]);
    const byName = [secret('hub', { '.dockerconfigjson': configJson({ 'docker.io/dana': { username: 'erin' } }) })];
    expect(users('dana/app', pod(['hub']), byName)).toEqual(['erin']);
    expect(users('busybox', pod(['hub']), byName)).toEqual([]);
  });

  it('tries the entries of several secrets, in the order of their keys; a secret of the pod namespace only', () => {
    const objects = [
      secret('first', { '.dockerconfigjson': configJson({ 'r.example.com': { username: 'one' } }) }, 'shop'),
      secret('second', { '.dockerconfigjson': configJson({ 'r.example.com': { username: 'two' } }) }, 'shop'),
      secret('first', { '.dockerconfigjson': configJson({ 'r.example.com': { username: 'other-namespace' } }) }),
    ];
    expect(users('r.example.com/app', pod(['first', 'second'], 'shop'), objects)).toEqual(['one', 'two']);
  });

  it('names missing secrets without failing, and passes over a secret that holds no registry key', () => {
    const objects = [secret('plain', { password: bytes('x') })];
    expect(pullCredentialsFor('r.example.com/app', pod(['gone', 'plain']), objectLookupOf(objects))).toEqual({
      credentials: [],
      missing: ['gone'],
    });
  });

  it('refuses a secret it cannot read, naming the secret and key, never its content', () => {
    const read =
      (data: Uint8Array, key = '.dockerconfigjson') =>
      () =>
        pullCredentialsFor('r.example.com/app', pod(['bad']), objectLookupOf([secret('bad', { [key]: data })]));
    expect(read(bytes('{not json s3cr3t'))).toThrow('pull secret default/bad: .dockerconfigjson is not JSON');
    expect(read(bytes('["s3cr3t"]'))).toThrow('pull secret default/bad: .dockerconfigjson must be {"auths": {...}}');
    expect(read(configJson({ 'r.example.com': { auth: '!!s3cr3t' } }))).toThrow(
      /^pull secret default\/bad: \.dockerconfigjson entry "r\.example\.com": auth must be base64 of user:password$/,
    );
    expect(read(configJson({ 'r.example.com': { auth: b64('no-colon-s3cr3t') } }))).toThrow(/auth must be base64/);
    expect(read(bytes('"s3cr3t"'), '.dockercfg')).toThrow('pull secret default/bad: .dockercfg must be a map of registries');
    try {
      read(bytes('{not json s3cr3t'))();
    } catch (error) {
      expect((error as Error).message).not.toContain('s3cr3t');
    }
  });

  it('keys credentials by what they hold, so pulls with other credentials never share a transfer', () => {
    const a = { username: 'u', password: 'p', source: 'x' };
    expect(pullCredentialKey(undefined)).toBe('');
    expect(pullCredentialKey(a)).toBe(pullCredentialKey({ ...a, source: 'y' }));
    expect(pullCredentialKey(a)).not.toBe(pullCredentialKey({ ...a, password: 'q' }));
    expect(pullCredentialKey(a)).not.toContain('p');
  });
});
