import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { promisify } from 'node:util';
import { type StartedTestContainer, Wait } from 'testcontainers';
import { containerLogs, LoopbackContainer, removeContainer } from './containers.js';
import { criEndpoint } from './containerd.js';
import { independentDocker } from './engine.js';
import { independentPodman } from './podman.js';
import { freePort } from './etcd-server.js';
import { localImage } from './local-images.js';

const run = promisify(execFile);

/** The credentials of the one user of a `RegistryServer`. */
export interface RegistryServerOptions {
  /** The one user who may push and pull. Default `kubelet-ts`. */
  readonly username?: string;
  /** Its password. Default: random, per registry. */
  readonly password?: string;
}

const BINARY = '/usr/bin/docker-registry';
/** Debian 12's own Python: its `crypt` makes bcrypt hashes through libcrypt, the one kind the registry's htpasswd reads. */
const PYTHON = '/usr/bin/python3';

/**
 * A real Docker registry (Debian's `docker-registry`, distribution 2.8, in an image of its own made
 * from the installed binary) that asks for a user name and password (`auth: htpasswd`), started
 * through testcontainers. It shares the host's network, listening on a free loopback port, over
 * plain HTTP: every engine here pulls from a loopback registry so without a trusted certificate
 * (Docker and containerd take `127.0.0.0/8` as insecure by themselves; the private Podman's
 * registries.conf, written by scripts/podman.sh, says so of `127.0.0.1`). Its storage is a tmpfs,
 * gone with the container.
 */
export class RegistryServer {
  private constructor(
    private readonly container: StartedTestContainer,
    /** `127.0.0.1:PORT`: what an image's name starts with (`127.0.0.1:PORT/team/app:1`). */
    readonly host: string,
    readonly username: string,
    readonly password: string,
  ) {}

  static async start(options: RegistryServerOptions = {}): Promise<RegistryServer> {
    if (!existsSync(BINARY)) {
      throw new Error(`no Docker registry at ${BINARY}: apt-get install -y docker-registry (npm test installs it, scripts/services.sh)`);
    }
    const username = options.username ?? 'kubelet-ts';
    const password = options.password ?? randomBytes(12).toString('base64url');
    const { size, mtimeMs } = statSync(BINARY);
    const version = createHash('sha256').update(`${size}:${mtimeMs}`).digest('hex').slice(0, 12);
    const image = await localImage({ tag: `kubelet-ts-test/registry:${version}`, binaries: [BINARY] });
    const port = await freePort();
    const config = [
      'version: 0.1',
      'log: { level: info, accesslog: { disabled: true } }',
      'storage: { filesystem: { rootdirectory: /var/lib/registry }, delete: { enabled: true } }',
      `http: { addr: "127.0.0.1:${port}" }`,
      'auth: { htpasswd: { realm: kubelet-ts, path: /etc/docker/registry/htpasswd } }',
    ].join('\n');
    const container = await new LoopbackContainer(image, 'registry')
      .withNetworkMode('host')
      .withCopyContentToContainer([
        { content: config, target: '/etc/docker/registry/config.yml' },
        { content: `${username}:${await bcrypt(password)}\n`, target: '/etc/docker/registry/htpasswd' },
      ])
      .withTmpFs({ '/var/lib/registry': 'rw' })
      .withCommand([BINARY, 'serve', '/etc/docker/registry/config.yml'])
      .withWaitStrategy(Wait.forLogMessage(/listening on 127\.0\.0\.1:/))
      .withStartupTimeout(30_000)
      .start();
    return new RegistryServer(container, `127.0.0.1:${port}`, username, password);
  }

  /**
   * Pushes `source`, an image the Docker engine has, as `name` (`team/app:1`) of this registry,
   * with this registry's credentials; resolves to the full name to pull. The engine keeps no tag of
   * it (the tag made for the push is removed), so a pull of it afterwards is a real one.
   */
  async push(source: string, name: string): Promise<string> {
    const docker = independentDocker();
    const full = `${this.host}/${name}`;
    const colon = full.lastIndexOf(':');
    const [repo, tag] = colon > full.lastIndexOf('/') ? [full.slice(0, colon), full.slice(colon + 1)] : [full, 'latest'];
    await docker.getImage(source).tag({ repo, tag });
    try {
      const stream = await docker
        .getImage(`${repo}:${tag}`)
        .push({ authconfig: { username: this.username, password: this.password, serveraddress: this.host } });
      await new Promise<void>((resolve, reject) =>
        docker.modem.followProgress(stream, (error: Error | null, output: Array<{ error?: string }>) => {
          const failed = output.find((e) => typeof e.error === 'string');
          if (error !== null || failed !== undefined) reject(new Error(`push ${full}: ${failed?.error ?? error?.message}`));
          else resolve();
        }),
      );
    } finally {
      await docker.getImage(`${repo}:${tag}`).remove({ noprune: true });
    }
    return `${repo}:${tag}`;
  }

  /**
   * A Secret's `.dockerconfigjson` for this registry (`kubectl create secret docker-registry`
   * writes the same): these credentials, or the ones given (a wrong password, say).
   */
  dockerConfigJson(username = this.username, password = this.password): string {
    const auth = Buffer.from(`${username}:${password}`).toString('base64');
    return JSON.stringify({ auths: { [this.host]: { username, password, auth } } });
  }

  /** What the registry printed so far. */
  logs(): Promise<string> {
    return containerLogs(this.container);
  }

  async stop(): Promise<void> {
    await removeContainer(this.container);
  }
}

/**
 * Removes what a pull of `image` (a name of a RegistryServer) added to an engine: its names only,
 * so an image the engine held before under another name (the test image it was pushed from, whose
 * content it shares) stays as it was. Nothing when the engine has none of them.
 */
export async function removePulledImage(engine: 'docker' | 'podman' | 'containerd', image: string): Promise<void> {
  if (engine !== 'containerd') {
    const client = engine === 'docker' ? independentDocker() : independentPodman();
    await client
      .getImage(image)
      .remove({ noprune: true })
      .catch((error: { statusCode?: number }) => {
        if (error.statusCode !== 404) throw error;
      });
    return;
  }
  // containerd names a pulled image by its tag and its digest (`repo@sha256:…`); its id
  // (`sha256:…`) is the test image's too, and stays.
  const ctr = ['--address', criEndpoint().replace(/^unix:\/\//, ''), '--namespace', 'k8s.io'];
  const { stdout } = await run('ctr', [...ctr, 'images', 'list', '--quiet']);
  const repository = image.replace(/:[^:/]*$/, '');
  const names = stdout.split('\n').filter((name) => name === image || name.startsWith(`${repository}@`));
  if (names.length > 0) await run('ctr', [...ctr, 'images', 'remove', ...names]);
}

/** A bcrypt hash of `password` (`$2b$`), the registry's one kind, from Debian's Python; the password goes on its stdin. */
async function bcrypt(password: string): Promise<string> {
  if (!existsSync(PYTHON)) throw new Error(`no ${PYTHON}: apt-get install -y python3 (the registry's htpasswd is made with its crypt)`);
  const child = run(PYTHON, [
    '-W',
    'ignore',
    '-c',
    'import crypt, sys; print(crypt.crypt(sys.stdin.read(), crypt.mksalt(crypt.METHOD_BLOWFISH)))',
  ]);
  child.child.stdin?.end(password);
  const { stdout } = await child;
  const hash = stdout.trim();
  if (!hash.startsWith('$2')) throw new Error(`${PYTHON}'s crypt made no bcrypt hash (got ${hash.slice(0, 4)}…)`);
  return hash;
}
