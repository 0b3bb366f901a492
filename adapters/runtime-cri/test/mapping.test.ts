import { describe, expect, it } from '@jest/globals';
import type { ContainerStatus } from '../src/cri-api.js';
import { detailsOf } from '../src/mapping.js';

const status = (fields: Partial<ContainerStatus>): ContainerStatus => ({
  id: 'c1',
  metadata: { name: 'main--web--0123abcd', attempt: 0 },
  state: 'CONTAINER_EXITED',
  createdAt: '1000000000000000000',
  startedAt: '0',
  finishedAt: '0',
  exitCode: 0,
  image: { image: 'docker.io/library/busybox:1.36' },
  imageRef: '',
  reason: '',
  message: '',
  labels: {},
  annotations: {},
  mounts: [],
  logPath: '',
  resources: null,
  ...fields,
});

describe('detailsOf', () => {
  it('keeps containerd times in milliseconds, and an exit code only once exited', () => {
    const d = detailsOf(status({ startedAt: '1000000001000000000', finishedAt: '1000000002500000000', exitCode: 3 }), {});
    expect(d).toMatchObject({
      state: 'exited',
      createdAt: 1000000000000,
      startedAt: 1000000001000,
      finishedAt: 1000000002500,
      exitCode: 3,
    });
    const running = detailsOf(status({ state: 'CONTAINER_RUNNING', startedAt: '1000000001000000000', finishedAt: '0' }), {});
    expect(running.finishedAt).toBeUndefined();
    expect(running.exitCode).toBeUndefined();
  });

  it('never reports an exit before the start: a process that ended inside StartContainer ran for no time', () => {
    // containerd stamps the start after the task started and the exit with the event's time (seen 5 ms apart).
    const d = detailsOf(status({ startedAt: '1000000001005000000', finishedAt: '1000000001000000000', exitCode: 3 }), {});
    expect({ startedAt: d.startedAt, finishedAt: d.finishedAt }).toEqual({ startedAt: 1000000001005, finishedAt: 1000000001005 });
  });
});
