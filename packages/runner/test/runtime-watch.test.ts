import { describe, expect, it } from '@jest/globals';
import { KubeletError, type ContainerEvent, type ContainerEventSource } from '@kubelet-ts/core';
import { ManualClock } from '@kubelet-ts/conformance';
import { RuntimeWatch } from '../src/runtime-watch.js';
import { agentFixture } from './agent-fixture.js';
import { pod, RecordingLogger, settle, ScriptedSource } from './helpers.js';

const HOUR = 3_600_000;

describe('the agent follows the runtime event stream (issue 14)', () => {
  const f = agentFixture();
  const running = (podId: string) => f.of(podId).filter((c) => c.state === 'running');

  it('replaces an exited container at once, without waiting for the sync period (1 h)', async () => {
    const k = f.kubelet([new ScriptedSource('a', { initial: [pod('web'), pod('db')] })], { syncFrequencyMs: HOUR });
    await k.start();
    await settle();
    const [first] = running('web');
    const lists = f.runtime.callCount('list');
    await f.clock.advance(1_000);
    const pass = f.nextPass(k);
    f.runtime.exit(first!.id, 1);
    // A pass of that pod alone, one list, at the exit's time.
    expect(await pass).toMatchObject({ pods: ['web'], actions: 1, failures: 0, startedAt: 1_001_000 });
    const [replacement] = running('web');
    expect(replacement).toMatchObject({ createdAt: 1_001_000 });
    expect(replacement!.id).not.toBe(first!.id);
    expect(running('db')).toHaveLength(1);
    await settle();
    // The exit's pass, then the removal's (the gc of nothing: the exited one is kept): few lists.
    expect(f.runtime.callCount('list') - lists).toBeLessThanOrEqual(2);
    const metrics = (await k.metrics()).body;
    expect(metrics).toMatch(/kubelet_ts_runtime_events_total\{type="exited"\} 1/);
    expect(metrics).toMatch(/kubelet_ts_runtime_events_total\{type="started"\} \d+/);
    // Adaptive by default: the start limit begins at 4 (too few starts here to move it).
    expect(metrics).toMatch(/^kubelet_ts_start_concurrency 4$/m);
  });

  it('restarts the first crash at once and the second after 10 s', async () => {
    const k = f.kubelet([new ScriptedSource('a', { initial: [pod('web')] })], { syncFrequencyMs: HOUR });
    await k.start();
    await settle();
    f.runtime.exit(running('web')[0]!.id, 1);
    await settle();
    expect(running('web')).toHaveLength(1);
    await f.clock.advance(2_000);
    const crashedAt = f.clock.now();
    f.runtime.exit(running('web')[0]!.id, 1);
    await settle();
    expect(running('web')).toEqual([]);
    await f.clock.advance(10_000 - 1);
    expect(running('web')).toEqual([]);
    await f.clock.advance(1);
    await settle();
    expect(running('web')).toEqual([expect.objectContaining({ createdAt: crashedAt + 10_000 })]);
  });

  it("asks for no pass for an event of a foreign container or of another node's pod; one of a pod it runs too costs one idle pod pass", async () => {
    const k = f.kubelet([new ScriptedSource('a', { initial: [pod('web')] })], { syncFrequencyMs: HOUR });
    await k.start();
    await settle();
    // Each in its sandbox: another node's pod, and a foreign container in a sandbox without our labels.
    const [theirs] = await f.preexisting(pod('other'), 'node-b', 'a');
    const foreign = await f.foreign('foreign');
    await settle();
    const passes: unknown[] = [];
    k.on('pass', (r) => passes.push(r));
    const lists = f.runtime.callCount('list');
    f.runtime.exit(theirs!, 1);
    f.runtime.exit(foreign, 1);
    await settle();
    expect(passes).toEqual([]);
    expect(f.runtime.callCount('list')).toBe(lists);
    // The event names a pod but not the node: another node's container of a pod this agent runs
    // too makes one pass of that pod, which finds nothing to do.
    const [twin] = await f.preexisting(pod('web'), 'node-b', 'a');
    f.runtime.exit(twin!, 1);
    await settle();
    expect(passes).toEqual([expect.objectContaining({ pods: ['web'], actions: 0 })]);
  });

  it('reconnects a broken stream with back-off, relists once per reconnection, and logs each', async () => {
    const logger = new RecordingLogger();
    const k = f.kubelet([new ScriptedSource('a', { initial: [pod('web')] })], { syncFrequencyMs: HOUR, logger });
    await k.start();
    await settle();
    const passes: Array<{ pods?: readonly string[] }> = [];
    k.on('pass', (r) => passes.push(r));
    f.runtime.breakEvents();
    await settle();
    expect(f.runtime.openEventStreams).toBe(0);
    expect(logger.entries.filter((l) => l.level === 'warn' && l.message.includes('event stream'))).toHaveLength(1);
    // Reconnects after 100 ms, and relists once: one full pass.
    await f.clock.advance(99);
    expect(f.runtime.openEventStreams).toBe(0);
    await f.clock.advance(1);
    await settle();
    expect(f.runtime.openEventStreams).toBe(1);
    expect(passes.filter((p) => p.pods === undefined)).toHaveLength(1);
    expect(logger.entries.filter((l) => l.level === 'info' && l.message.includes('reconnected'))).toHaveLength(1);
    // A second break soon after waits twice as long.
    f.runtime.breakEvents();
    await settle();
    await f.clock.advance(199);
    expect(f.runtime.openEventStreams).toBe(0);
    await f.clock.advance(1);
    await settle();
    expect(f.runtime.openEventStreams).toBe(1);
    expect(passes.filter((p) => p.pods === undefined)).toHaveLength(2);
    // One warning per outage: the quick second break is a retry of the same one.
    expect(logger.entries.filter((l) => l.level === 'warn' && l.message.includes('event stream'))).toHaveLength(1);
    expect(logger.entries.filter((l) => l.level === 'debug' && l.message.includes('event stream failed'))).toHaveLength(1);
    // Events flow again on the new stream.
    const pass = f.nextPass(k);
    f.runtime.exit(running('web')[0]!.id, 1);
    expect(await pass).toMatchObject({ pods: ['web'], actions: 1 });
    expect((await k.metrics()).body).toMatch(/kubelet_ts_runtime_event_stream_reconnects_total 2/);
  });

  it('lets go of the stream and of every timer at close, a pending reconnection included', async () => {
    const k = f.kubelet([new ScriptedSource('a', { initial: [pod('web')] })], { syncFrequencyMs: HOUR });
    await k.start();
    await settle();
    expect(f.runtime.openEventStreams).toBe(1);
    f.runtime.breakEvents();
    await settle();
    await k.close();
    expect(f.runtime.openEventStreams).toBe(0);
    expect(f.clock.pending).toBe(0);
  });
});

