import { copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GenericContainer } from 'testcontainers';
import { assertEngine } from './engine.js';

/** Images the real-engine suites use; built locally because these machines reach no registry. */
export interface TestImages {
  /** busybox on `scratch`: `sh`, `sleep`, `httpd`, `wget`, `nc` … with `PATH=/bin`. */
  readonly busybox: string;
  /** The pod infrastructure image: sleeps forever and stops on SIGKILL, like `pause`. */
  readonly pause: string;
}

export const TEST_IMAGES: TestImages = {
  busybox: 'kubelet-ts-test/busybox:1',
  pause: 'kubelet-ts-test/pause:1',
};

const BUSYBOX_BINARY = process.env['KUBELET_TS_BUSYBOX'] ?? '/bin/busybox';

let built: Promise<TestImages> | undefined;

/**
 * Builds the test images through testcontainers (`FROM scratch` + Debian's busybox-static), once
 * per process. A user with a registry can use `busybox:1.36` and `registry.k8s.io/pause` instead:
 * nothing in the adapter depends on these names.
 */
export function buildTestImages(): Promise<TestImages> {
  built ??= build();
  return built;
}

async function build(): Promise<TestImages> {
  // Ryuk (testcontainers' reaper) is an image from a registry these machines cannot reach; the
  // suites remove what they create themselves.
  process.env['TESTCONTAINERS_RYUK_DISABLED'] ??= 'true';
  await assertEngine();
  const context = await mkdtemp(join(tmpdir(), 'kubelet-ts-image-'));
  try {
    try {
      await copyFile(BUSYBOX_BINARY, join(context, 'busybox'));
    } catch (error) {
      throw new Error(`test images need a static busybox at ${BUSYBOX_BINARY}: apt-get install -y busybox-static (npm test does this)`, { cause: error });
    }
    await writeFile(
      join(context, 'Dockerfile'),
      ['FROM scratch', 'COPY busybox /bin/busybox', 'RUN ["/bin/busybox", "--install", "-s", "/bin"]', 'ENV PATH=/bin', 'CMD ["sh"]', ''].join('\n'),
    );
    await GenericContainer.fromDockerfile(context).build(TEST_IMAGES.busybox, { deleteOnExit: false });
    await writeFile(
      join(context, 'Dockerfile'),
      [`FROM ${TEST_IMAGES.busybox}`, 'STOPSIGNAL SIGKILL', 'CMD ["sleep", "2147483647"]', ''].join('\n'),
    );
    await GenericContainer.fromDockerfile(context).build(TEST_IMAGES.pause, { deleteOnExit: false });
    return TEST_IMAGES;
  } finally {
    await rm(context, { recursive: true, force: true });
  }
}
