import { describe, expect, it } from '@jest/globals';
import { checkedManifest } from '@kubelet-ts/conformance';
import { Labels, podUid } from '@kubelet-ts/core';
import { agentFixture, HOST } from './agent-fixture.js';
import { podListOf, settle, ScriptedSource } from './helpers.js';

/** A pod whose env reads its IP, its name, the node, a label and a limit, and whose args expand a variable. */
const downward = checkedManifest({
  id: 'web.team-a',
  namespace: 'team-a',
  labels: { app: 'web' },
  containers: [
    {
      name: 'main',
      image: 'busybox:1.36',
      entrypoint: ['sh', '-c'],
      command: ['echo $(GREETING) $$(GREETING) $(MISSING)'],
      cpuLimitMillis: 250,
      env: [
        { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
        { name: 'MY_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
        { name: 'MY_UID', valueFrom: { fieldRef: { fieldPath: 'metadata.uid' } } },
        { name: 'MY_NODE', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
        { name: 'APP', valueFrom: { fieldRef: { fieldPath: "metadata.labels['app']" } } },
        { name: 'CPU_M', valueFrom: { resourceFieldRef: { resource: 'limits.cpu', divisor: 1 } } },
        { name: 'GREETING', value: 'hello-$(MY_NAME)-at-$(POD_IP)' },
      ],
    },
  ],
});

describe('the downward API and $(VAR) expansion, through the agent', () => {
  const f = agentFixture();

  it("gives a container its pod's IP from the sandbox the pass made, its fields, and its args expanded", async () => {
    const k = f.kubelet([new ScriptedSource('a', { initial: [downward] })]);
    await k.start();
    await settle();
    const sandbox = f.runtime.sandboxSnapshot().find((s) => s.labels[Labels.sandbox] === 'web.team-a');
    expect(sandbox?.ip).toMatch(/^10\.88\.\d+\.\d+$/);
    const { spec } = await f.runtime.inspect(f.one('web.team-a', 'main').id);
    expect(spec.env).toEqual({
      POD_IP: sandbox?.ip,
      MY_NAME: 'web',
      MY_UID: podUid(downward, { node: HOST, source: 'a' }),
      MY_NODE: HOST,
      APP: 'web',
      CPU_M: '250',
      GREETING: `hello-web-at-${sandbox?.ip}`,
    });
    // `$$` is a literal `$`; a variable that is not defined stays as written.
    expect(spec.command).toEqual([`echo hello-web-at-${sandbox?.ip} $(GREETING) $(MISSING)`]);
    expect(spec.entrypoint).toEqual(['sh', '-c']);
  });

  it('gives a restarted container the same IP, from the ready sandbox the pass lists, and shows it in /pods', async () => {
    const k = f.kubelet([new ScriptedSource('a', { initial: [downward] })]);
    await k.start();
    await settle();
    const ip = f.runtime.sandboxSnapshot().find((s) => s.labels[Labels.sandbox] === 'web.team-a')?.ip;
    f.runtime.exit(f.one('web.team-a', 'main').id, 1);
    await settle();
    await k.sync();
    const restarted = f.of('web.team-a').find((c) => c.state === 'running');
    expect(restarted?.labels[Labels.restartCount]).toBe('1');
    expect((await f.runtime.inspect(restarted!.id)).spec.env['POD_IP']).toBe(ip);
    const list = await podListOf(k);
    expect(list.items.find((p) => p.metadata.name === 'web')?.status.podIP).toBe(ip);
  });
});
