import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const LIB = fileURLToPath(new URL('../../../scripts/lib/engine.sh', import.meta.url));

/**
 * scripts/lib/engine.sh with two engines that are `sleep`s in a state folder of the test's own,
 * run as the scripts run it: each `bash` is one run (one `npm test`).
 */
describe('scripts/lib/engine.sh', () => {
  let state: string;
  // An engine NAME is a `sleep N`: its pidfile says whether it answers, and N is what its command line holds.
  const engines = `
    source ${JSON.stringify(LIB)}
    pidfile() { echo "$KUBELET_TS_STATE_DIR/$1.pid"; }
    answers() { [ -f "$(pidfile "$1")" ] && engine_pid_running "$(cat "$(pidfile "$1")")"; }
    first_answers() { answers first; }
    second_answers() { answers second; }
    teardown_first() { engine_kill "$(cat "$(pidfile first)" 2>/dev/null)" 6001; }
    teardown_second() { engine_kill "$(cat "$(pidfile second)" 2>/dev/null)" 6002; }
    start_first() { engine_start first "$(pidfile first)" "$KUBELET_TS_STATE_DIR/first.log" : sleep 6001; }
    start_second() { engine_start second "$(pidfile second)" "$KUBELET_TS_STATE_DIR/second.log" : sleep 6002; }`;
  const bash = (script: string) =>
    run('bash', ['-c', `set -euo pipefail\n${engines}\n${script}`], { env: { ...process.env, KUBELET_TS_STATE_DIR: state } });
  const pid = (engine: string) => Number(readFileSync(join(state, `${engine}.pid`), 'utf8'));
  const alive = (p: number) => {
    try {
      process.kill(p, 0);
      return !readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1]!.startsWith('Z');
    } catch {
      return false;
    }
  };

  beforeAll(async () => {
    state = await mkdtemp(join(tmpdir(), 'kubelet-ts-engine-lib-'));
  });

  afterAll(async () => {
    // A failed test may leave its sleeps; a pid that names another process now is not ours.
    for (const [engine, arg] of [
      ['first', '6001'],
      ['second', '6002'],
    ] as const) {
      if (!existsSync(join(state, `${engine}.pid`))) continue;
      const p = pid(engine);
      if (alive(p) && readFileSync(`/proc/${p}/cmdline`, 'utf8') === `sleep\0${arg}\0`) process.kill(p, 'SIGKILL');
    }
    await rm(state, { recursive: true, force: true });
  });

  it('stops at exit what the run started, and leaves running what an earlier run started', async () => {
    // An earlier run started `first` and ended without stopping it (killed, or it had no trap).
    await bash('start_first');
    const first = pid('first');
    expect(alive(first)).toBe(true);

    const { stdout } = await bash('trap stop_engines_started_here EXIT\nstart_first\nstart_second');
    expect(stdout).toContain('== first already answers');
    expect(stdout).toContain('== starting second');
    expect(stdout).toContain('== stopping second');
    expect(stdout).not.toContain('== stopping first');
    expect(alive(pid('second'))).toBe(false);
    expect(existsSync(join(state, 'second.started'))).toBe(false);
    expect(alive(first)).toBe(true);

    // Stopping it by hand stops it, whoever started it.
    await bash('engine_stop first');
    expect(alive(first)).toBe(false);
    expect(existsSync(join(state, 'first.started'))).toBe(false);
  });
});
