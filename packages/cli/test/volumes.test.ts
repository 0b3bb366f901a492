import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { claimVolumeDir, listClaimVolumes } from '@kubelet-ts/host-volumes';
import { createKubelet, type Kubelet } from '@kubelet-ts/runner';
import { MemoryRuntime } from '@kubelet-ts/runtime-memory';
import { ServerManifestSource, agentApiHandler } from '@kubelet-ts/source-server';
import { volumesMain } from '../src/volumes.js';

const TOKEN = 'cli-volumes-token-0123456789abcdef0123';

/** Runs `kubelet-ts volumes …` and returns its exit code and what it wrote. */
async function volumes(argv: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const out: string[] = [];
  const err: string[] = [];
  stdout.on('data', (chunk: Buffer) => out.push(chunk.toString()));
  stderr.on('data', (chunk: Buffer) => err.push(chunk.toString()));
  const code = await volumesMain(argv, { stdout, stderr, env });
  return { code, stdout: out.join(''), stderr: err.join('') };
}

const claimPod = (name: string, namespace: string, claim: string) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace },
  spec: {
    containers: [{ name: 'main', image: 'busybox:1.36', volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
    volumes: [{ name: 'data', persistentVolumeClaim: { claimName: claim } }],
  },
});

describe('kubelet-ts volumes: the one way a claim’s named volume goes', () => {
  let root: string;
  let server: ServerManifestSource;
  let kubelet: Kubelet;
  let agent: string[];

  beforeAll(async () => {
    server = new ServerManifestSource({ port: 0, authToken: TOKEN });
    kubelet = createKubelet({ runtime: new MemoryRuntime(), sources: [server], hostname: 'volumes-node' });
    server.mount(agentApiHandler(kubelet));
    await kubelet.start();
    const post = (manifest: object) =>
      fetch(`${server.url}/container`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify(manifest),
      });
    // Two pods name claim `data`, one names `www`; nothing names `kept`.
    for (const pod of [claimPod('db', 'shop', 'data'), claimPod('replica', 'shop', 'data'), claimPod('web', 'default', 'www')])
      expect((await post(pod)).status).toBe(201);
    await kubelet.sync();
    agent = ['--server', server.url, '--token', TOKEN];
  });

  afterAll(async () => {
    await kubelet.close();
  });

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'kubelet-ts-cli-volumes-'));
  });

  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('lists the claims that have a volume with the pods of the agent that use them, and says so when there are none', async () => {
    expect(await volumes(['ls', '--volumes-root', root, ...agent])).toEqual({
      code: 0,
      stdout: `no claim volumes under ${root}\n`,
      stderr: '',
    });
    await claimVolumeDir(root, 'data');
    await claimVolumeDir(root, 'kept');
    await claimVolumeDir(root, 'www');
    expect(await volumes(['ls', '--volumes-root', root, ...agent])).toEqual({
      code: 0,
      stdout: ['CLAIM   USED BY', 'data    shop/db,shop/replica', 'kept    <none>', 'www     default/web', ''].join('\n'),
      stderr: '',
    });
  });

  it('finds them under --root-dir/volumes when --volumes-root is not given', async () => {
    await claimVolumeDir(join(root, 'volumes'), 'kept');
    expect((await volumes(['ls', '--root-dir', root, ...agent])).stdout).toBe('CLAIM   USED BY\nkept    <none>\n');
  });

  it('removes each claim named that no pod uses, with what is in it; exits 1 naming one that has none', async () => {
    await writeFile(join(await claimVolumeDir(root, 'kept'), 'rows'), 'x');
    await claimVolumeDir(root, 'other');
    const result = await volumes(['rm', 'kept', 'nope', '--volumes-root', root, ...agent]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('removed kept\n');
    expect(result.stderr).toBe(`kubelet-ts volumes: no volume of claim "nope" under ${root}\n`);
    expect(await listClaimVolumes(root)).toEqual(['other']);
    expect(await readdir(join(root, '.claims'))).toEqual(['other']);
  });

  it('refuses to remove a claim that a pod uses, naming the pods, and removes it with --force', async () => {
    await writeFile(join(await claimVolumeDir(root, 'data'), 'rows'), 'x');
    await claimVolumeDir(root, 'kept');
    const refused = await volumes(['rm', 'data', 'kept', '--volumes-root', root, ...agent]);
    expect(refused).toEqual({
      code: 1,
      stdout: 'removed kept\n',
      stderr: 'kubelet-ts volumes: claim "data" is in use by pod shop/db, pod shop/replica: delete the pod first, or --force\n',
    });
    expect(await listClaimVolumes(root)).toEqual(['data']);
    expect(await volumes(['rm', 'data', '--force', '--volumes-root', root, ...agent])).toEqual({
      code: 0,
      stdout: 'removed data\n',
      stderr: '',
    });
    expect(await listClaimVolumes(root)).toEqual([]);
  });

  it('removes nothing when the agent cannot say which pods use a claim, unless --force; ls shows ? and says why', async () => {
    await claimVolumeDir(root, 'data');
    // A port nothing listens on: the agent is not running.
    const gone = ['--server', 'http://127.0.0.1:9', '--token', TOKEN];
    const refused = await volumes(['rm', 'data', '--volumes-root', root, ...gone]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /^kubelet-ts volumes: claim "data" not removed: whether a pod uses it is not known \(cannot reach the agent at http:\/\/127\.0\.0\.1:9: .*\); --force removes it anyway\n$/,
    );
    const listed = await volumes(['ls', '--volumes-root', root, ...gone]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toBe('CLAIM   USED BY\ndata    ?\n');
    expect(listed.stderr).toMatch(/^kubelet-ts volumes: which pods use each claim is not known: cannot reach the agent/);
    expect(await volumes(['rm', 'data', '-f', '--volumes-root', root, ...gone])).toMatchObject({ code: 0, stdout: 'removed data\n' });
    // A wrong token is no answer either.
    await claimVolumeDir(root, 'kept');
    expect((await volumes(['rm', 'kept', '--volumes-root', root, '--server', server.url, '--token', 'wrong'])).code).toBe(1);
    expect(await listClaimVolumes(root)).toEqual(['kept']);
  });

  it('refuses rm without a claim, and an unknown command', async () => {
    expect((await volumes(['rm', '--volumes-root', root, ...agent])).code).toBe(1);
    const unknown = await volumes(['prune', '--volumes-root', root, ...agent]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('say ls, or rm and the claims to remove');
  });
});
