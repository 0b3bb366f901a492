import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

let collect: (() => void) | undefined;

/**
 * Heap in use after a full collection, in MB. Jest does not run node with `--expose-gc`, so the
 * flag is set at run time and `gc` taken from a fresh context (V8 installs it there once set);
 * without a collection, garbage not yet swept would be counted as growth.
 */
export function heapUsedMB(): number {
  if (collect === undefined) {
    setFlagsFromString('--expose-gc');
    collect = runInNewContext('gc') as () => void;
  }
  collect();
  return process.memoryUsage().heapUsed / (1024 * 1024);
}
