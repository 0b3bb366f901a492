import { describe, expect, it } from '@jest/globals';
import type { ContainerSummary, SandboxSummary } from '@kubelet-ts/core';
import { QuietPass, sameRecord } from '../src/quiet-pass.js';
import type { DesiredState } from '../src/mux.js';

/** A field given as undefined is present with no value: the comparison must tell it from one left out. */
const container = (over: { [K in keyof ContainerSummary]?: ContainerSummary[K] | undefined } = {}): ContainerSummary =>
  ({
    id: 'c1',
    name: 'main--web--1234abcd',
    image: 'busybox',
    labels: { 'io.kubelet-ts.manifest-id': 'web', 'io.kubelet-ts.restart-count': '0' },
    state: 'running',
    createdAt: 1000,
    startedAt: 1001,
    ...over,
  }) as ContainerSummary;
const sandbox = (): SandboxSummary => ({
  id: 's1',
  name: 'POD--web--1234abcd',
  labels: { 'io.kubelet-ts.sandbox': 'web' },
  state: 'ready',
  createdAt: 900,
});

describe('sameRecord', () => {
  it('takes records rebuilt with the same fields and labels as equal', () => {
    expect(sameRecord(container(), container())).toBe(true);
    expect(sameRecord(sandbox(), sandbox())).toBe(true);
  });

  it('tells apart a changed field, a changed label, a label more, and a field only one has', () => {
    expect(sameRecord(container(), container({ state: 'exited' }))).toBe(false);
    expect(sameRecord(container(), container({ labels: { 'io.kubelet-ts.manifest-id': 'web', 'io.kubelet-ts.restart-count': '1' } }))).toBe(
      false,
    );
    expect(sameRecord(container(), container({ labels: { ...container().labels, extra: 'x' } }))).toBe(false);
    expect(sameRecord(container(), container({ exitCode: 0 }))).toBe(false);
    expect(sameRecord(container({ startedAt: undefined }), container({ exitCode: undefined }))).toBe(false);
  });

  it('never takes records nested deeper than one level as equal (they are planned in full)', () => {
    const deep = (n: number) => ({ id: 'x', meta: { inner: { n } } });
    expect(sameRecord(deep(1), deep(1))).toBe(false);
  });
});

describe('QuietPass', () => {
  const desired = { pods: [] } as unknown as DesiredState;

  it('matches a pass whose runtime rebuilt every record with the same content, and not one where a container exited', () => {
    const quiet = new QuietPass();
    quiet.record({ desired, listed: [container()], sandboxes: [sandbox()], allowRemovals: true }, true, 0);
    expect(quiet.matches({ desired, listed: [container()], sandboxes: [sandbox()], allowRemovals: true })).toBe(0);
    expect(
      quiet.matches({ desired, listed: [container({ state: 'exited', exitCode: 137 })], sandboxes: [sandbox()], allowRemovals: true }),
    ).toBeUndefined();
    expect(quiet.matches({ desired, listed: [container()], sandboxes: [], allowRemovals: true })).toBeUndefined();
    expect(quiet.matches({ desired, listed: [container()], sandboxes: [sandbox()], allowRemovals: false })).toBeUndefined();
  });

  it('matches the same records listed in another order, and not when one of them changed', () => {
    const quiet = new QuietPass();
    const other = container({ id: 'c2', name: 'main--db--1234abcd' });
    quiet.record({ desired, listed: [container(), other], sandboxes: [sandbox()], allowRemovals: true }, true, 0);
    expect(quiet.matches({ desired, listed: [other, container()], sandboxes: [sandbox()], allowRemovals: true })).toBe(0);
    expect(
      quiet.matches({
        desired,
        listed: [container({ id: 'c2', name: 'main--db--1234abcd', state: 'exited' }), container()],
        sandboxes: [sandbox()],
        allowRemovals: true,
      }),
    ).toBeUndefined();
    expect(
      quiet.matches({ desired, listed: [container({ id: 'c3' }), container()], sandboxes: [sandbox()], allowRemovals: true }),
    ).toBeUndefined();
  });

  it('matches nothing after a pass that had something to do', () => {
    const quiet = new QuietPass();
    quiet.record({ desired, listed: [container()], sandboxes: [sandbox()], allowRemovals: true }, false, 0);
    expect(quiet.matches({ desired, listed: [container()], sandboxes: [sandbox()], allowRemovals: true })).toBeUndefined();
  });
});
