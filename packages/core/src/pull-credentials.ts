import { createHash } from 'node:crypto';
import { KubeletError } from './errors.js';
import type { ContainerManifest } from './manifest.js';
import type { ObjectLookup } from './objects.js';

/**
 * A registry credential to pull one image with: a user name and password from a pod's pull secret
 * (`ImageService.pull` hands it to the engine: Docker's `X-Registry-Auth`, CRI's `AuthConfig`).
 */
export interface PullCredential {
  readonly username: string;
  readonly password: string;
  /**
   * Where it came from, for events and logs: the Secret and the registry entry it matched
   * (`Secret default/regcred, 127.0.0.1:5000`). Never the password or the `auth` string.
   */
  readonly source: string;
}

/** What a pod's pull secrets give for one image. */
export interface PodPullCredentials {
  /** The credentials whose registry entry matches the image, in the order to try them (see `pullCredentialsFor`). */
  readonly credentials: readonly PullCredential[];
  /** The pull secrets its source does not give: the pull goes ahead without them, as the kubelet's does. */
  readonly missing: readonly string[];
}

/** The keys a pull secret holds its registries under: `kubernetes.io/dockerconfigjson`'s, then `kubernetes.io/dockercfg`'s. */
export const DOCKER_CONFIG_JSON_KEY = '.dockerconfigjson';
export const DOCKER_CFG_KEY = '.dockercfg';

/**
 * The credentials of `manifest`'s pull secrets (`imagePullSecrets`, Secrets of its namespace in
 * `objects`) for `image`, as the kubelet's keyring finds them (`pkg/credentialprovider/keyring.go`):
 * every entry of every secret (`.dockerconfigjson`'s `auths`, or the older `.dockercfg` map) whose
 * registry matches the image's repository: the same host and port (a `*` in a part of the entry's
 * host matches that part), and the entry's path a prefix of the repository's path; entries in
 * reverse order of their keys, so a longer path comes before its prefix. When none matches, an
 * image of Docker Hub (`busybox`, `docker.io/…`) takes an `index.docker.io` entry. An entry's
 * `auth` (base64 of `user:password`) wins over its `username` and `password`.
 *
 * A secret the source does not give is `missing`, not an error. Throws `InvalidManifest` naming
 * the secret and key (never the content) when one cannot be read, as the kubelet's pull fails then.
 */
export function pullCredentialsFor(image: string, manifest: ContainerManifest, objects: ObjectLookup): PodPullCredentials {
  const namespace = manifest.namespace ?? 'default';
  const entries = new Map<string, PullCredential[]>();
  const missing: string[] = [];
  for (const name of manifest.imagePullSecrets ?? []) {
    const secret = objects.get('Secret', namespace, name);
    if (secret === undefined) {
      missing.push(name);
      continue;
    }
    const key = [DOCKER_CONFIG_JSON_KEY, DOCKER_CFG_KEY].find((k) => (secret.data[k]?.length ?? 0) > 0);
    if (key === undefined) continue; // not a pull secret: the kubelet passes over it
    const where = `pull secret ${namespace}/${name}`;
    for (const [registry, credential] of registryEntries(secret.data[key]!, key, where)) {
      const at = registryKey(registry);
      if (at === undefined) continue; // the kubelet logs and skips an entry it cannot parse
      entries.set(at, [...(entries.get(at) ?? []), { ...credential, source: `Secret ${namespace}/${name}, ${registry}` }]);
    }
  }
  const repository = repositoryOf(image);
  const credentials = [...entries.keys()]
    .sort()
    .reverse()
    .filter((key) => registryMatches(key, repository))
    .flatMap((key) => entries.get(key)!);
  if (credentials.length === 0 && isDockerHub(repository)) credentials.push(...(entries.get(DOCKER_HUB_KEY) ?? []));
  return { credentials, missing };
}

/**
 * A key that tells credentials apart without holding them: the image services share one transfer
 * between pulls of one image with the same credentials (or none: `''`) only.
 */
export function pullCredentialKey(credential: PullCredential | undefined): string {
  if (credential === undefined) return '';
  return createHash('sha256').update(`${credential.username}\0${credential.password}`).digest('hex');
}

const DOCKER_HUB_KEY = 'index.docker.io';

type Entry = Omit<PullCredential, 'source'>;

/** The registry entries of a secret's key: `{auths: {...}}` for `.dockerconfigjson`, the map itself for `.dockercfg`. */
function registryEntries(bytes: Uint8Array, key: string, where: string): Array<[string, Entry]> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    throw unreadable(where, key, 'is not JSON');
  }
  const map = key === DOCKER_CONFIG_JSON_KEY ? (isObject(parsed) ? (parsed['auths'] ?? {}) : undefined) : parsed;
  if (!isObject(map))
    throw unreadable(where, key, key === DOCKER_CONFIG_JSON_KEY ? 'must be {"auths": {...}}' : 'must be a map of registries');
  return Object.entries(map).map(([registry, value]) => {
    if (!isObject(value)) throw unreadable(where, key, `entry ${JSON.stringify(registry)} must be an object`);
    const text = (field: string): string => (typeof value[field] === 'string' ? value[field] : '');
    const auth = text('auth');
    if (auth === '') return [registry, { username: text('username'), password: text('password') }];
    const decoded = decodeAuth(auth);
    if (decoded === undefined) throw unreadable(where, key, `entry ${JSON.stringify(registry)}: auth must be base64 of user:password`);
    return [registry, decoded];
  });
}

