import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeletError } from '@kubelet-ts/core';
import { prepareHostPath, prepareHostPaths } from '../src/host-path.js';

let root: string;
let socketServer: Server;
const socketPath = () => join(root, 'sock');

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'kubelet-ts-host-path-'));
  await mkdir(join(root, 'dir'));
  await writeFile(join(root, 'file'), 'kept');
  await symlink(join(root, 'dir'), join(root, 'link-to-dir'));
  await symlink('/', join(root, 'link-to-root'));
  await symlink(join(root, 'link-to-root'), join(root, 'link-to-link-to-root'));
  socketServer = createServer();
  await new Promise<void>((resolve) => socketServer.listen(socketPath(), resolve));
});

afterAll(async () => {
  await new Promise<void>((resolve) => socketServer.close(() => resolve()));
  await rm(root, { recursive: true, force: true });
});

const failure = (call: Promise<unknown>) =>
  call.then(
    () => undefined,
    (e: unknown) => e as KubeletError,
  );

describe('prepareHostPath', () => {
  it('DirectoryOrCreate makes a missing directory (and its parents) with mode 0755, and keeps an existing one', async () => {
    const path = join(root, 'made', 'deep');
    await prepareHostPath(path, 'DirectoryOrCreate', 'data');
    const made = await stat(path);
    expect(made.isDirectory()).toBe(true);
    expect(made.mode & 0o777).toBe(0o755 & ~process.umask());
    await prepareHostPath(join(root, 'dir'), 'DirectoryOrCreate', 'data');
  });

  it('DirectoryOrCreate refuses a file there, naming the volume and the path', async () => {
    const e = await failure(prepareHostPath(join(root, 'file'), 'DirectoryOrCreate', 'data'));
    expect(e).toBeInstanceOf(KubeletError);
    expect(e?.code).toBe('Conflict');
    expect(e?.message).toContain('volume "data"');
    expect(e?.message).toContain(join(root, 'file'));
    expect(e?.message).toMatch(/is a file, not a directory/);
  });

  it('Directory takes a directory (through a link too), refuses an absent path and a file', async () => {
    await prepareHostPath(join(root, 'dir'), 'Directory', 'v');
    await prepareHostPath(join(root, 'link-to-dir'), 'Directory', 'v');
    const absent = await failure(prepareHostPath(join(root, 'absent'), 'Directory', 'v'));
    expect(absent?.code).toBe('NotFound');
    expect(absent?.message).toMatch(/does not exist: create it, or use type DirectoryOrCreate/);
    expect((await failure(prepareHostPath(join(root, 'file'), 'Directory', 'v')))?.code).toBe('Conflict');
    await expect(stat(join(root, 'absent'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('FileOrCreate makes a missing empty file with mode 0644, keeps an existing one unchanged, and refuses a directory', async () => {
    const path = join(root, 'new-file');
    await prepareHostPath(path, 'FileOrCreate', 'f');
    const made = await stat(path);
    expect(made.isFile()).toBe(true);
    expect(made.size).toBe(0);
    expect(made.mode & 0o777).toBe(0o644 & ~process.umask());
    await prepareHostPath(join(root, 'file'), 'FileOrCreate', 'f');
    expect(await readFile(join(root, 'file'), 'utf8')).toBe('kept');
    expect((await failure(prepareHostPath(join(root, 'dir'), 'FileOrCreate', 'f')))?.code).toBe('Conflict');
  });

  it('FileOrCreate does not make a missing parent directory, as the kubelet does not', async () => {
    const e = await failure(prepareHostPath(join(root, 'no-parent', 'file'), 'FileOrCreate', 'f'));
    expect(e?.code).toBe('NotFound');
    expect(e?.message).toMatch(/parent directory does not exist/);
    await expect(stat(join(root, 'no-parent'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('File takes a file, refuses an absent path and a directory', async () => {
    await prepareHostPath(join(root, 'file'), 'File', 'f');
    expect((await failure(prepareHostPath(join(root, 'absent-file'), 'File', 'f')))?.code).toBe('NotFound');
    expect((await failure(prepareHostPath(join(root, 'dir'), 'File', 'f')))?.code).toBe('Conflict');
  });

  it('Socket takes a socket and refuses a file or an absent path', async () => {
    await prepareHostPath(socketPath(), 'Socket', 's');
    expect((await failure(prepareHostPath(join(root, 'file'), 'Socket', 's')))?.message).toMatch(/is a file, not a socket/);
    expect((await failure(prepareHostPath(join(root, 'absent.sock'), 'Socket', 's')))?.code).toBe('NotFound');
  });

  it('CharDevice takes a character device (/dev/null) and refuses a directory', async () => {
    await prepareHostPath('/dev/null', 'CharDevice', 'dev');
    expect((await failure(prepareHostPath(join(root, 'dir'), 'CharDevice', 'dev')))?.message).toMatch(
      /is a directory, not a character device/,
    );
  });

  it('BlockDevice refuses a character device and an absent path', async () => {
    expect((await failure(prepareHostPath('/dev/null', 'BlockDevice', 'dev')))?.message).toMatch(
      /is a character device, not a block device/,
    );
    expect((await failure(prepareHostPath(join(root, 'absent-dev'), 'BlockDevice', 'dev')))?.code).toBe('NotFound');
  });

  it("checks nothing for '' or no type: an absent path is left absent", async () => {
    await prepareHostPath(join(root, 'unchecked'), '', 'v');
    await prepareHostPath(join(root, 'unchecked'), undefined, 'v');
    await expect(stat(join(root, 'unchecked'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('prepareHostPaths checks the kind of typed mounts only (2014 HOST mounts carry no type)', async () => {
    await prepareHostPaths([
      { volume: 'host2014', containerPath: '/x', readOnly: false, hostPath: join(root, 'absent-2014') },
      { volume: 'made', containerPath: '/y', readOnly: false, hostPath: join(root, 'by-spec'), hostPathType: 'DirectoryOrCreate' },
      { volume: 'pod', containerPath: '/z', readOnly: false },
    ]);
    expect((await stat(join(root, 'by-spec'))).isDirectory()).toBe(true);
    await expect(stat(join(root, 'absent-2014'))).rejects.toMatchObject({ code: 'ENOENT' });
    const e = await failure(
      prepareHostPaths([{ volume: 'gone', containerPath: '/y', readOnly: false, hostPath: join(root, 'gone'), hostPathType: 'Directory' }]),
    );
    expect(e?.message).toContain('volume "gone"');
  });
});

describe('a host path that leads to the host root (issue 27 item 4)', () => {
  const rootPaths = () => [join(root, 'link-to-root'), join(root, 'link-to-link-to-root'), '/proc/self/root'];

  it.each(['', undefined, 'Directory', 'DirectoryOrCreate'] as const)(
    'is refused with type %p, naming the volume and saying what to do',
    async (type) => {
      for (const path of rootPaths()) {
        const e = await failure(prepareHostPath(path, type, 'escape'));
        expect(e).toBeInstanceOf(KubeletError);
        expect(e?.code).toBe('InvalidManifest');
        expect(e?.message).toContain('volume "escape"');
        expect(e?.message).toContain(path);
        expect(e?.message).toMatch(/host's root directory "\/".*point the volume at the directory the container needs/);
      }
    },
  );

  it('is refused for a 2014 HOST mount too (no type), while a link to a directory below the root and an absent path pass', async () => {
    const e = await failure(
      prepareHostPaths([{ volume: 'host2014', containerPath: '/host', readOnly: false, hostPath: join(root, 'link-to-root') }]),
    );
    expect(e?.code).toBe('InvalidManifest');
    expect(e?.message).toContain('volume "host2014"');
    await prepareHostPaths([
      { volume: 'ok', containerPath: '/x', readOnly: false, hostPath: join(root, 'link-to-dir') },
      { volume: 'absent', containerPath: '/y', readOnly: false, hostPath: join(root, 'absent-host') },
    ]);
  });
});
