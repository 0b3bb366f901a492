import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AgentProcess, runCli } from './agent-process.js';
import { AGENT_ENGINES } from './agent-engines.js';

const TOKEN = 'previous-e2e-token-0123456789abcdef0123';
const auth = { authorization: `Bearer ${TOKEN}` };
// The first run leaves a mark in the pod's volume and crashes; the restart finds it and stays up.
const crashOnce =
  'trap "exit 0" TERM; if [ -e /data/ran ]; then echo second run; else touch /data/ran; echo first run; echo its last words >&2; exit 1; fi; while true; do sleep 1; done';

/** `kubelet-ts logs` as a process, with the token. */
const logs = (args: readonly string[]) => runCli(['logs', ...args], { KUBELET_TS_AUTH_TOKEN: TOKEN });

describe.each(AGENT_ENGINES)('previous=true on $name: the run before a restart, as the engine kept it (issue 22)', (engine) => {
  const node = `e2e-previous-${engine.name.split(' ')[0]!.toLowerCase()}-${process.pid}`;
  let dir: string;
  let agent: AgentProcess | undefined;
  let url: string;

  beforeAll(async () => {
    const { flags, busybox } = await engine.prepare();
    dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-e2e-previous-'));
    await writeFile(
      join(dir, 'crash.yaml'),
      JSON.stringify({
        version: 'v1beta1',
        id: 'crash',
        volumes: [{ name: 'data' }],
        containers: [
          { name: 'main', image: busybox, command: ['sh', '-c', crashOnce], volumeMounts: [{ name: 'data', mountPath: '/data' }] },
        ],
      }),
    );
    agent = new AgentProcess([
      ...flags,
      '--config',
      dir,
      '--hostname-override',
      node,
      '--auth-token',
      TOKEN,
      '--sync-frequency',
      '1s',
      '--file-check-frequency',
      '500ms',
    ]);
    url = await agent.serverUrl();
    await agent.until(() => agent!.events('ContainerStarted', 'crash').length === 2, 'the crashed container restarted', 60_000);
  }, 120_000);

  afterAll(async () => {
    await agent?.stop();
    await engine.cleanUp(node);
    await rm(dir, { recursive: true, force: true });
  });

  const read = async (query: string) => {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const res = await fetch(`${url}/containerLogs/default/crash/main?${query}`, { headers: auth });
      const body = await res.text();
      // The restarted run prints as soon as it starts; an engine may take a moment to have it.
      if ((res.status === 200 && body !== '') || Date.now() > deadline) return { status: res.status, body };
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };

  it('serves the current run by default and the crashed run with previous=true, both streams', async () => {
    expect(await read('')).toEqual({ status: 200, body: 'second run\n' });
    const previous = await read('previous=true');
    expect(previous.status).toBe(200);
    // Two pipes: the engine may have stamped stderr's line first.
    expect(previous.body.split('\n').sort()).toEqual(['', 'first run', 'its last words']);
  });

  it('is read by `kubelet-ts logs --previous` on the real engine', async () => {
    const out = await logs(['crash', '--previous', '--server', url]);
    expect({ code: out.code, stderr: out.stderr, lines: out.stdout.split('\n').sort() }).toEqual({
      code: 0,
      stderr: '',
      lines: ['', 'first run', 'its last words'],
    });
    expect(await logs(['crash', 'main', '--server', url, '--tail', '1'])).toEqual({ code: 0, stdout: 'second run\n', stderr: '' });
  });
});
