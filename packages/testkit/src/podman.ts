import Docker from 'dockerode';
import { enginesEnv } from './engines-env.js';
import { TEST_IMAGES } from './images.js';

/**
 * The private Podman service of the Podman suites, as `scripts/podman.sh` starts it (`npm test`
 * does): its socket is `PODMAN_SOCKET` in `engines.env`, unless `KUBELET_TS_PODMAN_HOST`
 * names another. Its test images carry `TEST_IMAGES`' names, loaded by the script (no registry here).
 */
export function podmanHost(): string {
  const fromEnv = process.env['KUBELET_TS_PODMAN_HOST'];
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
  return `unix://${enginesEnv()['PODMAN_SOCKET']!}`;
}

/** A Docker API client of the Podman service, for checking what the agent did without the adapter. */
export function independentPodman(host = podmanHost()): Docker {
  return new Docker({ socketPath: host.replace(/^unix:(\/\/)?/, '') });
}

/**
 * Fails (never skips) with instructions when the Podman service does not answer, is not Podman, or
 * lacks the test images: the Podman suites are not optional, and a missing service must say how to
 * get one.
 */
export async function assertPodman(host = podmanHost()): Promise<void> {
  const how =
    'The Podman tests need the private service: run the README test command (`npm ci && npm test`), which installs and starts it, ' +
    'or start it yourself with `bash scripts/podman.sh start` (and `bash scripts/podman.sh stop` to remove it).';
  const podman = independentPodman(host);
  let version: Docker.DockerVersion;
  try {
    version = await podman.version();
  } catch (error) {
    throw new Error(`No Podman answers at ${host} (${(error as Error).message}). ${how}`, { cause: error });
  }
  if (!(version.Components ?? []).some((c) => /podman/i.test(c.Name))) {
    throw new Error(`The engine at ${host} is not Podman (${version.Platform?.Name ?? 'unnamed'} ${version.Version}). ${how}`);
  }
  for (const image of Object.values(TEST_IMAGES)) {
    await podman
      .getImage(image)
      .inspect()
      .catch((error: unknown) => {
        throw new Error(`Podman at ${host} lacks the test image ${image}. ${how}`, { cause: error });
      });
  }
}

/** Removes, by force, every container on Podman carrying `label` (a test's own run label). */
export async function removePodmanLabelled(label: string, host = podmanHost()): Promise<number> {
  const podman = independentPodman(host);
  const found = await podman.listContainers({ all: true, filters: { label: [label] } });
  await Promise.all(
    found.map((c) =>
      podman
        .getContainer(c.Id)
        .remove({ force: true, v: true })
        .catch(() => undefined),
    ),
  );
  return found.length;
}
