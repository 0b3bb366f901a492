import {
  KubeletError,
  Labels,
  buildContainerName,
  sandboxHash,
  type ContainerRuntime,
  type ContainerSpec,
  type ErrorCode,
} from '@kubelet-ts/core';
import { eventsContract, type EventsCapability } from './events-contract.js';
import { logsContract, type LogsCapability } from './logs-contract.js';
import { podContract, type PodNetworkCapability } from './pod-contract.js';
import { pullSecretsContract, type PullSecretsCapability } from './pull-secrets-contract.js';
import { securityContract } from './security-contract.js';
import { statsContract, type StatsCapability } from './stats-contract.js';
import { streamingContract, type StreamingCapability } from './streaming-contract.js';
import { resolveTestApi, type TestApiOption } from './test-api.js';
import { v1Contract } from './v1-contract.js';

/** What `runtimeContract` takes: the images and commands the suite runs, and what the runtime declares it can do (events, logs, streams, stats, …). */
export interface RuntimeContractOptions extends TestApiOption {
  /** An image the runtime has (or can pull) whose `command` keeps running until stopped. */
  readonly image: string;
  /** A command that runs until it is signalled, e.g. `['sleep', '3600']`. */
  readonly command: readonly string[];
  /** False for a runtime that does not run real processes (exit codes and output are simulated). */
  readonly realExec?: boolean;
  /** An image that exists nowhere. Default `kubelet-ts.invalid/missing:none`. */
  readonly missingImage?: string;
  /**
   * What the runtime can show of a pod's network, checked for real (capabilities not declared are
   * left out; the pod tests then check the bookkeeping only).
   */
  readonly podNetwork?: PodNetworkCapability;
  /** Declared by runtimes that stream container events; without it the event checks are left out (and the runtime must declare no events). */
  readonly events?: EventsCapability;
  /** Declared by runtimes that read what containers print; without it the log checks are left out (and the runtime must declare no logs). */
  readonly logs?: LogsCapability;
  /** Declared by runtimes that exec, attach and port-forward into containers; without it those checks are left out (and the runtime must declare no streaming). */
  readonly streaming?: StreamingCapability;
  /** Declared by runtimes that report what containers and pods use; without it those checks are left out (and the runtime must declare no stats). */
  readonly stats?: StatsCapability;
  /** Declared by runtimes whose image service pulls with credentials; without it those checks are left out. */
  readonly pullSecrets?: PullSecretsCapability;
  /** True for a runtime whose engine keeps no `stdinOnce` (Podman's compatible API drops it): it must refuse the field. */
  readonly refusesStdinOnce?: boolean;
}

/**
 * The `ContainerRuntime` contract as one suite. An adapter's contract test is:
 *
 * ```ts
 * runtimeContract('docker', () => new DockerRuntime(...), { image, command });
 * ```
 *
 * Under jest as it is; under vitest with `testApi` (or `globals: true`).
 */
