import { describe, expect, it } from '@jest/globals';
import {
  CAPABILITIES,
  wrapRuntime,
  type ContainerEvent,
  type ContainerRuntime,
  type LogLine,
  type RuntimeCapabilities,
  type RuntimeOperation,
} from '../src/index.js';

/** A runtime whose every call answers with its own name and arguments, declaring `capabilities`. */
function fakeRuntime(capabilities: RuntimeCapabilities): ContainerRuntime {
  const answer =
    (op: string) =>
    async (...args: unknown[]) =>
      ({ op, args }) as never;
  return {
    name: 'fake',
    capabilities,
    images: { pull: answer('pull'), hasImage: answer('hasImage'), list: answer('listImages') },
    runSandbox: answer('runSandbox'),
    listSandboxes: answer('listSandboxes'),
    stopSandbox: answer('stopSandbox'),
    removeSandbox: answer('removeSandbox'),
    list: answer('list'),
    inspect: answer('inspect'),
    create: answer('create'),
    start: answer('start'),
    stop: answer('stop'),
    remove: answer('remove'),
    exec: answer('exec'),
  };
}

const oneEvent: ContainerEvent = { type: 'exited', containerId: 'c1', podId: 'p', exitCode: 3, time: 1 };

const everyPower: RuntimeCapabilities = {
  events: {
    async *events() {
      yield oneEvent;
    },
  },
  stats: {
    stats: async (id) => ({ timestamp: 1, cpu: { usageNanoseconds: id.length }, memory: { usageBytes: 2, workingSetBytes: 1 } }),
    sample: async (request) => ({ containers: new Map(request.containers.map((id) => [id, {} as never])), sandboxes: new Map() }),
  },
  logs: {
    logs: async (id) =>
      (async function* () {
        yield { stream: 'stdout', time: 1, content: new TextEncoder().encode(`${id}\n`) } satisfies LogLine;
      })(),
  },
  streaming: {
    exec: async (id, command) => ({ id, command }) as never,
    attach: async (id) => ({ id }) as never,
    portForward: async (sandboxId, port) => ({ sandboxId, port }) as never,
  },
};

