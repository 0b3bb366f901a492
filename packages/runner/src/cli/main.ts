import { CommanderError } from 'commander';
import type { ContainerRuntime, Logger, ManifestSource } from '@kubelet-ts/core';
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
    runtime: chooseRuntime(options, logger),
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

function chooseRuntime(options: CliOptions, logger: Logger): ContainerRuntime {
  if (options.runtime === 'auto') {
    // The Docker adapter is not part of this build yet, so "the best available" is the fake.
    logger.warn(
      { runtime: 'memory' },
      'NO CONTAINER ENGINE IN USE: running on the IN-MEMORY runtime; containers are simulated and nothing runs on this host',
    );
  }
  return new MemoryRuntime();
}

function buildSources(options: CliOptions, logger: Logger): ManifestSource[] {
  const sources: ManifestSource[] = [];
  if (options.config !== undefined) sources.push(new FileManifestSource({ path: options.config, checkFrequencyMs: options.fileCheckFrequency }));
  if (sources.length === 0) logger.warn({}, 'no manifest source configured (--config): the agent will run nothing');
  return sources;
}
