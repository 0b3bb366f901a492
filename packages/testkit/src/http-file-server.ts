import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, posix } from 'node:path';
import { type StartedTestContainer, Wait } from 'testcontainers';
import { LoopbackContainer, removeContainer } from './containers.js';
import { buildTestImages } from './images.js';

/**
 * A real HTTP server of a test's own (busybox `httpd` in the test image, started through
 * testcontainers) serving the files a test puts, on a free loopback port: what a manifest URL
 * (`--manifest-url`) points at. A path not put answers 404.
 */
export class HttpFileServer {
  private constructor(
    private readonly container: StartedTestContainer,
    private readonly root: string,
    /** `http://127.0.0.1:PORT`, with no trailing slash. */
    readonly base: string,
  ) {}

  static async start(): Promise<HttpFileServer> {
    const images = await buildTestImages();
    const root = await mkdtemp(join(tmpdir(), 'kubelet-ts-http-'));
    try {
      const container = await new LoopbackContainer(images.busybox, 'http')
        .withExposedPorts(8080)
        .withBindMounts([{ source: root, target: '/www', mode: 'ro' }])
        .withCommand(['httpd', '-f', '-p', '8080', '-h', '/www'])
        .withWaitStrategy(Wait.forHttp('/', 8080).forStatusCodeMatching(() => true))
        .withStartupTimeout(30_000)
        .start();
      return new HttpFileServer(container, root, `http://127.0.0.1:${container.getMappedPort(8080)}`);
    } catch (error) {
      await rm(root, { recursive: true, force: true });
      throw new Error(`the HTTP server (busybox httpd in ${images.busybox}) did not start: ${(error as Error).message}`, {
        cause: error,
      });
    }
  }

  /** The URL of `path` (absolute, e.g. `/manifests`). */
  url(path: string): string {
    return `${this.base}${path}`;
  }

  /** Serves `body` at `path` from now on; written whole, so that no request reads half of it. */
  async put(path: string, body: string): Promise<string> {
    const file = this.file(path);
    await mkdir(dirname(file), { recursive: true });
    await writeFile(`${file}.part`, body);
    await rename(`${file}.part`, file);
    return this.url(path);
  }

  /** `path` answers 404 from now on. */
  async remove(path: string): Promise<void> {
    await rm(this.file(path), { force: true });
  }

  /** Removes the container and the files it served. */
  async stop(): Promise<void> {
    await removeContainer(this.container);
    await rm(this.root, { recursive: true, force: true });
  }

  private file(path: string): string {
    const normal = posix.normalize(`/${path}`);
    if (normal.endsWith('/') || normal.includes('\0')) throw new Error(`HttpFileServer: not a file path: ${path}`);
    return join(this.root, normal);
  }
}