describe('wrapRuntime', () => {
  it('keeps every power the wrapped runtime declares, and adds none', () => {
    expect(Object.keys(wrapRuntime(fakeRuntime(everyPower), {}).capabilities).sort()).toEqual([...CAPABILITIES].sort());
    expect(wrapRuntime(fakeRuntime({}), {}).capabilities).toEqual({});
    expect(Object.keys(wrapRuntime(fakeRuntime({ stats: everyPower.stats! }), {}).capabilities)).toEqual(['stats']);
  });

  it('keeps them through wrappers of wrappers', () => {
    let wrapped = fakeRuntime(everyPower);
    for (let i = 0; i < 3; i++) wrapped = wrapRuntime(wrapped, { around: (_op, _args, proceed) => proceed() });
    expect(Object.keys(wrapped.capabilities).sort()).toEqual([...CAPABILITIES].sort());
    expect(wrapped.name).toBe('fake');
  });

  it('puts every call, images and figures included, through `around` with its operation and arguments', async () => {
    const seen: Array<{ operation: RuntimeOperation; args: readonly unknown[] }> = [];
    const wrapped = wrapRuntime(fakeRuntime(everyPower), {
      around: (operation, args, proceed) => {
        seen.push({ operation, args });
        return proceed();
      },
    });
    await expect(wrapped.create({ name: 'a' } as never, 'sandbox-1')).resolves.toEqual({
      op: 'create',
      args: [{ name: 'a' }, 'sandbox-1'],
    });
    await wrapped.stop('c1', 5);
    await expect(wrapped.images.hasImage('app:1')).resolves.toEqual({ op: 'hasImage', args: ['app:1'] });
    await expect(wrapped.images.pull('app:1')).resolves.toEqual({ op: 'pull', args: ['app:1'] });
    await expect(wrapped.images.list()).resolves.toEqual({ op: 'listImages', args: [] });
    await expect(wrapped.capabilities.stats!.stats('abc')).resolves.toMatchObject({ cpu: { usageNanoseconds: 3 } });
    const request = { containers: ['c1', 'c2'], sandboxes: [] };
    expect([...(await wrapped.capabilities.stats!.sample(request)).containers.keys()]).toEqual(['c1', 'c2']);
    expect(seen).toEqual([
      { operation: 'create', args: [{ name: 'a' }, 'sandbox-1'] },
      { operation: 'stop', args: ['c1', 5] },
      { operation: 'hasImage', args: ['app:1'] },
      { operation: 'pull', args: ['app:1'] },
      { operation: 'listImages', args: [] },
      { operation: 'stats', args: ['abc'] },
      { operation: 'statsSample', args: [request] },
    ]);
  });

  it('puts the opening of a log stream through `around`, and passes the stream itself whole', async () => {
    const seen: Array<{ operation: RuntimeOperation; args: readonly unknown[] }> = [];
    let inside = 0;
    const wrapped = wrapRuntime(fakeRuntime(everyPower), {
      around: async (operation, args, proceed) => {
        seen.push({ operation, args });
        inside += 1;
        try {
          return await proceed();
        } finally {
          inside -= 1;
        }
      },
    });
    const stream = await wrapped.capabilities.logs!.logs('c1', { tailLines: 3 });
    // The call is over once the stream is open: reading it is not inside `around` (no deadline cuts a follow).
    expect(inside).toBe(0);
    const lines: string[] = [];
    for await (const line of stream) lines.push(new TextDecoder().decode(line.content));
    expect(lines).toEqual(['c1\n']);
    expect(seen).toEqual([{ operation: 'logs', args: ['c1', { tailLines: 3 }] }]);
  });

  it("keeps a log source's text read exactly when it has one, its opening through `around` as `logs`", async () => {
    const withText: RuntimeCapabilities = {
      logs: {
        ...everyPower.logs!,
        text: async (id) =>
          (async function* () {
            yield new TextEncoder().encode(`${id} as text\n`);
          })(),
      },
    };
    expect(wrapRuntime(fakeRuntime(everyPower), {}).capabilities.logs!.text).toBeUndefined();
    const seen: Array<{ operation: RuntimeOperation; args: readonly unknown[] }> = [];
    const wrapped = wrapRuntime(wrapRuntime(fakeRuntime(withText), {}), {
      around: (operation, args, proceed) => {
        seen.push({ operation, args });
        return proceed();
      },
    });
    const chunks: string[] = [];
    for await (const chunk of await wrapped.capabilities.logs!.text!('c1', { timestamps: true }))
      chunks.push(new TextDecoder().decode(chunk));
    expect(chunks).toEqual(['c1 as text\n']);
    expect(seen).toEqual([{ operation: 'logs', args: ['c1', { timestamps: true }] }]);
  });

  it('puts the opening of an exec, an attach and a port-forward through `around`', async () => {
    const seen: Array<{ operation: RuntimeOperation; args: readonly unknown[] }> = [];
    const wrapped = wrapRuntime(fakeRuntime(everyPower), {
      around: (operation, args, proceed) => {
        seen.push({ operation, args });
        return proceed();
      },
    });
    const options = { stdin: false, stdout: true, stderr: true, tty: false };
    const streams = wrapped.capabilities.streaming!;
    expect(await streams.exec('c1', ['true'], options)).toEqual({ id: 'c1', command: ['true'] });
    expect(await streams.attach('c1', options)).toEqual({ id: 'c1' });
    expect(await streams.portForward('s1', 8080)).toEqual({ sandboxId: 's1', port: 8080 });
    expect(seen.map((s) => [s.operation, s.args[0]])).toEqual([
      ['streamExec', 'c1'],
      ['streamAttach', 'c1'],
      ['portForward', 's1'],
    ]);
  });

  it('lets `around` refuse a call without making it', async () => {
    const inner = fakeRuntime({});
    let made = 0;
    const counted = wrapRuntime(inner, { around: (_op, _args, proceed) => ((made += 1), proceed()) });
    const refusing = wrapRuntime(counted, { around: async () => Promise.reject(new Error('refused')) });
    await expect(refusing.remove('c1')).rejects.toThrow('refused');
    await expect(refusing.images.pull('app:1')).rejects.toThrow('refused');
    expect(made).toBe(0);
  });

  it('passes the event stream whole, or through `events` when given', async () => {
    const read = async (runtime: ContainerRuntime) => {
      const out: ContainerEvent[] = [];
      for await (const e of runtime.capabilities.events!.events(new AbortController().signal)) out.push(e);
      return out;
    };
    expect(await read(wrapRuntime(fakeRuntime(everyPower), {}))).toEqual([oneEvent]);
    const relabelled = wrapRuntime(fakeRuntime(everyPower), {
      events: async function* (stream) {
        for await (const e of stream) yield { ...e, exitCode: 9 };
      },
    });
    expect(await read(relabelled)).toEqual([{ ...oneEvent, exitCode: 9 }]);
  });
});
