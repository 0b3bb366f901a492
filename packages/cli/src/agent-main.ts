import { CommanderError } from 'commander';
import { hostAccessOf, nodeLabelsOf, nodeNameProblem } from '@kubelet-ts/core';
import { resolveKubelet } from '@kubelet-ts/runner';
import { agentApiHandler, hostLogsHandler } from '@kubelet-ts/source-server';
import { createLogger, routeProcessWarnings } from './logging.js';
import { defaultHostname } from './legacy-flags.js';
import { buildProgram, normaliseFlagSpelling, optionsOf } from './options.js';
import { runOnce } from './runonce.js';
import { wire } from './wiring.js';
import { sourceCheckpoints, sourceIdentities } from './checkpoints.js';
import { hostFilesOf } from './host-flags.js';
import { nodeAllocatable } from './node-allocatable.js';
import { probeNetwork } from './probe-network.js';

/** Below this, `--auth-token` is said to be guessable (a random 32-character token is 128 bits or more). */
const MIN_TOKEN_LENGTH = 32;

/** Runs the agent (or `--runonce`) until SIGINT or SIGTERM; returns the process exit code. */
export async function agentMain(argv: readonly string[]): Promise<number> {
  const program = buildProgram();
  try {
    program.parse(normaliseFlagSpelling(argv), { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode;
    throw error;
  }
  const options = optionsOf(program);
  const logger = createLogger({
    level: options.logLevel,
    ...(options.logFormat === undefined ? {} : { pretty: options.logFormat === 'pretty' }),
  });
  routeProcessWarnings(logger);
  // The etcd key takes the hostname as given; labels and names its normalized form.
  const givenHostname = options.hostnameOverride ?? defaultHostname();
  const hostname = givenHostname.toLowerCase();
  if (options.allowPrivileged)
    logger.warn(
      { flag: '--allow-privileged' },
      '--allow-privileged: a pod may run containers with securityContext.privileged, which have every device and capability of this host',
    );
  if (options.authToken !== undefined && options.authToken.length < MIN_TOKEN_LENGTH)
    logger.warn(
      { flag: '--auth-token', length: options.authToken.length },
      `--auth-token has ${options.authToken.length} characters: a token that short can be guessed, and the server's throttle lets a valid token in even while it holds back guessers beside it; use at least ${MIN_TOKEN_LENGTH} (openssl rand -hex 32)`,
    );
  const problem = nodeNameProblem(hostname);
  if (problem !== undefined) {
    logger.error({}, `invalid configuration: ${problem}`);
    return 1;
  }
  if (options.runonce) return runOnce(options, hostname, logger);
  let wiring: Awaited<ReturnType<typeof wire>>;
  let checkpoints: Awaited<ReturnType<typeof sourceCheckpoints>>;
  try {
    checkpoints = await sourceCheckpoints(options.rootDir, logger, {
      node: hostname,
      identities: sourceIdentities(options, givenHostname),
    });
    wiring = await wire(options, hostname, logger, 'agent', givenHostname);
  } catch (error) {
    logger.error({ err: error }, `invalid configuration: ${(error as Error).message}`);
    return 1;
  }
  const hostFiles = await hostFilesOf(options, logger);
  const kubelet = resolveKubelet(wiring.container, {
    ...hostFiles,
    ...hostAccessOf({ ...options, nodeLabels: nodeLabelsOf(options.nodeLabels, hostname) }),
    ...(checkpoints === undefined ? {} : { checkpoints }),
    syncFrequencyMs: options.syncFrequency,
    // The Summary's node.fs is the file system the pods' volumes are on; its volume[] walks them.
    housekeeping: {
      intervalMs: options.housekeepingInterval,
      unreadIntervalMs: options.housekeepingUnreadInterval,
      fsPath: options.volumesRoot,
      ...(options.volumeStatsAggPeriod === 0
        ? {}
        : { volumes: { volumesRoot: options.volumesRoot, volumeFilesDir: options.volumeFilesDir, everyMs: options.volumeStatsAggPeriod } }),
    },
    volumeFilesDir: options.volumeFilesDir,
    allocatable: nodeAllocatable(options),
    eventLog: { maxEvents: options.eventLogSize, maxAgeMs: options.eventTtl },
    ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
    hostname,
    // Probes dial published ports where they are published; all interfaces includes loopback.
    probes: { host: options.hostIp === '0.0.0.0' ? '127.0.0.1' : options.hostIp, network: probeNetwork },
  });
  // The agent's read API on the server's port, beside the manifest routes (the 2014 URLs).
  wiring.server?.mount(agentApiHandler(kubelet));
  // …and the 2014 view of the host's log directory.
  wiring.server?.mount(hostLogsHandler({ directory: options.hostLogDir }));
  // Listening before the agent starts: a signal while the sources start still shuts down cleanly.
  const signalled = new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
  });
  try {
    await kubelet.start();
    // A node of a cluster: its Node, its Lease and its pods' status, once the agent runs.
    await wiring.cluster?.start(kubelet);
  } catch (error) {
    logger.error({ err: error }, 'kubelet failed to start');
    process.removeAllListeners('SIGINT');
    process.removeAllListeners('SIGTERM');
    await kubelet.close();
    await wiring.close();
    return 1;
  }
  const signal = await signalled;
  process.removeAllListeners('SIGINT');
  process.removeAllListeners('SIGTERM');
  logger.info({ signal }, 'shutting down; containers are left running');
  await kubelet.close();
  await wiring.close();
  return 0;
}
