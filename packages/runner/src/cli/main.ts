import { CommanderError } from 'commander';
import type { ContainerRuntime, Logger, ManifestSource } from '@kubelet-ts/core';
import { DockerRuntime } from '@kubelet-ts/runtime-docker';
import { MemoryRuntime } from '@kubelet-ts/runtime-memory';
import { FileManifestSource } from '@kubelet-ts/source-file';
import { Kubelet } from '../kubelet.js';
import { createLogger } from '../logging.js';
import { buildProgram, normaliseFlagSpelling, type CliOptions } from './options.js';

/** Runs the agent until SIGINT or SIGTERM; returns the process exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  const program = buildProgram();
  try {
    program.parse(normaliseFlagSpelling(argv), { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode;
    throw error;
  }
  const options = program.opts<CliOptions>();
  const logger = createLogger({ level: options.logLevel, ...(options.logFormat === undefined ? {} : { pretty: options.logFormat === 'pretty' }) });

  const kubelet = new Kubelet({
    runtime: await chooseRuntime(options, logger),
    sources: buildSources(options, logger),
    logger,
    syncFrequencyMs: options.syncFrequency,
    ...(options.hostnameOverride === undefined ? {} : { hostname: options.hostnameOverride }),
  });
  try {
    await kubelet.start();
  } catch (error) {
    logger.error({ err: error }, 'kubelet failed to start');
    await kubelet.close();
    return 1;
  }
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
  });
  process.removeAllListeners('SIGINT');
  process.removeAllListeners('SIGTERM');
  logger.info({ signal }, 'shutting down; containers are left running');
  await kubelet.close();
  return 0;
}

/** `auto` takes Docker when an engine answers within a second, else the in-memory runtime, loudly. */
async function chooseRuntime(options: CliOptions, logger: Logger): Promise<ContainerRuntime> {
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

function buildSources(options: CliOptions, logger: Logger): ManifestSource[] {
  const sources: ManifestSource[] = [];
  if (options.config !== undefined) sources.push(new FileManifestSource({ path: options.config, checkFrequencyMs: options.fileCheckFrequency }));
  if (sources.length === 0) logger.warn({}, 'no manifest source configured (--config): the agent will run nothing');
  return sources;
}
