import { describe, expect, it } from '@jest/globals';
import { proberFixture, T0, ok, sick } from './prober-fixture.js';
import { settle } from './helpers.js';

describe('Prober (liveness): targets, containers going away, close', () => {
  const f = proberFixture();
  const { prober, running, target, execTimes, stateOf } = f;

  describe('update', () => {
    it('keeps counters and schedule when given the same targets again', async () => {
      const id = await running();
      f.runtime.onExec(id, sick);
      const p = prober();
      p.update([target(id)]);
      await f.clock.advance(20_000); // failures at 5 and 15 s
      expect(p.state(id)).toMatchObject({ failures: 2 });
      p.update([target(id)]);
      p.update([target(id)]);
      await settle();
      expect(execTimes(id)).toEqual([5_000, 15_000]);
      expect(p.state(id)).toMatchObject({ failures: 2 });
      expect(f.clock.pending).toBe(1);
      await f.clock.advance(5_000);
      expect(execTimes(id)).toEqual([5_000, 15_000, 25_000]);
      expect(f.events.ofType('ContainerKilled')).toHaveLength(1);
    });

    it('starts a restarted container (a new id) fresh and stops probing the old one', async () => {
      const first = await running();
      f.runtime.onExec(first, sick);
      const p = prober();
      p.update([target(first)]);
      await f.clock.advance(20_000);
      expect(p.state(first)).toMatchObject({ failures: 2 });

      f.runtime.exit(first, 1);
      const second = await running();
      f.runtime.onExec(second, sick);
      p.update([target(second)]);
      expect(p.state(first)).toBeUndefined();
      expect(p.state(second)).toEqual({ failures: 0 });
      await f.clock.advance(4_999);
      expect(execTimes(second)).toEqual([]); // its own initial delay, from its own start
      await f.clock.advance(1);
      expect(p.state(second)).toMatchObject({ failures: 1 });
      expect(f.events.ofType('ContainerKilled')).toEqual([]);
      await f.clock.advance(20_000);
      expect(f.events.ofType('ContainerKilled')).toHaveLength(1);
      expect(execTimes(first)).toEqual([5_000, 15_000]);
    });

    it('starts fresh when the same id comes back with a new startedAt (started again)', async () => {
      const id = await running();
      f.runtime.onExec(id, sick);
      const p = prober();
      p.update([target(id)]);
      await f.clock.advance(15_000);
      expect(p.state(id)).toMatchObject({ failures: 2 });
      await f.clock.advance(1_000);
      f.runtime.exit(id, 1);
      await f.runtime.start(id);
      p.update([target(id)]);
      expect(p.state(id)).toEqual({ failures: 0 });
      await f.clock.advance(5_000);
      expect(execTimes(id)).toEqual([5_000, 15_000, 21_000]);
      expect(p.state(id)).toMatchObject({ failures: 1 });
    });

    it('stops probing a target that is no longer given', async () => {
      const a = await running('a', 'web');
      const b = await running('b', 'web');
      const p = prober();
      p.update([target(a), target(b)]);
      expect(f.clock.pending).toBe(2);
      p.update([target(b)]);
      expect(f.clock.pending).toBe(1);
      expect(p.state(a)).toBeUndefined();
      await f.clock.advance(100_000);
      expect(execTimes(a)).toEqual([]);
      expect(execTimes(b).length).toBeGreaterThan(5);
    });

    it('never runs two probes of one container at once, even across a restart of the same id', async () => {
      const id = await running();
      f.runtime.onExec(id, ok, 800);
      let active = 0;
      let most = 0;
      const exec = f.runtime.exec.bind(f.runtime);
      f.runtime.exec = async (...args) => {
        active += 1;
        most = Math.max(most, active);
        try {
          return await exec(...args);
        } finally {
          active -= 1;
        }
      };
      const p = prober();
      p.update([target(id, { initialDelaySeconds: 0, periodSeconds: 1 })]);
      await f.clock.advance(100); // the first probe is under way until 800
      // The same container, seen as started again: its fresh schedule wants a probe now.
      const restarted = { ...target(id, { initialDelaySeconds: 0, periodSeconds: 1 }), startedAt: T0 + 100 };
      p.update([restarted]);
      await f.clock.advance(5_000);
      expect(most).toBe(1);
      expect(execTimes(id).slice(0, 2)).toEqual([0, 800]);
    });
  });

  describe('the container going away', () => {
    it('drops a container that stopped meanwhile (Conflict from exec) without an event or a kill', async () => {
      const id = await running();
      f.runtime.onExec(id, sick);
      const p = prober();
      p.update([target(id)]);
      await f.clock.advance(5_000);
      expect(f.events.ofType('ProbeFailed')).toHaveLength(1);
      f.runtime.exit(id, 0);
      await f.clock.advance(10_000);
      expect(execTimes(id)).toEqual([5_000, 15_000]);
      expect(f.events.events).toHaveLength(1);
      expect(f.runtime.callCount('stop')).toBe(0);
      expect(f.clock.pending).toBe(0);
      await f.clock.advance(100_000);
      expect(execTimes(id)).toHaveLength(2);
      expect(f.killed).toEqual([]);
    });

    it('drops a container that was removed meanwhile (NotFound from exec)', async () => {
      const id = await running();
      const p = prober();
      p.update([target(id)]);
      await f.runtime.remove(id, { force: true });
      await f.clock.advance(5_000);
      expect(execTimes(id)).toEqual([5_000]);
      expect(f.events.events).toEqual([]);
      expect(f.clock.pending).toBe(0);
    });
  });

  describe('close', () => {
    it('leaves no timer behind, and nothing is probed afterwards', async () => {
      const a = await running('a', 'web');
      const b = await running('b', 'web');
      const p = prober();
      p.update([target(a), target(b)]);
      await f.clock.advance(5_000);
      expect(f.runtime.callCount('exec')).toBe(2);
      await p.close();
      await p.close();
      expect(f.clock.pending).toBe(0);
      p.update([target(a), target(b)]);
      expect(f.clock.pending).toBe(0);
      await f.clock.advance(100_000);
      expect(f.runtime.callCount('exec')).toBe(2);
    });

    it('waits for a probe under way and drops its result', async () => {
      const id = await running();
      f.runtime.onExec(id, sick, 500);
      const p = prober();
      p.update([target(id, { failureThreshold: 1 })]);
      await f.clock.advance(5_100);
      let closed = false;
      const closing = p.close().then(() => {
        closed = true;
      });
      await settle();
      expect(closed).toBe(false);
      await f.clock.advance(400);
      await closing;
      expect(f.clock.pending).toBe(0);
      expect(f.events.events).toEqual([]);
      expect(stateOf(id)).toBe('running');
    });
  });
});
