import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { assertEngine, independentDocker } from './engine.js';
import { enginesEnv } from './engines-env.js';

/** Images the real-engine suites use; built locally because these machines reach no registry. */
export interface TestImages {
  /** busybox on `scratch`: `sh`, `sleep`, `httpd`, `wget`, `nc` … with `PATH=/bin`. */
  readonly busybox: string;
  /** The pod infrastructure image: sleeps forever and stops on SIGKILL, like `pause`. */
  readonly pause: string;
  /** etcd serving clients on port 2379 of every address: a gRPC server with the standard health service, for gRPC probes. No shell. */
  readonly etcd: string;
}

const env = enginesEnv();

/** Their names, from this package's `scripts/engines.env`, where the scripts that load them into the engines read them too. */
export const TEST_IMAGES: TestImages = {
  busybox: env['TEST_BUSYBOX_IMAGE']!,
  pause: env['TEST_PAUSE_IMAGE']!,
  etcd: env['TEST_ETCD_IMAGE']!,
};

/** The one builder of the test images' archive, which the engine scripts load into containerd and Podman. */
const BUILDER = fileURLToPath(new URL('../scripts/test-images.sh', import.meta.url));

let built: Promise<TestImages> | undefined;

/**
 * Builds the test images' archive (`scripts/test-images.sh` of this package: Debian's busybox-static on
 * nothing, and its etcd) and loads it into the Docker engine, once per process, as `docker load` would. A user
 * with a registry can use `busybox:1.36` and `registry.k8s.io/pause` instead: nothing in the
 * adapter depends on these names.
 */
export function buildTestImages(): Promise<TestImages> {
  built ??= build();
  return built;
}

async function build(): Promise<TestImages> {
  await assertEngine();
  const dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-images-'));
  try {
    const archive = join(dir, 'test-images.tar');
    try {
      await promisify(execFile)('bash', [BUILDER, archive]);
    } catch (error) {
      throw new Error(`${BUILDER} failed: ${String((error as { stderr?: string }).stderr ?? (error as Error).message).trim()}`, {
        cause: error,
      });
    }
    const docker = independentDocker();
    const progress = await docker.loadImage(archive);
    // The engine reports a bad archive in the stream, not in the status of the request.
    await new Promise<void>((resolve, reject) =>
      docker.modem.followProgress(progress, (error: Error | null, output: Array<{ error?: string }>) => {
        const failed = error?.message ?? output.find((line) => line.error !== undefined)?.error;
        if (failed === undefined) resolve();
        else reject(new Error(`the Docker engine did not load the test images: ${failed}`));
      }),
    );
    return TEST_IMAGES;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
