import { Tokens, hostAccessOf, nodeLabelsOf, type KubeletEvent, type Logger } from '@kubelet-ts/core';
import { resolveKubelet } from '@kubelet-ts/runner';
import type { CliOptions } from './options.js';
import { hostFilesOf } from './host-flags.js';
import { wire } from './wiring.js';
import { probeNetwork } from './probe-network.js';

/** Events that say a container will not run without a change of its manifest or of the host. */
const FAILED = new Set<KubeletEvent['type']>(['ContainerFailed', 'ImagePullFailed', 'BackOff', 'ContainerExited']);
/** Events that say a source could not give (all of) what it was asked for: the run cannot be whole. */
const SOURCE_PROBLEMS = new Set<KubeletEvent['type']>(['ManifestRejected', 'SourceError']);

/**
 * `--runonce` (2014): starts what the file and URL sources ask for, waits until every container runs
 * or has failed (at most `--runonce-timeout`), prints one line per container and one per source
 * problem (a rejected manifest, an unreachable URL), and exits 0 when every container runs and no
 * source had a problem, 1 otherwise (issue 27: a run whose only manifest was rejected said 0). No
 * server, no watching afterwards; the containers are left running. `--etcd-servers` is not read,
 * as in 2014, and a warning says so.
 */
export async function runOnce(options: CliOptions, hostname: string, logger: Logger): Promise<number> {
  if (options.etcdServers !== undefined)
    logger.warn(
      { etcdServers: options.etcdServers },
      '--runonce reads --config and --manifest-url only, as the 2014 agent did: --etcd-servers is not read',
    );
  const wiring = await wire(options, hostname, logger, 'runonce');
  const failures = new Map<string, string>();
  const problems = new Map<string, string>();
  wiring.container.register(Tokens.EventSink, {
    useValue: {
      emit: (e: KubeletEvent) => {
        if (e.podId !== undefined && e.container !== undefined && FAILED.has(e.type)) failures.set(`${e.podId}/${e.container}`, e.message);
        if (SOURCE_PROBLEMS.has(e.type))
          problems.set(`${e.source ?? 'source'} ${e.type}${e.podId === undefined ? '' : ` ${e.podId}`}`, e.message);
      },
    },
  });
  const hostFiles = await hostFilesOf(options, logger);
  const kubelet = resolveKubelet(wiring.container, {
    ...hostAccessOf({ ...options, nodeLabels: nodeLabelsOf(options.nodeLabels, hostname) }),
    ...hostFiles,
    hostname,
    syncFrequencyMs: options.syncFrequency,
    // Nothing serves the figures: nothing is sampled.
    housekeeping: { intervalMs: 0 },
    volumeFilesDir: options.volumeFilesDir,
    probes: { network: probeNetwork },
  });
  const deadline = Date.now() + options.runonceTimeout;
  let lines: Array<{ name: string; running: boolean; detail: string }> = [];
  try {
    await kubelet.start();
    for (;;) {
      await kubelet.sync();
      lines = (await kubelet.pods()).flatMap((pod) =>
        pod.containers.map((c) => {
          const name = `${pod.id}/${c.name}`;
          const running = c.state === 'running';
          return { name, running, detail: running ? `running ${c.id ?? ''}`.trim() : `failed: ${failures.get(name) ?? c.state}` };
        }),
      );
      const settled = lines.every((l) => l.running || failures.has(l.name));
      if (settled || Date.now() >= deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  } finally {
    await kubelet.close();
    await wiring.close();
  }
  for (const l of lines) process.stdout.write(`${l.name} ${l.detail}\n`);
  for (const [what, message] of problems) process.stdout.write(`${what}: ${message}\n`);
  return lines.every((l) => l.running) && problems.size === 0 ? 0 : 1;
}