export function runtimeContract(
  name: string,
  makeRuntime: () => ContainerRuntime | Promise<ContainerRuntime>,
  options: RuntimeContractOptions,
): void {
  const testApi = resolveTestApi(options.testApi, `runtimeContract('${name}')`);
  const { afterAll, afterEach, beforeAll, describe, expect, it } = testApi;
  describe(`ContainerRuntime contract: ${name}`, () => {
    let runtime: ContainerRuntime;
    /** The containers of these tests live in one sandbox (a CRI runtime has no other kind). */
    let sandboxId: string;
    const created: string[] = [];
    const missingImage = options.missingImage ?? 'kubelet-ts.invalid/missing:none';

    beforeAll(async () => {
      runtime = await makeRuntime();
      const podId = `contract-${process.pid}`;
      const sandbox = await runtime.runSandbox({
        name: buildContainerName(podId, 'POD'),
        podId,
        hostname: podId,
        ports: [],
        labels: {
          [Labels.sandbox]: podId,
          [Labels.sandboxHash]: sandboxHash([]),
          [Labels.node]: 'contract-node',
          [Labels.source]: 'contract',
        },
      });
      sandboxId = sandbox.id;
    });

    afterAll(async () => {
      await runtime.removeSandbox(sandboxId, { volumes: true });
    });

    afterEach(async () => {
      for (const id of created.splice(0)) await runtime.remove(id, { force: true });
    });

    const spec = (podId: string, container: string, labels?: Record<string, string>): ContainerSpec => ({
      name: buildContainerName(podId, container),
      podId,
      image: options.image,
      command: options.command,
      env: { CONTRACT: 'yes' },
      ports: [],
      mounts: [],
      labels: labels ?? {
        [Labels.manifestId]: podId,
        [Labels.containerName]: container,
        [Labels.specHash]: 'v1-contract',
        [Labels.source]: 'contract',
        [Labels.node]: 'contract-node',
      },
    });

    const create = async (s: ContainerSpec) => {
      const c = await runtime.create(s, sandboxId);
      created.push(c.id);
      return c;
    };

    const expectCode = async (call: Promise<unknown>, ...codes: ErrorCode[]) => {
      const error = await call.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(KubeletError);
      expect(codes).toContain((error as KubeletError).code);
    };

    it('creates a container that is not started, with its labels round-tripped', async () => {
      const s = spec('contract-a', 'main');
      const c = await create(s);
      expect(c.name).toBe(s.name);
      expect(c.state).toBe('created');
      const listed = (await runtime.list()).find((x) => x.id === c.id);
      expect(listed?.labels).toMatchObject(s.labels);
      expect(listed?.state).toBe('created');
      const details = await runtime.inspect(c.id);
      expect(details.labels).toMatchObject(s.labels);
      expect(details.image).toBe(options.image);
    });

    it('starts, and a second start of a running container changes nothing', async () => {
      const c = await create(spec('contract-b', 'main'));
      await runtime.start(c.id);
      const first = await runtime.inspect(c.id);
      expect(first.state).toBe('running');
      await runtime.start(c.id);
      const second = await runtime.inspect(c.id);
      expect(second.state).toBe('running');
      expect(second.startedAt).toBe(first.startedAt);
    });

    it('stops within the timeout, and stopping a stopped container succeeds', async () => {
      const c = await create(spec('contract-c', 'main'));
      await runtime.start(c.id);
      await runtime.stop(c.id, 2);
      const stopped = await runtime.inspect(c.id);
      expect(stopped.state).toBe('exited');
      expect(typeof stopped.exitCode).toBe('number');
      await runtime.stop(c.id, 2);
      expect((await runtime.inspect(c.id)).state).toBe('exited');
    });

    it('refuses to remove a running container unless forced; removing a gone one succeeds', async () => {
      const c = await runtime.create(spec('contract-d', 'main'), sandboxId);
      await runtime.start(c.id);
      await expectCode(runtime.remove(c.id), 'Conflict');
      await runtime.remove(c.id, { force: true });
      expect((await runtime.list()).some((x) => x.id === c.id)).toBe(false);
      await runtime.remove(c.id, { force: true });
    });

    it('answers NotFound for an unknown container', async () => {
      const unknown = 'f'.repeat(64);
      await expectCode(runtime.inspect(unknown), 'NotFound');
      await expectCode(runtime.start(unknown), 'NotFound');
      await expectCode(runtime.stop(unknown, 1), 'NotFound');
    });

    it('answers Conflict when the name is taken', async () => {
      const s = spec('contract-e', 'main');
      await create(s);
      await expectCode(runtime.create(s, sandboxId), 'Conflict');
    });

    it('does not create from an image it does not have, and its image service cannot pull one that exists nowhere', async () => {
      expect(await runtime.images.hasImage(options.image)).toBe(true);
      expect(await runtime.images.hasImage(missingImage)).toBe(false);
      await expectCode(runtime.create({ ...spec('contract-f', 'main'), image: missingImage }, sandboxId), 'NotFound');
      await expectCode(runtime.images.pull(missingImage), 'NotFound', 'Unavailable');
    });

    it('lists the images it holds (a Node’s status.images), each by its names, with its size', async () => {
      const images = await runtime.images.list();
      // An engine may name an image in full (`docker.io/library/busybox:1.36`) where a pod wrote it short.
      const named = (n: string) => n === options.image || n.endsWith(`/${options.image}`);
      const held = images.find((i) => i.names.some(named));
      expect(held).toBeDefined();
      expect(Number.isInteger(held!.sizeBytes) && held!.sizeBytes >= 0).toBe(true);
      expect(images.some((i) => i.names.some((n) => n === missingImage || n.endsWith(`/${missingImage}`)))).toBe(false);
    });

    it('shares one pull between concurrent callers of one image: both get its one outcome', async () => {
      // The executor relies on this (it keeps no single-flight of its own). A transfer that fails is
      // the one outcome a test can see on every runtime: a shared transfer rejects both callers with
      // the very same error, where two transfers would give two.
      const [first, second] = await Promise.all(
        [runtime.images.pull(missingImage), runtime.images.pull(missingImage)].map((p) =>
          p.then(
            () => undefined,
            (e: unknown) => e,
          ),
        ),
      );
      expect(first).toBeInstanceOf(KubeletError);
      expect(second).toBe(first);
    });

    it('runs a command in a running container with its exit code and output; refuses a stopped one', async () => {
      const c = await create(spec('contract-h', 'main'));
      await expectCode(runtime.exec(c.id, ['true'], 5000), 'Conflict');
      await runtime.start(c.id);
      const result = await runtime.exec(c.id, ['sh', '-c', 'echo probe-ok; exit 3'], 5000);
      expect(typeof result.exitCode).toBe('number');
      if (options.realExec !== false) {
        expect(result.exitCode).toBe(3);
        expect(result.output).toContain('probe-ok');
      }
      await expectCode(runtime.exec('f'.repeat(64), ['true'], 1000), 'NotFound');
    });

    it("binds a claim's named volume by its name, whichever pod mounts it", async () => {
      const claim = `contract-claim-${process.pid}`;
      const mounts = [{ volume: 'data', containerPath: '/data', readOnly: false, claim }];
      const writer = await create({ ...spec('contract-claim-a', 'main'), mounts });
      expect((await runtime.inspect(writer.id)).spec.mounts.some((m) => m.containerPath === '/data')).toBe(true);
      if (options.realExec === false) return;
      await runtime.start(writer.id);
      expect((await runtime.exec(writer.id, ['sh', '-c', 'echo kept > /data/note'], 5000)).exitCode).toBe(0);
      const reader = await create({ ...spec('contract-claim-b', 'main'), mounts });
      await runtime.start(reader.id);
      expect((await runtime.exec(reader.id, ['cat', '/data/note'], 5000)).output.trim()).toBe('kept');
    });

    it('keeps foreign containers out of list unless asked', async () => {
      const mine = await create(spec('contract-g', 'main'));
      const foreign = await create({
        ...spec('contract-g', 'other'),
        name: `foreign-${Date.now().toString(36)}`,
        labels: { owner: 'someone-else' },
      });
      const ours = await runtime.list();
      expect(ours.some((x) => x.id === mine.id)).toBe(true);
      expect(ours.some((x) => x.id === foreign.id)).toBe(false);
      const all = await runtime.list({ includeForeign: true });
      expect(all.some((x) => x.id === foreign.id)).toBe(true);
    });

    podContract(() => runtime, { ...options, name, testApi });
    v1Contract(() => runtime, { ...options, name, testApi });
    eventsContract(() => runtime, create, { ...options, name, testApi });
    logsContract(() => runtime, create, { ...options, name, testApi });
    streamingContract(
      () => runtime,
      create,
      () => sandboxId,
      { ...options, name, testApi },
    );
    statsContract(
      () => runtime,
      create,
      () => sandboxId,
      { ...options, name, testApi },
    );
    securityContract(() => runtime, spec, create, { ...options, name, testApi });
    pullSecretsContract(() => runtime, { ...options, name, testApi });
  });
}
