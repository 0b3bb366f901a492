import { describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { ENGINES_ENV_FILE, parseEnginesEnv } from '../src/engines-env.js';

const run = promisify(execFile);

/** What bash makes of the file when a script sources it, in a clean environment but `env`. */
async function bashReading(keys: readonly string[], env: Record<string, string>): Promise<Record<string, string>> {
  const script = `set -eu; source "$0"; for k in ${keys.join(' ')}; do printf '%s=%s\\n' "$k" "\${!k}"; done`;
  const { stdout } = await run('bash', ['-c', script, ENGINES_ENV_FILE], { env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', ...env } });
  return Object.fromEntries(
    stdout
      .trim()
      .split('\n')
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
}

describe('scripts/engines.env', () => {
  const text = readFileSync(ENGINES_ENV_FILE, 'utf8');

  it.each([
    ['the defaults', {}],
    ['a state folder of its own', { KUBELET_TS_STATE_DIR: '/srv/kts' }],
    [
      'folders, cgroup parent and busybox given one by one',
      {
        KUBELET_TS_CRI_DIR: '/a/cri',
        KUBELET_TS_PODMAN_DIR: '/b/pm',
        KUBELET_TS_CRI_CGROUP_PARENT: '/elsewhere',
        KUBELET_TS_BUSYBOX: '/opt/busybox',
      },
    ],
    ['an empty variable, which ${NAME:-default} treats as unset', { KUBELET_TS_STATE_DIR: '' }],
  ])('reads as bash sources it: %s', async (_, env: Record<string, string>) => {
    const ours = parseEnginesEnv(text, env);
    expect(Object.keys(ours)).toEqual(
      expect.arrayContaining([
        'CRI_SOCKET',
        'PODMAN_SOCKET',
        'DOCKER_SOCKET',
        'CRI_CGROUP_PARENT',
        'TEST_BUSYBOX_IMAGE',
        'TEST_PAUSE_IMAGE',
        'TEST_ETCD_IMAGE',
      ]),
    );
    expect(ours).toEqual(await bashReading(Object.keys(ours), env));
  });

  it('expands nested defaults from earlier lines and the environment', () => {
    expect(parseEnginesEnv('# c\n\nA=${X:-${B:-b}/a}\nC=${A}-${Y}\n', { Y: 'y' })).toEqual({ A: 'b/a', C: 'b/a-y' });
  });

  it.each([
    ['a quote', 'A="x"'],
    ['a space', 'A=x y'],
    ['$NAME without braces', 'A=$HOME/x'],
    ['another expansion', 'A=${B:=c}'],
    ['an unclosed reference', 'A=${B:-c'],
    ['a line that is no assignment', 'export A'],
  ])('refuses what bash might read differently: %s', (_, line) => {
    expect(() => parseEnginesEnv(line)).toThrow(/engines\.env line 1/);
  });
});
