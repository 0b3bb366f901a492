import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import * as protoLoader from '@grpc/proto-loader';
import { checkedManifest } from '@kubelet-ts/conformance';
import { buildContainerSpec, buildSandboxSpec } from '@kubelet-ts/core';
import { criEndpoint, TEST_IMAGES } from '@kubelet-ts/testkit';
import { connectCri } from '../src/cri-client.js';
import type { CriContainer } from '../src/cri-api.js';
import { cachedListDeserializer } from '../src/list-decoding.js';
import { criFixture } from './fixture.js';

const PROTO = fileURLToPath(new URL('../proto/runtime-v1.proto', import.meta.url));
const definition = protoLoader.loadSync(PROTO, { keepCase: false, longs: Number, enums: String, defaults: true, oneofs: true });
const methods = definition['runtime.v1.RuntimeService'] as Record<string, protoLoader.MethodDefinition<object, object>>;
const { responseSerialize: encodeContainers, responseDeserialize: decodeContainers } = methods['ListContainers']!;
const { responseSerialize: encodeSandboxes, responseDeserialize: decodeSandboxes } = methods['ListPodSandbox']!;

const container = (id: string, state: string, labels: Record<string, string> = { app: id }) => ({
  id,
  podSandboxId: `sandbox-of-${id}`,
  metadata: { name: `name-${id}`, attempt: 0 },
  image: { image: 'busybox' },
  imageRef: 'sha256:0123',
  state,
  createdAt: 1_733_400_000_000_000_000,
  labels,
  annotations: { 'io.kubelet-ts.image': 'busybox:1' },
});

/** The whole-answer decoder, counting the entries it is handed. */
function counting(decode: (b: Buffer) => object, list: 'containers' | 'items') {
  const seen: number[] = [];
  return {
    seen,
    decode: (b: Buffer) => {
      const answer = decode(b) as Record<string, unknown[]>;
      seen.push(answer[list]!.length);
      return answer;
    },
  };
}

