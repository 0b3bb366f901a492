import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AgentProcess, runCli } from './agent-process.js';

const TOKEN = 'logs-e2e-token-0123456789abcdef012345';
const auth = { authorization: `Bearer ${TOKEN}` };

/** `kubelet-ts logs` as a process, with the token. */
const logs = (args: readonly string[]) => runCli(['logs', ...args], { KUBELET_TS_AUTH_TOKEN: TOKEN });

describe('kubelet-ts CLI: the agent process serves container logs and its host log directory', () => {
  let agent: AgentProcess;
  let url: string;
  let logDir: string;

  beforeAll(async () => {
    logDir = await mkdtemp(join(tmpdir(), 'kubelet-ts-host-log-dir-'));
    await writeFile(join(logDir, 'agent.log'), 'from the host\n');
    agent = new AgentProcess([
      '--runtime',
      'memory',
      '--hostname-override',
      'logs-e2e',
      '--auth-token',
      TOKEN,
      '--host-log-dir',
      logDir,
      '--sync-frequency',
      '1s',
    ]);
    url = await agent.serverUrl();
    const posted = await fetch(`${url}/container`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ version: 'v1beta1', id: 'web', containers: [{ name: 'main', image: 'busybox:1.36' }] }),
    });
    expect(posted.status).toBe(201);
    await agent.until(() => agent.events('ContainerStarted', 'web').length === 1, 'the posted pod to start');
  });

  afterAll(async () => {
    await agent.stop();
    await rm(logDir, { recursive: true, force: true });
  });

  it('answers /containerLogs for a pod it runs (its in-memory container printed nothing), and 404 naming what it does not know', async () => {
    const res = await fetch(`${url}/containerLogs/default/web/main?follow=false`, { headers: auth });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(await res.text()).toBe('');
    const unknown = await fetch(`${url}/containerLogs/default/web/sidecar`, { headers: auth });
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: string }).error).toBe(
      'container "sidecar" is not in pod "default/web" (its containers: main)',
    );
    expect((await fetch(`${url}/containerLogs/default/web/main`)).status).toBe(401);
  });

  it('serves --host-log-dir under /logs/, behind the token', async () => {
    expect(await (await fetch(`${url}/logs/`, { headers: auth })).text()).toBe('agent.log\n');
    expect(await (await fetch(`${url}/logs/agent.log`, { headers: auth })).text()).toBe('from the host\n');
    expect((await fetch(`${url}/logs/agent.log`)).status).toBe(401);
  });

  it('is read by `kubelet-ts logs`, which finds the only container through /pods', async () => {
    expect(await logs(['web', '--server', url])).toEqual({ code: 0, stdout: '', stderr: '' });
    expect(await logs(['nope', '--server', url])).toEqual({
      code: 1,
      stdout: '',
      stderr: 'kubelet-ts logs: pod "default/nope" is not on this agent (see its /pods)\n',
    });
  });
});
