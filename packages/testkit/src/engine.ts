import Docker from 'dockerode';
import { enginesEnv } from './engines-env.js';

/** The socket the suites use: `DOCKER_HOST` (unix://…) or `DOCKER_SOCKET` of `engines.env`. */
export function dockerSocketPath(): string {
  const host = process.env['DOCKER_HOST'];
  if (host?.startsWith('unix://') === true) return host.slice('unix://'.length);
  return enginesEnv()['DOCKER_SOCKET']!;
}

/** An independent Docker client for checking what the agent did, without going through our adapter. */
export function independentDocker(): Docker {
  return new Docker({ socketPath: dockerSocketPath() });
}

/**
 * Fails (never skips) with instructions when no engine answers: real-engine suites are not
 * optional, and a missing engine must say how to get one.
 */
export async function assertEngine(): Promise<void> {
  try {
    await independentDocker().ping();
  } catch (error) {
    throw new Error(
      `No Docker engine answers at ${dockerSocketPath()} (${(error as Error).message}). ` +
        'The real-engine tests need one: run the README test command (`npm ci && npm test`), which installs and starts it, ' +
        'or start one yourself (`apt-get install -y docker.io && dockerd &`).',
      { cause: error },
    );
  }
}

/** Removes, by force, every container carrying `label` (a test's own run label). */
export async function removeLabelled(label: string): Promise<number> {
  const docker = independentDocker();
  const found = await docker.listContainers({ all: true, filters: { label: [label] } });
  await Promise.all(
    found.map((c) =>
      docker
        .getContainer(c.Id)
        .remove({ force: true, v: true })
        .catch(() => undefined),
    ),
  );
  return found.length;
}
