import { afterAll, describe, expect, it } from '@jest/globals';
import { buildTestImages, independentDocker } from '../src/index.js';

describe('test images', () => {
  const docker = independentDocker();
  const made: string[] = [];

  afterAll(async () => {
    for (const id of made) await docker.getContainer(id).remove({ force: true });
  });

  it('builds a busybox image with no registry, whose shell and applets run', async () => {
    const { busybox } = await buildTestImages();
    const c = await docker.createContainer({ Image: busybox, Cmd: ['sh', '-c', 'echo hello from $(basename $(readlink /bin/wget))'] });
    made.push(c.id);
    await c.start();
    expect((await c.wait()).StatusCode).toBe(0);
    const logs = (await c.logs({ stdout: true })).toString('utf8');
    expect(logs).toContain('hello from busybox');
  });

  it('builds a pause image that stops at once on docker stop', async () => {
    const { pause } = await buildTestImages();
    const c = await docker.createContainer({ Image: pause });
    made.push(c.id);
    await c.start();
    const started = Date.now();
    await c.stop({ t: 30 });
    expect(Date.now() - started).toBeLessThan(5000);
    expect((await c.inspect()).Config).toMatchObject({ StopSignal: 'SIGKILL' });
  });
});
