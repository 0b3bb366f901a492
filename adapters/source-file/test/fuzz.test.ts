import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sourceFuzzContract } from '@kubelet-ts/conformance';
import { FileManifestSource } from '../src/index.js';

/**
 * A real directory: the sentinel in a file of its own, each input written to `fuzz.yaml` by
 * rename, as editors save (a plain overwrite can be read half-written, which is a different test).
 * chokidar holds a rename's event for about 100 ms (to tell an atomic save from a delete), which
 * would make 20,000 publications take over half an hour; so each one is followed by `refresh()`,
 * the source's own "read now", and the watcher's reads come on top, racing with the next input as
 * they would in use. The watcher's own timing is tested in file-source.test.ts.
 */
sourceFuzzContract(
  'file',
  async () => {
    const dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-fuzz-file-'));
    const source = new FileManifestSource({ path: dir, debounceMs: 0, checkFrequencyMs: 600_000 });
    return {
      kind: 'document',
      sentinel: 'separate',
      async start(sink, sentinel) {
        await writeFile(join(dir, '00-sentinel.yaml'), sentinel);
        await source.start(sink);
      },
      async publish(bytes) {
        await writeFile(join(dir, '.fuzz.yaml.tmp'), bytes);
        await rename(join(dir, '.fuzz.yaml.tmp'), join(dir, 'fuzz.yaml'));
        await source.refresh();
      },
      async close() {
        await source.close();
        await rm(dir, { recursive: true, force: true });
      },
    };
  },
  { runs: { short: 400, long: 10_000 } },
);
