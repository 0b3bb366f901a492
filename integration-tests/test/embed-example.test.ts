import { afterAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from './agent-process.js';

const run = promisify(execFile);

/** What the example prints: the pods running after each pass, and the rejected job's warning. */
function checkOutput(stdout: string): void {
  const lines = stdout.trim().split('\n');
  expect(lines.filter((l) => l.startsWith('running:'))).toEqual(['running: cache-warmer, nightly-report', 'running: nightly-report']);
  // The invalid job is rejected with the field that is wrong, and does not stop the others.
  const rejected = lines.filter((l) => l.includes('ManifestRejected')).map((l) => JSON.parse(l) as { msg: string });
  expect(rejected[0]?.msg).toContain('job Bad Job: id: must be a DNS subdomain');
}

/** The packages an embedder picks for an agent on the in-memory runtime (the example's imports). */
const EMBEDDED = ['packages/core', 'packages/runner', 'adapters/runtime-memory'];

/**
 * Libraries an embedded agent must not install: gRPC, the engines' and etcd's clients, the file
 * watcher, the HTTP and WebSocket clients, the Kubernetes client and YAML. Each belongs to the
 * adapter (or, for gRPC, the probe package) that needs it.
 */
const HEAVY = ['@grpc/', 'dockerode', 'etcd3', 'chokidar', 'got', 'ws', '@kubernetes/client-node', 'yaml'];

/** The workspace folder of each package of the project, by name. */
async function workspaceFolders(): Promise<Map<string, string>> {
  const folders = new Map<string, string>();
  for (const group of ['packages', 'adapters']) {
    for (const entry of await readdir(join(repoRoot, group))) {
      const manifest = JSON.parse(await readFile(join(repoRoot, group, entry, 'package.json'), 'utf8')) as { name: string };
      folders.set(manifest.name, `${group}/${entry}`);
    }
  }
  return folders;
}

/** `folders` and the workspace packages they depend on at run time, transitively. */
async function withWorkspaceDependencies(folders: readonly string[]): Promise<string[]> {
  const byName = await workspaceFolders();
  const found = new Set<string>();
  const visit = async (folder: string): Promise<void> => {
    if (found.has(folder)) return;
    found.add(folder);
    const manifest = JSON.parse(await readFile(join(repoRoot, folder, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
    };
    for (const name of Object.keys(manifest.dependencies ?? {})) {
      const dependency = byName.get(name);
      if (dependency !== undefined) await visit(dependency);
    }
  };
  for (const folder of folders) await visit(folder);
  return [...found].sort();
}

/**
 * Every package installed under `nodeModules` (nested ones too), by name; the bytes of their files,
 * and the bytes they take on disk (what `du` counts, blocks of files and folders).
 */
async function installed(nodeModules: string): Promise<{ names: string[]; bytes: number; onDisk: number }> {
  const names: string[] = [];
  let bytes = 0;
  let onDisk = 0;
  const measure = async (path: string): Promise<void> => {
    const info = await stat(path);
    onDisk += info.blocks * 512;
    if (!info.isDirectory()) bytes += info.size;
    else for (const entry of await readdir(path)) await measure(join(path, entry));
  };
  const walk = async (folder: string): Promise<void> => {
    for (const entry of await readdir(folder).catch(() => [] as string[])) {
      if (entry.startsWith('.')) continue;
      if (entry.startsWith('@')) {
        for (const scoped of await readdir(join(folder, entry))) await visitPackage(join(folder, entry, scoped), `${entry}/${scoped}`);
      } else await visitPackage(join(folder, entry), entry);
    }
  };
  const visitPackage = async (path: string, name: string): Promise<void> => {
    names.push(name);
    // A nested node_modules is measured with its parent; its packages are named here.
    await measure(path);
    await walk(join(path, 'node_modules'));
  };
  await walk(nodeModules);
  return { names: names.sort(), bytes, onDisk };
}

describe('examples/embed.ts', () => {
  const work: string[] = [];
  afterAll(async () => {
    for (const folder of work) await rm(folder, { recursive: true, force: true });
  });

  it('builds an agent from the packages with its own source, runs the valid jobs and exits on its own', async () => {
    const { stdout } = await run(process.execPath, [join(repoRoot, 'examples/dist/embed.js')], { cwd: repoRoot, timeout: 10_000 });
    checkOutput(stdout);
  });

  it('runs from core, the runner and the in-memory runtime packed and installed into an empty project, which has no gRPC, engine, etcd, watcher or HTTP-client library', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'kubelet-ts-embed-'));
    work.push(folder);
    const packs = join(folder, 'packs');
    const app = join(folder, 'app');
    await mkdir(packs);
    await mkdir(app);
    const folders = await withWorkspaceDependencies(EMBEDDED);
    // Built already (`npm test` builds first): packed as they would be published, `dist` and all.
    const { stdout: packed } = await run(
      'npm',
      ['pack', '--ignore-scripts', '--json', '--pack-destination', packs, ...folders.flatMap((f) => ['--workspace', f])],
      { cwd: repoRoot, timeout: 60_000 },
    );
    const tarballs = (JSON.parse(packed) as Array<{ filename: string }>).map((p) => join(packs, p.filename));
    expect(tarballs).toHaveLength(folders.length);
    await writeFile(join(app, 'package.json'), `${JSON.stringify({ name: 'embedder', private: true, type: 'module' })}\n`);
    // The workspace packages from their tarballs; what they depend on from the npm cache when it is there.
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', ...tarballs], {
      cwd: app,
      timeout: 120_000,
    });
    await copyFile(join(repoRoot, 'examples/dist/embed.js'), join(app, 'embed.js'));
    const { stdout } = await run(process.execPath, ['embed.js'], { cwd: app, timeout: 10_000 });
    checkOutput(stdout);

    const { names, bytes, onDisk } = await installed(join(app, 'node_modules'));
    expect(names.filter((n) => HEAVY.some((heavy) => (heavy.endsWith('/') ? n.startsWith(heavy) : n === heavy)))).toEqual([]);
    const mb = (n: number) => `${(n / 1_048_576).toFixed(1)} MB`;
    // The README's figures ("Embedding"): 9 packages, 5.2 MB of files, 8.0 MB on disk; with the gRPC
    // probe in the runner they were 42 packages, 14.5 MB and 21.0 MB.
    process.stdout.write(
      `embedded agent (${folders.join(', ')}): ${names.length} packages, ${mb(bytes)} of files, ${mb(onDisk)} on disk: ${names.join(', ')}\n`,
    );
    expect(names.length).toBeLessThanOrEqual(12);
    // Files, not blocks: the same on every file system.
    expect(bytes).toBeLessThan(8 * 1_048_576);
  }, 180_000);
});
