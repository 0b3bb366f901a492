import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '@kubelet-ts/core';
import { FileSourceCheckpoints } from '@kubelet-ts/runner';
import { DEFAULT_ROOT_DIR } from './legacy-flags.js';

/**
 * Where the agent keeps each source's last good set: `<root-dir>/sources`. A `--root-dir` given
 * that cannot be written is an error (the caller exits 1); the default one, on a host where this
 * user may not write it, is said loudly and the agent runs without (a restart then forgets what the
 * server was told).
 */
export async function sourceCheckpoints(rootDir: string | undefined, logger: Logger): Promise<FileSourceCheckpoints | undefined> {
  const checkpoints = new FileSourceCheckpoints(join(rootDir ?? DEFAULT_ROOT_DIR, 'sources'));
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
