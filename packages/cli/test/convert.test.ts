import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { parseManifests } from '@kubelet-ts/manifest';

const bin = fileURLToPath(new URL('../bin/kubelet-ts.js', import.meta.url));
const fixture = (path: string) => fileURLToPath(new URL(`../../manifest/test/fixtures/${path}`, import.meta.url));

/** Runs `kubelet-ts convert` as a process; resolves with its exit code and output. */
function convert(args: readonly string[], stdin?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [bin, 'convert', ...args], { timeout: 30_000 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
      resolve({ code, stdout, stderr });
    });
    child.stdin?.end(stdin ?? '');
  });
}

const parse = (text: string) => parseManifests(text, 'out.yaml', { allowHostMounts: true, idFor: () => 'derived' });

describe('kubelet-ts convert', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-convert-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('writes a 2014 manifest as a v1 Pod by default, which reads back to the same manifest (a dotted id as <id>.default)', async () => {
    const { code, stdout, stderr } = await convert([fixture('2014/late-2014.json')]);
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    expect(stdout).toMatch(/^apiVersion: v1\nkind: Pod\n/);
    const original = parse(readFileSync(fixture('2014/late-2014.json'), 'utf8'));
    // v1 reads a dotted name as a pod of `default`, kept on the host as `<name>.default` (issue 42).
    expect(parse(stdout).manifests).toEqual(
      original.manifests.map((m) => (m.id.includes('.') ? { ...m, id: `${m.id}.default`, namespace: 'default' } : m)),
    );
  });

  it('writes a v1 Pod as v1beta1 by default, and several manifests as --- documents; --to forces one format', async () => {
    const text = [
      'apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c, image: busybox, args: [sleep, "9"], ports: [{containerPort: 80}]}]}',
      'version: v1beta1\nid: b\ncontainers: [{name: c, image: busybox}]',
    ].join('\n---\n');
    const mixed = await convert(['-'], text);
    expect(mixed.code).toBe(0);
    const docs = mixed.stdout.split(/^---$/m);
    expect(docs).toHaveLength(2);
    expect(docs[0]).toContain('version: v1beta1');
    expect(docs[0]).toContain('hostPort: 0');
    expect(docs[1]).toContain('kind: Pod');
    expect(parse(mixed.stdout).manifests).toEqual(parse(text).manifests);
    const allV1 = await convert(['--to', 'v1', '-'], text);
    expect(allV1.stdout.match(/^kind: Pod$/gm)).toHaveLength(2);
  });

  it('converts the kubeadm manifests to v1 and back unchanged', async () => {
    const { code, stdout } = await convert(['--to', 'v1', fixture('kubeadm/etcd.yaml')]);
    expect(code).toBe(0);
    const original = parse(readFileSync(fixture('kubeadm/etcd.yaml'), 'utf8'));
    expect(parse(stdout).manifests).toEqual(original.manifests);
  });

  it('exits 1 naming every field v1beta1 cannot say, printing nothing', async () => {
    const { code, stdout, stderr } = await convert([fixture('kubeadm/kube-scheduler.yaml')]);
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toContain('spec.hostNetwork: has no v1beta1 form');
    expect(stderr).toContain('spec.volumes[0].hostPath.type: has no v1beta1 form');
  });

  it('exits 1 with the field path of a refused field', async () => {
    const path = join(dir, 'bad.yaml');
    await writeFile(
      path,
      'apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  hostUsers: false\n  containers: [{name: c, image: busybox}]\n',
    );
    const { code, stdout, stderr } = await convert([path]);
    expect({ code, stdout }).toEqual({ code: 1, stdout: '' });
    expect(stderr).toContain('spec.hostUsers: not supported');
  });

  it('exits 1 on an unreadable text, a missing file and a wrong --to', async () => {
    expect(await convert(['-'], 'a: [')).toMatchObject({ code: 1, stderr: expect.stringContaining('not valid YAML or JSON') });
    expect(await convert([join(dir, 'missing.yaml')])).toMatchObject({ code: 1, stderr: expect.stringContaining('cannot read') });
    expect(await convert(['--to', 'v2', '-'])).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('Allowed choices are v1, v1beta1'),
    });
    // An empty text converts nothing: it fails rather than print nothing and succeed (issue 27).
    expect(await convert(['-'], '')).toMatchObject({
      code: 1,
      stdout: '',
      stderr: expect.stringContaining('stdin: empty (no manifest, not even an empty list), which is unreadable'),
    });
    expect(await convert(['-'], '---\n')).toMatchObject({ code: 1, stderr: expect.stringContaining('stdin: empty') });
    expect(await convert(['-'], '[]')).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('no manifest in stdin: nothing to convert'),
    });
  });
});
