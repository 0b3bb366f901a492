import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assertContainerd, criCgroupParent, criEndpoint, TEST_IMAGES } from '@kubelet-ts/testkit';
import { CriRuntime, type CriRuntimeOptions } from '../src/index.js';

/** A runtime on the suites' private containerd, with volumes and logs in temporary folders of its own. */
export interface CriFixture {
  readonly runtime: CriRuntime;
  readonly volumesRoot: string;
  readonly logsRoot: string;
  /** The links to containers' log files (the kubelet's `/var/log/containers`). */
  readonly linksDir: string;
  /** Another runtime on the same containerd and folders (an agent after a restart). */
  another(options?: Partial<CriRuntimeOptions>): CriRuntime;
  /** Closes every runtime it made and removes the folders. */
  close(): Promise<void>;
}

export async function criFixture(): Promise<CriFixture> {
  const endpoint = criEndpoint();
  await assertContainerd(endpoint);
  const volumesRoot = await mkdtemp(join(tmpdir(), 'kubelet-ts-cri-volumes-'));
  const logsRoot = await mkdtemp(join(tmpdir(), 'kubelet-ts-cri-logs-'));
  const linksDir = await mkdtemp(join(tmpdir(), 'kubelet-ts-cri-links-'));
  const made: CriRuntime[] = [];
  const make = (options: Partial<CriRuntimeOptions> = {}) => {
    const runtime = new CriRuntime({
      endpoint,
      hostIp: '127.0.0.1',
      volumesRoot,
      logsRoot,
      containerLogLinksDir: linksDir,
      cgroupParent: criCgroupParent(),
      ...options,
    });
    made.push(runtime);
    return runtime;
  };
  const runtime = make();
  for (const image of [TEST_IMAGES.busybox, TEST_IMAGES.pause]) {
    if (!(await runtime.images.hasImage(image))) {
      throw new Error(
        `containerd at ${endpoint} lacks the test image ${image}: \`bash scripts/containerd.sh start\` imports it (npm test does)`,
      );
    }
  }
  return {
    runtime,
    volumesRoot,
    logsRoot,
    linksDir,
    another: make,
    async close() {
      for (const r of made) r.close();
      await rm(volumesRoot, { recursive: true, force: true });
      await rm(logsRoot, { recursive: true, force: true });
      await rm(linksDir, { recursive: true, force: true });
    },
  };
}

/** A TCP port free on 127.0.0.1 right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** busybox `httpd` serving `reply` on `port`. */
export function httpServer(port: number, reply: string): string[] {
  return ['sh', '-c', `mkdir -p /www && echo ${reply} > /www/index.html && exec httpd -f -p ${port} -h /www`];
}

/** The first answer that contains something, retried for up to 10 s (a server needs a moment to listen). */
export async function eventually(read: () => Promise<string>): Promise<string> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      const text = await read();
      if (text.trim() !== '' || Date.now() > deadline) return text;
    } catch (error) {
      if (Date.now() > deadline) throw error;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
