import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Logger } from '@kubelet-ts/core';
import { FileSourceCheckpoints } from '@kubelet-ts/runner';
import { etcdKeyFor } from '@kubelet-ts/source-etcd';
import type { CliOptions } from './options.js';
import { DEFAULT_ROOT_DIR } from './legacy-flags.js';

/**
 * Where the agent keeps each source's last good set: `<root-dir>/sources`. A `--root-dir` given
 * that cannot be written is an error (the caller exits 1); the default one, on a host where this
 * user may not write it, is said loudly and the agent runs without (a restart then forgets what the
 * server was told).
 */
export async function sourceCheckpoints(
  rootDir: string | undefined,
  logger: Logger,
  owner: { readonly node: string; readonly identities: Readonly<Record<string, string>> },
): Promise<FileSourceCheckpoints | undefined> {
  const checkpoints = new FileSourceCheckpoints(join(rootDir ?? DEFAULT_ROOT_DIR, 'sources'), owner);
  try {
    await checkpoints.prepare();
    await access(checkpoints.dir, constants.W_OK);
    return checkpoints;
  } catch (error) {
    const why = `the sources' last good sets cannot be kept in ${checkpoints.dir} (${(error as Error).message})`;
    if (rootDir !== undefined) throw new Error(`${why}: give --root-dir a directory this user can write`);
    logger.warn(
      { dir: checkpoints.dir },
      `${why}: running without them, so a restart forgets what the server was told and what an unreadable source last gave; give --root-dir a directory this user can write`,
    );
    return undefined;
  }
}

/**
 * What each source of this configuration reads, by the source's name: a checkpoint kept by a
 * configuration that read something else (another `--config`, URL, etcd key or servers, another
 * server address) is not restored. The URL's credentials are left out of it: they may rotate, and
 * the checkpoint is no place for them.
 */
export function sourceIdentities(options: CliOptions, givenHostname: string): Record<string, string> {
  const identities: Record<string, string> = {};
  if (options.config !== undefined) identities['file'] = resolve(options.config);
  if (options.manifestUrl !== undefined) identities['http'] = withoutCredentials(options.manifestUrl);
  if (options.etcdServers !== undefined)
    identities['etcd'] = `${etcdKeyFor(givenHostname)} on ${[...options.etcdServers].sort().join(',')}`;
  identities['server'] = `${options.address}:${options.port}`;
  return identities;
}

function withoutCredentials(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.username = '';
    parsed.password = '';
    return parsed.toString();
  } catch {
    return url;
  }
}