/** `auth`: base64 (padded or not) of `user:password`. */
function decodeAuth(auth: string): Entry | undefined {
  const trimmed = auth.trim();
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(trimmed)) return undefined;
  const text = Buffer.from(trimmed, 'base64').toString('utf8');
  const colon = text.indexOf(':');
  return colon < 0 ? undefined : { username: text.slice(0, colon), password: text.slice(colon + 1) };
}

function unreadable(where: string, key: string, why: string): KubeletError {
  return new KubeletError('InvalidManifest', `${where}: ${key} ${why}`);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The keyring's key of a registry entry: its host[:port] and path, without a scheme, and without
 * a `/v1/` or `/v2/` in front of the path (`https://index.docker.io/v1/` is `index.docker.io`).
 */
function registryKey(registry: string): string | undefined {
  const url = schemeless(registry.replace(/^https?:\/\//, ''));
  if (url === undefined) return undefined;
  let path = url.path;
  if (path.startsWith('/v2/') || path.startsWith('/v1/')) path = path.slice(3);
  return path.length > 0 && path !== '/' ? `${url.host}${path}` : url.host;
}

/** A URL without a scheme, split as Go's `url.Parse("https://" + s)` splits it: the host as written, the path unescaped. */
function schemeless(text: string): { host: string; path: string } | undefined {
  const bare = text.replace(/[?#].*$/, '');
  const slash = bare.indexOf('/');
  try {
    return slash < 0 ? { host: bare, path: '' } : { host: bare.slice(0, slash), path: decodeURIComponent(bare.slice(slash)) };
  } catch {
    return undefined;
  }
}

/** Whether the keyring's `key` matches `repository` (Go's `URLsMatch`): port equal, host parts globbed one by one, path a prefix. */
function registryMatches(key: string, repository: string): boolean {
  const glob = schemeless(key);
  const target = schemeless(repository);
  if (glob === undefined || target === undefined) return false;
  const [globParts, globPort] = splitHost(glob.host);
  const [targetParts, targetPort] = splitHost(target.host);
  if (globPort !== targetPort || globParts.length !== targetParts.length) return false;
  if (!target.path.startsWith(glob.path)) return false;
  return globParts.every((part, i) => globMatches(part, targetParts[i]!));
}

/** A host's dot-separated parts and its port (Go's `SplitURL`: the whole host and no port where `net.SplitHostPort` refuses it). */
function splitHost(host: string): [string[], string] {
  const bracketed = /^\[([^\]]*)\]:(\d*)$/.exec(host);
  if (bracketed !== null) return [bracketed[1]!.split('.'), bracketed[2]!];
  const colon = host.indexOf(':');
  if (colon < 0 || host.indexOf(':', colon + 1) >= 0) return [host.split('.'), ''];
  return [host.slice(0, colon).split('.'), host.slice(colon + 1)];
}

/** Go's `filepath.Match` on one part of a host name: `*`, `?` and `[…]` classes. */
function globMatches(pattern: string, text: string): boolean {
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '*') source += '[^/]*';
    else if (c === '?') source += '[^/]';
    else if (c === '[') {
      const end = pattern.indexOf(']', i + 1);
      if (end < 0) return false; // Go: ErrBadPattern, which the keyring reads as no match
      const body = pattern.slice(i + 1, end);
      source += `[${body}]`; // a class reads the same in a RegExp, `^` negating it as in Go
      i = end;
    } else if (c === '\\' && i + 1 < pattern.length) source += literal(pattern[++i]!);
    else source += literal(c);
  }
  return new RegExp(`^${source}$`).test(text);
}

function literal(c: string): string {
  return c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

/**
 * The repository an image is pulled from, without tag or digest, its registry written out as the
 * kubelet's `parsers.ParseImageName` does: `busybox:1.36` is `docker.io/library/busybox`,
 * `index.docker.io/x/y` is `docker.io/x/y`, `127.0.0.1:5000/a/b:1` is itself without `:1`.
 */
export function repositoryOf(image: string): string {
  let name = image;
  const at = name.indexOf('@');
  if (at >= 0) name = name.slice(0, at);
  const lastSlash = name.lastIndexOf('/');
  const colon = name.lastIndexOf(':');
  if (colon > lastSlash) name = name.slice(0, colon);
  const slash = name.indexOf('/');
  const first = slash < 0 ? '' : name.slice(0, slash);
  const hasDomain = slash >= 0 && (first.includes('.') || first.includes(':') || first === 'localhost' || first !== first.toLowerCase());
  if (!hasDomain) return `docker.io/${slash < 0 ? `library/${name}` : name}`;
  if (first === 'index.docker.io') return `docker.io${name.slice(slash)}`;
  return name;
}

/** Whether the repository is Docker Hub's (`isDefaultRegistryMatch`). */
function isDockerHub(repository: string): boolean {
  const slash = repository.indexOf('/');
  if (slash === 0) return false;
  if (slash < 0) return true;
  const first = repository.slice(0, slash);
  return first === 'docker.io' || first === 'index.docker.io' || !/[.:]/.test(first);
}
