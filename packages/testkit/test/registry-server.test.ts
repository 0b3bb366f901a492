import { describe, expect, it } from '@jest/globals';
import { independentDocker, RegistryServer, TEST_IMAGES, TESTKIT_LABEL } from '../src/index.js';

const basic = (user: string, password: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` });

describe('RegistryServer', () => {
  it('asks for its one user, holds what a test pushes, leaves the engine no tag of it, and is gone once stopped', async () => {
    const registry = await RegistryServer.start({ username: 'alice' });
    const docker = independentDocker();
    let id: string | undefined;
    try {
      expect(registry.host).toMatch(/^127\.0\.0\.1:\d+$/);
      const image = await registry.push(TEST_IMAGES.busybox, 'team/busybox:1');
      expect(image).toBe(`${registry.host}/team/busybox:1`);
      const tags = `http://${registry.host}/v2/team/busybox/tags/list`;
      expect((await fetch(tags)).status).toBe(401);
      expect((await fetch(tags, { headers: basic('alice', 'wrong') })).status).toBe(401);
      const listed = await fetch(tags, { headers: basic('alice', registry.password) });
      expect([listed.status, await listed.json()]).toEqual([200, { name: 'team/busybox', tags: ['1'] }]);
      expect(JSON.parse(registry.dockerConfigJson())).toEqual({
        auths: {
          [registry.host]: {
            username: 'alice',
            password: registry.password,
            auth: Buffer.from(`alice:${registry.password}`).toString('base64'),
          },
        },
      });
      await expect(docker.getImage(image).inspect()).rejects.toMatchObject({ statusCode: 404 });
      const [container] = await docker.listContainers({ filters: { label: [`${TESTKIT_LABEL}=registry`] } });
      id = container?.Id;
      expect(id).toBeDefined();
    } finally {
      await registry.stop();
    }
    expect(await docker.listContainers({ all: true, filters: { id: [id!] } })).toEqual([]);
  });
});
