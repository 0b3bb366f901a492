import { connect } from 'node:net';
import { enginesEnv } from './engines-env.js';

/**
 * The private containerd (CRI) of the runtime-cri suites, as `scripts/containerd.sh` starts it
 * (`npm test` does): its socket is `CRI_SOCKET` in `engines.env`, unless
 * `KUBELET_TS_CRI_ENDPOINT` names another. Its test images carry `TEST_IMAGES`' names, loaded by
 * the script (no registry here).
 */
export function criEndpoint(): string {
  const fromEnv = process.env['KUBELET_TS_CRI_ENDPOINT'];
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
  return `unix://${enginesEnv()['CRI_SOCKET']!}`;
}

/** The cgroup parent the suites run sandboxes under, which the script's teardown cleans. */
export function criCgroupParent(): string {
  return enginesEnv()['CRI_CGROUP_PARENT']!;
}

/**
 * Fails (never skips) with instructions when nothing listens at the endpoint's socket: the CRI
 * suites are not optional, and a missing containerd must say how to get one.
 */
export async function assertContainerd(endpoint = criEndpoint()): Promise<void> {
  const socket = endpoint.replace(/^unix:(\/\/)?/, '');
  await new Promise<void>((resolve, reject) => {
    const probe = connect(socket);
    probe.once('connect', () => {
      probe.destroy();
      resolve();
    });
    probe.once('error', (error) => {
      probe.destroy();
      reject(
        new Error(
          `No containerd answers at ${endpoint} (${error.message}). The CRI tests need the private one: run the README test command ` +
            '(`npm ci && npm test`), which installs and starts it, or start it yourself with `bash scripts/containerd.sh start` ' +
            '(and `bash scripts/containerd.sh stop` to remove it).',
          { cause: error },
        ),
      );
    });
  });
}
