import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type Docker from 'dockerode';
import { containerStatsOf } from '../src/docker-stats.js';
import { connectDocker } from '../src/docker-connect.js';
import type { DockerApi, DockerContainerHandle } from '../src/docker-api.js';
import { DockerRuntime } from '../src/index.js';
import {
  assertPodman,
  buildTestImages,
  dockerSocketPath,
  independentDocker,
  independentPodman,
  podmanHost,
  removeLabelled,
  removePodmanLabelled,
  TEST_IMAGES,
} from '@kubelet-ts/testkit';

const MIB = 1024 * 1024;
const LABEL = `kubelet-ts-test.kernel-stats=${process.pid}`;
/** Holds 40 MiB: dd's buffer, kept while dd waits on a pipe nobody reads. */
const HOLDER_OF_40_MIB = ['sh', '-c', 'dd if=/dev/zero bs=40M count=1 2>/dev/null | sleep 3600'];
const BUSY_LOOP = ['sh', '-c', 'while :; do :; done'];
/** Containers of the no-API sample, each also asked about as a pod's holder (each has a network namespace of its own). */
const N = 6;

/** A client of `host` that counts the stats and inspect calls made through it. */
function counting(host: string) {
  const calls = { stats: 0, inspect: 0 };
  const client = connectDocker(host);
  const docker: DockerApi = Object.assign(Object.create(client) as DockerApi, {
    getContainer: (id: string): DockerContainerHandle => {
      const handle = client.getContainer(id);
      return Object.assign(Object.create(handle) as DockerContainerHandle, {
        stats: (options: Parameters<DockerContainerHandle['stats']>[0]) => (calls.stats++, handle.stats(options)),
        inspect: () => (calls.inspect++, handle.inspect()),
      });
    },
  });
  return { docker, calls };
}

const near = (actual: number, expected: number) => expect(Math.abs(actual - expected) / expected).toBeLessThan(0.05);

describe.each([
  ['docker', async () => (await buildTestImages(), `unix://${dockerSocketPath()}`), () => independentDocker(), removeLabelled],
  ['podman', async () => (await assertPodman(), podmanHost()), () => independentPodman(), removePodmanLabelled],
] as const)('figures from the kernel on %s', (_engine, connect, client, removeAll) => {
  let host: string;
  let engine: Docker;
  const run = async (cmd: readonly string[], networkMode?: string): Promise<string> => {
    const c = await engine.createContainer({
      Image: TEST_IMAGES.busybox,
      Cmd: [...cmd],
      Labels: { [LABEL.split('=')[0]!]: String(process.pid) },
      ...(networkMode === undefined ? {} : { HostConfig: { NetworkMode: networkMode } }),
    });
    await c.start();
    return c.id;
  };

  beforeAll(async () => {
    host = await connect();
    engine = client();
  }, 60_000);

  afterAll(async () => {
    await removeAll(LABEL);
  }, 60_000);

  it("agrees with the engine's own stats within 5 %: the memory a container holds, and a busy loop's CPU rate", async () => {
    const [held, busy] = await Promise.all([run(HOLDER_OF_40_MIB), run(BUSY_LOOP)]);
    const { docker, calls } = counting(host);
    const runtime = new DockerRuntime({ docker, host });
    const api = async (id: string) => {
      const figures = await engine.getContainer(id).stats({ stream: false, 'one-shot': true } as { stream: false });
      return containerStatsOf(Buffer.isBuffer(figures) ? {} : (figures as never), Date.now());
    };
    // dd needs a moment to fill its buffer.
    const deadline = Date.now() + 15_000;
    while ((await runtime.stats(held)).memory.usageBytes < 40 * MIB && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 200));
    const [fromApi, fromKernel] = [await api(held), await runtime.stats(held)];
    expect(fromKernel.memory.workingSetBytes).toBeGreaterThanOrEqual(40 * MIB);
    near(fromKernel.memory.usageBytes, fromApi.memory.usageBytes);
    near(fromKernel.memory.workingSetBytes, fromApi.memory.workingSetBytes);

    // Each rate over the same few seconds: the kernel read right after the engine's.
    const [api0, kernel0] = [await api(busy), await runtime.stats(busy)];
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    const [api1, kernel1] = [await api(busy), await runtime.stats(busy)];
    const rate = (a: typeof api0, b: typeof api0) => (b.cpu.usageNanoseconds - a.cpu.usageNanoseconds) / (b.timestamp - a.timestamp);
    expect(rate(kernel0, kernel1)).toBeGreaterThan(0.2 * 1e6);
    near(rate(kernel0, kernel1), rate(api0, api1));
    expect(calls.stats).toBe(0);
  }, 60_000);

  it('samples N containers and their holders with no stats call, and inspects each once across samples', async () => {
    const ids = await Promise.all(Array.from({ length: N }, () => run(['sleep', '3600'])));
    const onHost = await run(['sleep', '3600'], 'host');
    const { docker, calls } = counting(host);
    const runtime = new DockerRuntime({ docker, host });
    const request = { containers: ids, sandboxes: [...ids, onHost] };
    for (let i = 0; i < 3; i++) {
      const sample = await runtime.sample(request);
      expect([...sample.containers.keys()]).toEqual(ids);
      expect([...sample.sandboxes.keys()]).toEqual([...ids, onHost]);
      for (const id of ids) {
        expect(sample.containers.get(id)!.memory.usageBytes).toBeGreaterThan(0);
        expect(sample.sandboxes.get(id)!.network?.name).toBe('eth0');
      }
      expect(sample.sandboxes.get(onHost)!.network).toBeUndefined();
    }
    expect(calls).toEqual({ stats: 0, inspect: N + 1 });
  }, 60_000);
});
