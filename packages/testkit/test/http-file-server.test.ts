import { readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { describe, expect, it } from '@jest/globals';
import { HttpFileServer, independentDocker, TESTKIT_LABEL } from '../src/index.js';

/** The folders HttpFileServer serves from, as they are now. */
const servedFolders = async () => (await readdir(tmpdir())).filter((name) => name.startsWith('kubelet-ts-http-'));

describe('HttpFileServer', () => {
  it('serves what a test puts, 404 for what it removed or never put, on 127.0.0.1 only, and leaves nothing once stopped', async () => {
    const foldersBefore = await servedFolders();
    const http = await HttpFileServer.start();
    const docker = independentDocker();
    let id: string | undefined;
    try {
      expect(http.base).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const url = await http.put('/hosts/a/manifests', '[{"id":"web"}]');
      expect(url).toBe(`${http.base}/hosts/a/manifests`);
      const served = await fetch(url);
      expect([served.status, await served.text()]).toEqual([200, '[{"id":"web"}]']);
      await http.put('/hosts/a/manifests', 'replaced');
      expect(await (await fetch(url)).text()).toBe('replaced');
      await http.remove('/hosts/a/manifests');
      expect((await fetch(url)).status).toBe(404);
      expect((await fetch(http.url('/never'))).status).toBe(404);
      await expect(http.put('/', 'x')).rejects.toThrow('not a file path');
      const [container] = await docker.listContainers({ filters: { label: [`${TESTKIT_LABEL}=http`] } });
      id = container?.Id;
      expect(container?.Ports.filter((p) => p.PublicPort !== undefined).map((p) => p.IP)).toEqual(['127.0.0.1']);
    } finally {
      await http.stop();
    }
    expect(await docker.listContainers({ all: true, filters: { id: [id!] } })).toEqual([]);
    expect(await servedFolders()).toEqual(foldersBefore);
  });
});
