import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const adapters = fileURLToPath(new URL('../../../adapters/', import.meta.url));

/** Every file under an adapter's test/ directory, as text. */
function testSources(adapter: string): string {
  const dir = join(adapters, adapter, 'test');
  let files: string[];
  try {
    files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
  } catch {
    return '';
  }
  return files.map((f) => readFileSync(join(dir, f), 'utf8')).join('\n');
}

describe('every adapter runs its contract suite', () => {
  const runtimes = readdirSync(adapters).filter((d) => d.startsWith('runtime-'));

  it('finds the runtime adapters', () => {
    expect(runtimes).toContain('runtime-memory');
  });

  it.each(runtimes)('%s calls runtimeContract from @kubelet-ts/conformance', (adapter) => {
    const text = testSources(adapter);
    expect(text).toMatch(/from '@kubelet-ts\/conformance'/);
    expect(text).toMatch(/\bruntimeContract\(/);
  });
});

describe('every source adapter runs the source fuzz contract', () => {
  const sources = readdirSync(adapters).filter((d) => d.startsWith('source-'));

  it('finds the source adapters', () => {
    expect(sources).toEqual(expect.arrayContaining(['source-file', 'source-http', 'source-etcd', 'source-server']));
  });

  it.each(sources)('%s calls sourceFuzzContract from @kubelet-ts/conformance', (adapter) => {
    const text = testSources(adapter);
    expect(text).toMatch(/from '@kubelet-ts\/conformance'/);
    expect(text).toMatch(/\bsourceFuzzContract\(/);
  });
});
