import { afterEach, describe, expect, it } from '@jest/globals';
import { KubeletError, type ContainerManifest, type SourceWarning } from '@kubelet-ts/core';
import { ManualClock } from '@kubelet-ts/conformance';
import { SourceSupervisor, type SourceSupervisorOptions, type SupervisorHandlers } from '../src/supervisor.js';
import { pod, settle, ScriptedSource } from './helpers.js';

/** Handlers that record every call. */
class Recorder implements SupervisorHandlers {
  readonly updates: Array<readonly ContainerManifest[]> = [];
  readonly errors: KubeletError[] = [];
  readonly restarts: Array<{ error: KubeletError; delayMs: number }> = [];
  readonly warnings: SourceWarning[] = [];

  restored(): undefined {
    return undefined;
  }

  warning(warning: SourceWarning): void {
    this.warnings.push(warning);
  }

  update(manifests: readonly ContainerManifest[]): void {
    this.updates.push(manifests);
  }

  error(error: KubeletError): void {
    this.errors.push(error);
  }

  restarting(error: KubeletError, delayMs: number): void {
    this.restarts.push({ error, delayMs });
  }

  get delays(): number[] {
    return this.restarts.map((r) => r.delayMs);
  }
}

describe('SourceSupervisor', () => {
  const open: SourceSupervisor[] = [];
  let clock: ManualClock;

  function supervise(source: ScriptedSource, options: Omit<SourceSupervisorOptions, 'clock'> = {}) {
    clock = new ManualClock(1_000_000);
    const handlers = new Recorder();
    const supervisor = new SourceSupervisor(source, handlers, { ...options, clock });
    open.push(supervisor);
    return { supervisor, handlers };
  }

  afterEach(async () => {
    await Promise.all(open.splice(0).map((s) => s.close()));
  });

  it('starts the source and passes its deliveries on', async () => {
    const source = new ScriptedSource('file');
    const { supervisor, handlers } = supervise(source);
    supervisor.start();
    await supervisor.started;
    const set = [pod('web')];
    source.push(set);
    expect(source.starts).toBe(1);
    expect(handlers.updates).toEqual([set]);
    expect(handlers.updates[0]).toBe(set);
    expect(handlers.restarts).toEqual([]);
  });

  it('closes a source whose start rejects and starts it again after 1 s, 2 s, 4 s …', async () => {
    const source = new ScriptedSource('http', { rejectStarts: 100 });
    const { supervisor, handlers } = supervise(source);
    supervisor.start();
    await expect(supervisor.started).resolves.toBeUndefined(); // never rejects
    expect(source.starts).toBe(1);
    expect(source.closes).toBe(1);
    expect(handlers.delays).toEqual([1000]);

    for (const [delay, starts] of [
      [1000, 2],
      [2000, 3],
      [4000, 4],
      [8000, 5],
    ] as const) {
      await clock.advance(delay - 1);
      expect(source.starts).toBe(starts - 1);
      await clock.advance(1);
      expect(source.starts).toBe(starts);
      expect(source.closes).toBe(starts);
    }
    expect(handlers.delays).toEqual([1000, 2000, 4000, 8000, 16000]);
  });

  it('honours initialBackoffMs and caps the delay at maxBackoffMs', async () => {
    const source = new ScriptedSource('http', { rejectStarts: 100 });
    const { supervisor, handlers } = supervise(source, { initialBackoffMs: 100, maxBackoffMs: 500 });
    supervisor.start();
    await supervisor.started;
    await clock.advance(3000);
    // Starts (each crashing) at +0, +100, +300, +700, +1200, +1700, +2200 and +2700 ms.
    expect(source.starts).toBe(8);
    expect(handlers.delays).toEqual([100, 200, 400, 500, 500, 500, 500, 500]);
  });

  it('gives the restarting handler the start error and the delay', async () => {
    const cause = new KubeletError('Unavailable', 'etcd: connection refused', { adapter: 'etcd' });
    const source = new ScriptedSource('etcd', { rejectStarts: 1, startError: cause });
    const { supervisor, handlers } = supervise(source);
    supervisor.start();
    await supervisor.started;
    expect(handlers.restarts).toEqual([{ error: cause, delayMs: 1000 }]);
    expect(handlers.restarts[0]?.error).toBe(cause);
  });

  it('wraps a plain start error into an Internal KubeletError naming the source', async () => {
    const source = new ScriptedSource('http', { rejectStarts: 1, startError: new Error('socket hang up') });
    const { supervisor, handlers } = supervise(source);
    supervisor.start();
    await supervisor.started;
    expect(handlers.restarts).toHaveLength(1);
    const error = handlers.restarts[0]?.error;
    expect(error).toBeInstanceOf(KubeletError);
    expect(error).toMatchObject({ code: 'Internal', message: 'socket hang up', adapter: 'http' });
  });

  it('runs the source normally once a restart succeeds', async () => {
    const source = new ScriptedSource('http', { rejectStarts: 2 });
    const { supervisor, handlers } = supervise(source);
    supervisor.start();
    await supervisor.started;
    await clock.advance(1000);
    await clock.advance(2000);
    expect(source.starts).toBe(3);
    expect(source.closes).toBe(2);
    source.push([pod('web')]);
    expect(handlers.updates).toHaveLength(1);
    expect(clock.pending).toBe(0);
  });

  it('restarts a source that reports a fatal error', async () => {
    const source = new ScriptedSource('etcd');
    const { supervisor, handlers } = supervise(source);
    supervisor.start();
    await supervisor.started;
    const lost = new KubeletError('Unavailable', 'watch lost');
    source.fail(lost, true);
    await settle();
    expect(handlers.restarts).toEqual([{ error: lost, delayMs: 1000 }]);
    expect(handlers.errors).toEqual([]);
    expect(source.closes).toBe(1);
    await clock.advance(999);
    expect(source.starts).toBe(1);
    await clock.advance(1);
    expect(source.starts).toBe(2);
  });

  it('passes a non-fatal error to the error handler and keeps the source running', async () => {
    const source = new ScriptedSource('file');
    const { supervisor, handlers } = supervise(source);
    supervisor.start();
    await supervisor.started;
    const invalid = new KubeletError('InvalidManifest', 'web.yaml: id: is required');
    source.fail(invalid);
    source.fail(new Error('disk hiccup'), false);
    await settle();
    expect(handlers.errors).toHaveLength(2);
    expect(handlers.errors[0]).toBe(invalid);
    expect(handlers.errors[1]).toMatchObject({ code: 'Internal', message: 'disk hiccup', adapter: 'file' });
    expect(handlers.restarts).toEqual([]);
    expect(source.closes).toBe(0);
    expect(clock.pending).toBe(0);
    await clock.advance(600_000);
    expect(source.starts).toBe(1);
    // The same sink still delivers.
    source.push([]);
    expect(handlers.updates).toEqual([[]]);
  });

  it('resets the back-off after a successful delivery', async () => {
    const source = new ScriptedSource('http', { rejectStarts: 2 });
    const { supervisor, handlers } = supervise(source);
    supervisor.start();
    await supervisor.started;
    await clock.advance(1000);
    await clock.advance(2000);
    expect(handlers.delays).toEqual([1000, 2000]);
    source.push([pod('web')]);
    source.fail(new Error('stream reset'), true);
    await settle();
    expect(handlers.delays).toEqual([1000, 2000, 1000]);
  });

  it('keeps doubling when the restarted source crashes again without delivering', async () => {
    const source = new ScriptedSource('http', { rejectStarts: 2 });
    const { supervisor, handlers } = supervise(source);
    supervisor.start();
    await supervisor.started;
    await clock.advance(1000);
    await clock.advance(2000);
    source.fail(new Error('stream reset'), true);
    await settle();
    expect(handlers.delays).toEqual([1000, 2000, 4000]);
  });

  it('ignores the crashed instance sink, during the back-off and after the restart', async () => {
    const source = new ScriptedSource('etcd');
    const { supervisor, handlers } = supervise(source);
    supervisor.start();
    await supervisor.started;
    source.push([pod('web')]);
    const old = source.sink;
    old.error(new Error('lost'), { fatal: true });
    await settle();

    // During the back-off.
    old.update([pod('stale')]);
    old.error(new Error('late'));
    old.error(new Error('late fatal'), { fatal: true });
    await settle();
    expect(handlers.updates).toHaveLength(1);
    expect(handlers.errors).toEqual([]);
    expect(handlers.restarts).toHaveLength(1);

    await clock.advance(1000);
    expect(source.starts).toBe(2);
    expect(source.sink).not.toBe(old);

    // After the restart.
    old.update([pod('stale')]);
    old.error(new Error('late'));
    old.error(new Error('late fatal'), { fatal: true });
    await settle();
    expect(handlers.updates).toHaveLength(1);
    expect(handlers.errors).toEqual([]);
    expect(handlers.restarts).toHaveLength(1);
    expect(clock.pending).toBe(0);

    // The new instance is heard.
    const fresh = [pod('web', 'nginx:2')];
    source.push(fresh);
    expect(handlers.updates.at(-1)).toBe(fresh);
  });

  it('close() cancels a pending restart and closes the source', async () => {
    const source = new ScriptedSource('http', { rejectStarts: 100 });
    const { supervisor, handlers } = supervise(source);
    supervisor.start();
    await supervisor.started;
    expect(source.closes).toBe(1);
    expect(clock.pending).toBe(1);
    await supervisor.close();
    expect(source.closes).toBe(2);
    expect(clock.pending).toBe(0);
    await clock.advance(600_000);
    expect(source.starts).toBe(1);
    expect(handlers.restarts).toHaveLength(1);
  });

  it('close() closes a healthy source, after which its sink is ignored', async () => {
    const source = new ScriptedSource('file');
    const { supervisor, handlers } = supervise(source);
    supervisor.start();
    await supervisor.started;
    await supervisor.close();
    expect(source.closes).toBe(1);
    source.push([pod('web')]);
    source.fail(new Error('late'));
    source.fail(new Error('late fatal'), true);
    await settle();
    expect(handlers.updates).toEqual([]);
    expect(handlers.errors).toEqual([]);
    expect(handlers.restarts).toEqual([]);
    expect(clock.pending).toBe(0);
    expect(source.starts).toBe(1);
  });

  it('close() during the back-off after a fatal error does not restart the source', async () => {
    const source = new ScriptedSource('etcd');
    const { supervisor } = supervise(source);
    supervisor.start();
    await supervisor.started;
    source.fail(new Error('lost'), true);
    await settle();
    await supervisor.close();
    await clock.advance(600_000);
    expect(source.starts).toBe(1);
    expect(source.closes).toBe(2);
    expect(clock.pending).toBe(0);
  });
});
