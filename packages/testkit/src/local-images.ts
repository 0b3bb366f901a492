import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { GenericContainer } from 'testcontainers';
import { configureTestcontainers } from './containers.js';
import { assertEngine, independentDocker } from './engine.js';

const run = promisify(execFile);

/** An image of host binaries on nothing, as testcontainers builds it from a Dockerfile. */
export interface LocalImageOptions {
  /** The image's name and tag; a tag that names its content (a release, a hash) is built once. */
  readonly tag: string;
  /**
   * Host binaries, each copied with the libraries its loader needs (those at the same paths): a
   * path alone is copied to that path, a pair to its `target`.
   */
  readonly binaries: ReadonlyArray<string | { readonly source: string; readonly target: string }>;
}

const building = new Map<string, Promise<string>>();

/**
 * Builds `FROM scratch` with the binaries and what `ldd` says they link (nothing for a static Go
 * binary), unless the engine has the tag already; resolves to the tag. These machines reach no
 * registry, so every service image of the testkit is made this way from what is installed.
 */
export function localImage(options: LocalImageOptions): Promise<string> {
  let pending = building.get(options.tag);
  if (pending === undefined) {
    pending = build(options);
    building.set(options.tag, pending);
    pending.catch(() => building.delete(options.tag));
  }
  return pending;
}

async function build({ tag, binaries }: LocalImageOptions): Promise<string> {
  await assertEngine();
  const docker = independentDocker();
  const present = await docker
    .getImage(tag)
    .inspect()
    .then(
      () => true,
      () => false,
    );
  if (present) return tag;
  configureTestcontainers();
  const context = await mkdtemp(join(tmpdir(), 'kubelet-ts-image-'));
  try {
    const files = new Map<string, string>(); // target → source
    for (const binary of binaries) {
      const { source, target } = typeof binary === 'string' ? { source: binary, target: binary } : binary;
      files.set(target, source);
      for (const library of await linkedLibraries(source)) files.set(library, library);
    }
    for (const [target, source] of files) {
      await mkdir(join(context, 'rootfs', dirname(target)), { recursive: true });
      await copyFile(source, join(context, 'rootfs', target));
    }
    await writeFile(join(context, 'Dockerfile'), 'FROM scratch\nCOPY rootfs/ /\n');
    await GenericContainer.fromDockerfile(context).build(tag, { deleteOnExit: false });
    return tag;
  } finally {
    await rm(context, { recursive: true, force: true });
  }
}

/** What the loader needs to run `binary` (`ldd`'s paths, links resolved by the copy); none for a static one. */
async function linkedLibraries(binary: string): Promise<string[]> {
  const { stdout } = await run('ldd', [binary]).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }));
  if (/not a dynamic executable|statically linked/.test(stdout)) return [];
  return [...stdout.matchAll(/(\/[^\s)]+)/g)].map((match) => match[1]!);
}
