import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1PodList } from '@kubelet-ts/source-server';
import { AgentProcess } from './agent-process.js';

/** The CLI's `--root-dir`: what the server was told survives SIGTERM and a new start (issue 27 item 1). */
describe('kubelet-ts CLI: --root-dir keeps the sources’ last good sets across a restart', () => {
  let root: string;
  let agent: AgentProcess | undefined;
  const start = (dir: string, node = 'restart-memory') =>
    new AgentProcess(['--runtime', 'memory', '--hostname-override', node, '--root-dir', dir, '--sync-frequency', '1s']);

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'kubelet-ts-cli-restart-'));
  });
  afterAll(async () => {
    agent?.kill();
    await agent?.exit;
    await rm(root, { recursive: true, force: true });
  });

  it('runs a POSTed pod again after the agent is stopped and started, listed as the server’s', async () => {
    agent = start(root);
    const url = await agent.serverUrl();
    const res = await fetch(`${url}/container`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ version: 'v1beta1', id: 'posted', containers: [{ name: 'main', image: 'busybox:1.36' }] }),
    });
    expect(res.status).toBe(201);
    await agent.until(() => agent!.events('ContainerStarted', 'posted').length === 1, 'the posted pod to start');
    expect((await agent.stop('SIGTERM')).code).toBe(0);
    const saved = JSON.parse(await readFile(join(root, 'sources', 'server.json'), 'utf8')) as { manifests: Array<{ id: string }> };
    expect(saved.manifests.map((m) => m.id)).toEqual(['posted']);

    agent = start(root);
    const again = await agent.serverUrl();
    // The in-memory engine went with the process: the pod is made again, from the kept set.
    await agent.until(() => agent!.events('ContainerStarted', 'posted').length === 1, 'the posted pod to start again');
    const list = (await (await fetch(`${again}/pods`)).json()) as V1PodList;
    expect(
      list.items.map((p) => [p.metadata['name'], (p.metadata['annotations'] as Record<string, string>)['kubelet-ts.io/source']]),
    ).toEqual([['posted', 'server']]);
    expect((await agent.stop('SIGTERM')).code).toBe(0);
  });

  it("does not run another configuration's kept set: started as another node on the same --root-dir, it says so and runs nothing", async () => {
    // What the test before kept: the server's set of node restart-memory.
    const saved = JSON.parse(await readFile(join(root, 'sources', 'server.json'), 'utf8')) as { owner: { node: string } };
    expect(saved.owner.node).toBe('restart-memory');
    agent = start(root, 'another-node');
    const url = await agent.serverUrl();
    await agent.until(
      () => agent!.lines.some((l) => String(l.msg).includes('was kept for another configuration')),
      'the refusal of the kept set',
    );
    const refusal = agent.lines.find((l) => String(l.msg).includes('was kept for another configuration'))!;
    expect(String(refusal.msg)).toContain('node restart-memory');
    expect(String(refusal.msg)).toContain('this agent is node another-node');
    // Two passes: nothing of the other node's set is made.
    await new Promise((r) => setTimeout(r, 2_500));
    expect(agent.events('ContainerStarted')).toEqual([]);
    expect(((await (await fetch(`${url}/pods`)).json()) as V1PodList).items).toEqual([]);
    expect((await agent.stop('SIGTERM')).code).toBe(0);
  });

  it('refuses to start on a --root-dir it cannot write, and says what to give instead', async () => {
    agent = start('/proc/kubelet-ts-nowhere');
    expect((await agent.exit).code).toBe(1);
    expect(agent.lines.map((l) => l.msg).join('\n')).toContain(
      "invalid configuration: the sources' last good sets cannot be kept in /proc/kubelet-ts-nowhere/sources",
    );
    expect(agent.lines.map((l) => l.msg).join('\n')).toContain('give --root-dir a directory this user can write');
  });
});
