import { Tokens, type KubeletEvent, type Logger } from '@kubelet-ts/core';
import { resolveKubelet } from '@kubelet-ts/runner';
import type { CliOptions } from './options.js';
import { wire } from './wiring.js';

/** Events that say a container will not run without a change of its manifest or of the host. */
const FAILED = new Set<KubeletEvent['type']>(['ContainerFailed', 'ImagePullFailed', 'BackOff', 'ContainerExited']);

/**
 * `--runonce` (2014): starts what the file and URL sources ask for, waits until every container runs
 * or has failed (at most `--runonce-timeout`), prints one line per container and exits 0 when all
 * run, 1 otherwise. No server, no watching afterwards; the containers are left running.
 */
export async function runOnce(options: CliOptions, hostname: string, logger: Logger): Promise<number> {
  const wiring = await wire(options, hostname, logger, 'runonce');
  const failures = new Map<string, string>();
  wiring.container.register(Tokens.EventSink, {
    useValue: {
      emit: (e: KubeletEvent) => {
        if (e.podId !== undefined && e.container !== undefined && FAILED.has(e.type)) failures.set(`${e.podId}/${e.container}`, e.message);
      },
    },
  });
  const kubelet = resolveKubelet(wiring.container, { allowHostMounts: options.allowHostMounts, hostname, syncFrequencyMs: options.syncFrequency });
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
  return lines.every((l) => l.running) ? 0 : 1;
}
