import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { claimVolumeDir, listClaimVolumes } from '@kubelet-ts/host-volumes';
import { volumesMain } from '../src/volumes.js';

/** Runs `kubelet-ts volumes …` and returns its exit code and what it wrote. */
async function volumes(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const out: string[] = [];
  const err: string[] = [];
  stdout.on('data', (chunk: Buffer) => out.push(chunk.toString()));
  stderr.on('data', (chunk: Buffer) => err.push(chunk.toString()));
  const code = await volumesMain(argv, { stdout, stderr });
  return { code, stdout: out.join(''), stderr: err.join('') };
}

describe('kubelet-ts volumes: the one way a claim’s named volume goes', () => {
  let root: string;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'kubelet-ts-cli-volumes-'));
  });

  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('lists the claims that have a volume, and says so when there are none', async () => {
    expect(await volumes(['ls', '--volumes-root', root])).toEqual({ code: 0, stdout: `no claim volumes under ${root}\n`, stderr: '' });
    await claimVolumeDir(root, 'mysql-data');
    await claimVolumeDir(root, 'www');
    expect((await volumes(['ls', '--volumes-root', root])).stdout).toBe('CLAIM\nmysql-data\nwww\n');
  });

  it('finds them under --root-dir/volumes when --volumes-root is not given', async () => {
    await claimVolumeDir(join(root, 'volumes'), 'data');
    expect((await volumes(['ls', '--root-dir', root])).stdout).toBe('CLAIM\ndata\n');
  });

  it('removes each claim named, with what is in it; exits 1 naming one that has none', async () => {
    await writeFile(join(await claimVolumeDir(root, 'data'), 'rows'), 'x');
    await claimVolumeDir(root, 'kept');
    const result = await volumes(['rm', 'data', 'nope', '--volumes-root', root]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('removed data\n');
    expect(result.stderr).toBe(`kubelet-ts volumes: no volume of claim "nope" under ${root}\n`);
    expect(await listClaimVolumes(root)).toEqual(['kept']);
    expect(await readdir(join(root, '.claims'))).toEqual(['kept']);
  });

  it('refuses rm without a claim, and an unknown command', async () => {
    expect((await volumes(['rm', '--volumes-root', root])).code).toBe(1);
    const unknown = await volumes(['prune', '--volumes-root', root]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('say ls, or rm and the claims to remove');
  });
});
