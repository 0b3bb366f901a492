import type { ContainerRuntime, Logger } from '@kubelet-ts/core';
import { DockerRuntime } from '@kubelet-ts/runtime-docker';
import { MemoryRuntime } from '@kubelet-ts/runtime-memory';
import type { CliOptions } from './options.js';

/** `auto` takes Docker when an engine answers within a second, else the in-memory runtime, loudly. */
export async function chooseRuntime(options: CliOptions, logger: Logger): Promise<ContainerRuntime> {
  if (options.runtime === 'memory') return new MemoryRuntime();
  const docker = new DockerRuntime({
    ...(options.dockerHost === undefined ? {} : { host: options.dockerHost }),
    volumesRoot: options.volumesRoot,
    podInfraImage: options.podInfraImage,
    hostIp: options.hostIp,
    logger,
  });
  if (options.runtime === 'docker') return docker;
  try {
    await withTimeout(docker.ping(), 1000);
    logger.info({ runtime: 'docker', endpoint: docker.endpoint }, 'using the Docker engine');
    return docker;
  } catch (error) {
    logger.warn(
      { runtime: 'memory', endpoint: docker.endpoint, reason: (error as Error).message },
      'NO CONTAINER ENGINE ANSWERS: running on the IN-MEMORY runtime; containers are simulated and nothing runs on this host (use --runtime docker to insist on an engine)',
    );
    return new MemoryRuntime();
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