describe('cachedListDeserializer: list answers decoded once an entry', () => {
  it('answers what the whole-answer decoder answers, entry for entry, on every shape of list', () => {
    const answers = [
      { containers: [] },
      { containers: [container('a', 'CONTAINER_RUNNING')] },
      {
        containers: [
          container('a', 'CONTAINER_RUNNING'),
          container('b', 'CONTAINER_EXITED', {}),
          container('c'.repeat(300), 'CONTAINER_CREATED'),
        ],
      },
    ];
    const cached = cachedListDeserializer('containers', decodeContainers);
    for (const answer of answers) {
      const bytes = encodeContainers(answer);
      expect(cached(bytes)).toEqual(decodeContainers(bytes));
      expect(cached(bytes)).toEqual(decodeContainers(bytes)); // from the cache this time
    }
  });

  it('hands out the same object for an entry with the same bytes and decodes only the entries that changed', () => {
    const { seen, decode } = counting(decodeContainers, 'containers');
    const cached = cachedListDeserializer('containers', decode);
    const first = cached(encodeContainers({ containers: [container('a', 'CONTAINER_RUNNING'), container('b', 'CONTAINER_RUNNING')] })) as {
      containers: CriContainer[];
    };
    const second = cached(encodeContainers({ containers: [container('b', 'CONTAINER_EXITED'), container('a', 'CONTAINER_RUNNING')] })) as {
      containers: CriContainer[];
    };
    expect(seen).toEqual([2, 1]); // the second answer: only b, whose state changed
    // Handed to every later list, so nobody may change one.
    expect(Object.isFrozen(first.containers[0])).toBe(true);
    expect(Object.isFrozen(first.containers[0]!.labels)).toBe(true);
    expect(second.containers[1]).toBe(first.containers[0]);
    expect(second.containers[0]).not.toBe(first.containers[1]);
    expect(second.containers[0]).toMatchObject({ id: 'b', state: 'CONTAINER_EXITED' });
    // The same id with other labels (another engine, or a reused id) is not the cached entry.
    const third = cached(encodeContainers({ containers: [container('a', 'CONTAINER_RUNNING', { app: 'other' })] })) as {
      containers: CriContainer[];
    };
    expect(third.containers[0]).not.toBe(first.containers[0]);
    expect(third.containers[0]!.labels).toEqual({ app: 'other' });
  });

  it('takes an entry with its labels in another order as the same, and one with labels of another length or another state as new', () => {
    const { seen, decode } = counting(decodeContainers, 'containers');
    const cached = cachedListDeserializer('containers', decode);
    const answer = (labels: Record<string, string>, state = 'CONTAINER_RUNNING') =>
      (cached(encodeContainers({ containers: [container('a', state, labels)] })) as { containers: CriContainer[] }).containers[0];
    const first = answer({ x: '1', y: '2', z: '3' });
    // containerd writes maps in Go's random order: the bytes differ, the entry does not.
    expect(encodeContainers({ containers: [container('a', 'CONTAINER_RUNNING', { z: '3', x: '1', y: '2' })] })).not.toEqual(
      encodeContainers({ containers: [container('a', 'CONTAINER_RUNNING', { x: '1', y: '2', z: '3' })] }),
    );
    expect(answer({ z: '3', x: '1', y: '2' })).toBe(first);
    expect(answer({ y: '2', z: '3', x: '1' })).toBe(first);
    expect(seen).toEqual([1]);
    const longer = answer({ x: '1', y: '2', z: '33' });
    expect(longer).not.toBe(first);
    expect(longer!.labels).toEqual({ x: '1', y: '2', z: '33' });
    const exited = answer({ x: '1', y: '2', z: '33' }, 'CONTAINER_EXITED');
    expect(exited).not.toBe(longer);
    expect(exited).toMatchObject({ state: 'CONTAINER_EXITED', labels: { x: '1', y: '2', z: '33' } });
    expect(seen).toEqual([1, 1, 1]);
  });

  it('works for the sandboxes list (`items`) as for the containers', () => {
    const { seen, decode } = counting(decodeSandboxes, 'items');
    const cached = cachedListDeserializer('items', decode);
    const sandbox = {
      id: 's1',
      metadata: { name: 'p', uid: 'u', namespace: 'default', attempt: 0 },
      state: 'SANDBOX_READY',
      labels: { a: 'b' },
    };
    const bytes = encodeSandboxes({ items: [sandbox] });
    const first = cached(bytes) as { items: unknown[] };
    expect(first).toEqual(decodeSandboxes(bytes));
    expect((cached(bytes) as { items: unknown[] }).items[0]).toBe(first.items[0]);
    expect(seen).toEqual([1]);
  });

  it('decodes an answer of any other shape whole, as without the cache', () => {
    const { seen, decode } = counting(decodeContainers, 'containers');
    const cached = cachedListDeserializer('containers', decode);
    const list = encodeContainers({ containers: [container('a', 'CONTAINER_RUNNING')] });
    // A field the answer does not have today (field 2, a varint), as a newer CRI might add: skipped by the decoder.
    const withField = Buffer.concat([list, Buffer.from([0x10, 0x01])]);
    expect(cached(withField)).toEqual(decodeContainers(withField));
    // A list cut short: the whole-answer decoder's own error, not a partial list.
    expect(() => cached(list.subarray(0, list.length - 3))).toThrow();
    expect(seen).toEqual([1]);
  });
});

describe('CriRuntime lists on a real containerd: the answers hit the cache', () => {
  it('gives the same decoded entry for a container and its sandbox from two lists, and a new one once its state changed', async () => {
    const f = await criFixture();
    const cri = connectCri(criEndpoint());
    const node = `cri-decoding-${process.pid}`;
    const m = checkedManifest({ id: 'decoding', containers: [{ name: 'main', image: TEST_IMAGES.busybox, command: ['sleep', '3600'] }] });
    let sandboxId: string | undefined;
    try {
      const s = await f.runtime.runSandbox(buildSandboxSpec(m, { node, source: 'test' }));
      sandboxId = s.id;
      const c = await f.runtime.create(buildContainerSpec(m, m.containers[0]!, { node, source: 'test' }), s.id);
      await f.runtime.start(c.id);
      const entry = async () => (await cri.listContainers({ filter: { id: c.id } }, Date.now() + 10_000)).containers[0];
      const sandbox = async () => (await cri.listPodSandbox({ filter: { id: s.id } }, Date.now() + 10_000)).items[0];
      const running = await entry();
      expect(running).toMatchObject({ id: c.id, state: 'CONTAINER_RUNNING' });
      // containerd 1.6 writes an entry's labels in Go's random order: the same entry all the same.
      expect(await entry()).toBe(running);
      const ready = await sandbox();
      expect(ready).toMatchObject({ id: s.id, state: 'SANDBOX_READY' });
      expect(await sandbox()).toBe(ready);
      await f.runtime.stop(c.id, 0);
      const exited = await entry();
      expect(exited).not.toBe(running);
      expect(exited).toMatchObject({ id: c.id, state: 'CONTAINER_EXITED', labels: running!.labels });
    } finally {
      if (sandboxId !== undefined) await f.runtime.removeSandbox(sandboxId, { volumes: true });
      cri.close();
      await f.close();
    }
  });
});
