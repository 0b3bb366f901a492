import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Temporary directories made as a suite needs them (a runtime's volume root per runtime a contract
 * makes) and all removed at its end: `make()` one, `removeAll()` in `afterAll`.
 */
export class TempDirs {
  private readonly made: string[] = [];

  constructor(private readonly prefix: string) {}

  async make(): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), this.prefix));
    this.made.push(dir);
    return dir;
  }

  async removeAll(): Promise<void> {
    await Promise.all(this.made.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
  }
}