describe('RuntimeWatch', () => {
  /** A stream double: each connection yields what `script` gives, then ends or fails. */
  function source(script: Array<ContainerEvent[] | Error>): ContainerEventSource & { name: string; connections: number } {
    const s = {
      name: 'double',
      connections: 0,
      async *events(signal: AbortSignal): AsyncGenerator<ContainerEvent> {
        const step = script[s.connections++];
        if (step === undefined) {
          await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
          return;
        }
        if (step instanceof Error) throw step;
        yield* step;
      },
    };
    return s;
  }

  it('places an event without a pod by the last list, drops unknown ones, and resets the back-off after a healthy connection', async () => {
    const clock = new ManualClock(0);
    const asked: string[][] = [];
    let relists = 0;
    const runtime = source([
      [
        { type: 'exited', containerId: 'known', time: 0 },
        { type: 'exited', containerId: 'unknown', time: 0 },
        { type: 'started', containerId: 'known', time: 0 },
      ],
      new KubeletError('Unavailable', 'gone'),
    ]);
    const watch = new RuntimeWatch({
      runtime,
      clock,
      logger: new RecordingLogger(),
      podOf: (e) => (e.containerId === 'known' ? 'web' : undefined),
      // What the agent's inbox would do: a pass of the pod of an exit or removal, a relist on reconnection.
      inbox: {
        post: (m) => {
          if (m.type === 'runtime-event' && m.event.type !== 'started' && m.podId !== undefined) asked.push([m.podId]);
          if (m.type === 'event-stream-reconnected') relists += 1;
        },
      },
      backoff: { initialMs: 100, maxMs: 1_000 },
    });
    watch.start();
    await settle();
    expect(asked).toEqual([['web']]); // the unknown container and the start ask for nothing
    expect(relists).toBe(0);
    await clock.advance(100); // the first connection ended: reconnect after 100 ms
    await settle();
    expect(runtime.connections).toBe(2);
    expect(relists).toBe(1);
    await clock.advance(200); // the second failed at once: twice as long
    await settle();
    expect(runtime.connections).toBe(3);
    expect(relists).toBe(2);
    await watch.close();
    expect(clock.pending).toBe(0);
  });
});
