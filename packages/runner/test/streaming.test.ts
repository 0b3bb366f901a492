import { describe, expect, it } from '@jest/globals';
import type { Readable } from 'node:stream';
import { checkedManifest } from '@kubelet-ts/conformance';
import { Labels, wrapRuntime, type KubeletError } from '@kubelet-ts/core';
import { MemoryRuntime } from '@kubelet-ts/runtime-memory';
import { runningTarget } from '../src/log-target.js';
import { agentFixture } from './agent-fixture.js';
import { ScriptedSource, settle } from './helpers.js';

async function text(stream: Readable | undefined): Promise<string> {
  let out = '';
  for await (const chunk of stream ?? []) out += String(chunk);
  return out;
}

describe("the agent's exec, attach and port-forward: which container, by pod and container name (issue 23)", () => {
  const f = agentFixture();
  const v1 = checkedManifest({
    id: 'api.kube-system',
    namespace: 'kube-system',
    containers: [{ name: 'api', image: 'api:1', ports: [{ containerPort: 8080 }] }],
  });
  const web = checkedManifest({ id: 'web', containers: [{ name: 'main', image: 'app:1' }] });

  async function agent(options: Parameters<typeof f.kubelet>[1] = {}) {
    const k = f.kubelet([new ScriptedSource('file', { initial: [v1, web] })], options);
    await k.start();
    await settle();
    return k;
  }
  const failure = (p: Promise<unknown>) =>
    p.then(
      () => undefined,
      (e: unknown) => e as KubeletError,
    );
  const NONE = { stdin: false, stdout: true, stderr: true, tty: false };

  it('runs a command in the running container of a pod named as /pods names it, and attaches to it', async () => {
    const k = await agent();
    const session = await k.exec({ namespace: 'kube-system', pod: 'api', container: 'api' }, ['echo', 'hi'], NONE);
    expect([await text(session.stdout), (await session.done).exitCode]).toEqual(['hi\n', 0]);
    const attached = await k.attach({ namespace: 'default', pod: 'web', container: 'main' }, NONE);
    const id = f.of('web').find((c) => c.labels[Labels.containerName] === 'main')!.id;
    const seen = text(attached.stdout);
    f.runtime.print(id, 'stdout', 'printed\n');
    f.runtime.exit(id, 0);
    expect([await seen, (await attached.done).exitCode]).toEqual(['printed\n', 0]);
  });

  it('NotFound naming the unknown pod or container, Conflict for a container that does not run now', async () => {
    const k = await agent();
    expect(await failure(k.exec({ namespace: 'default', pod: 'api', container: 'api' }, ['true'], NONE))).toMatchObject({
      code: 'NotFound',
      message: 'pod "default/api" does not exist on this node',
    });
    expect(await failure(k.attach({ namespace: 'default', pod: 'web', container: 'side' }, NONE))).toMatchObject({
      code: 'NotFound',
      message: 'container "side" is not in pod "default/web" (its containers: main)',
    });
    // A container that ended (or waits out its back-off) is not exec'd into: the kubelet's rule.
    const view = {
      id: 'web',
      source: 'file',
      containers: [
        {
          name: 'main',
          image: 'app:1',
          state: 'exited' as const,
          id: 'c1',
          restartCount: 1,
          started: false,
          ready: false,
          waitingReason: 'CrashLoopBackOff' as const,
        },
      ],
    };
    expect(() => runningTarget([view], { namespace: 'default', pod: 'web', container: 'main' })).toThrow(
      'container "main" in pod "default/web" is not running (CrashLoopBackOff)',
    );
    expect(
      runningTarget([{ ...view, containers: [{ ...view.containers[0]!, state: 'running' as const }] }], {
        namespace: 'default',
        pod: 'web',
        container: 'main',
      }),
    ).toBe('c1');
  });

  it("forwards to a port in the pod's sandbox; Unavailable for a port nothing listens on", async () => {
    const k = await agent();
    const connection = await k.portForward({ namespace: 'kube-system', pod: 'api' }, 8080);
    connection.write('ping');
    const [echo] = (await connection.take(1).toArray()) as Buffer[];
    expect(String(echo)).toBe('ping');
    connection.destroy();
    expect(await failure(k.portForward({ namespace: 'kube-system', pod: 'api' }, 9999))).toMatchObject({ code: 'Unavailable' });
    expect(await failure(k.portForward({ namespace: 'default', pod: 'nope' }, 8080))).toMatchObject({ code: 'NotFound' });
  });

  it('Unsupported, naming the runtime, when it cannot stream (a wrapper keeps the power of one that can)', async () => {
    const k = await agent({
      runtime: wrapRuntime(new MemoryRuntime({ pullable: 'any' }), {}),
    });
    expect((await failure(k.exec({ namespace: 'default', pod: 'web', container: 'main' }, ['true'], NONE)))?.code).not.toBe('Unsupported');
    const bare = new MemoryRuntime({ pullable: 'any' });
    const { streaming: _streaming, ...others } = bare.capabilities;
    const without = await agent({ runtime: Object.assign(Object.create(bare) as MemoryRuntime, { capabilities: others }) });
    expect(await failure(without.exec({ namespace: 'default', pod: 'web', container: 'main' }, ['true'], NONE))).toMatchObject({
      code: 'Unsupported',
      message: 'the memory runtime cannot exec, attach or port-forward',
    });
  });
});
