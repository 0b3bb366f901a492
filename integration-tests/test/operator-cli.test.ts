import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AgentProcess, runCli } from './agent-process.js';
import { AGENT_ENGINES } from './agent-engines.js';

const TOKEN = 'operator-e2e-token-0123456789abcdef0123';
const idle = 'trap "exit 0" TERM; while true; do sleep 1; done';
const docker = AGENT_ENGINES.find((e) => e.name === 'Docker')!;

/** A client command as a person runs it, against the agent. */
const cli = (url: string, args: readonly string[], token = TOKEN) => runCli([...args, '--server', url], { KUBELET_TS_AUTH_TOKEN: token });

/** A table's rows as their cells (columns are three or more spaces apart, as kubectl pads them). */
const rows = (stdout: string) =>
  stdout
    .trimEnd()
    .split('\n')
    .map((line) => line.trim().split(/ {3,}/));

describe("the operator's command line against an agent process on Docker (issue 25)", () => {
  const node = `e2e-operator-${process.pid}`;
  let dir: string;
  let agent: AgentProcess | undefined;
  let url: string;

  beforeAll(async () => {
    const { flags, busybox } = await docker.prepare();
    dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-e2e-operator-'));
    await writeFile(
      join(dir, 'web.yaml'),
      JSON.stringify({ version: 'v1beta1', id: 'web', containers: [{ name: 'main', image: busybox, command: ['sh', '-c', idle] }] }),
    );
    // A v1 pod of another namespace whose container keeps failing.
    await writeFile(
      join(dir, 'db.yaml'),
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'db', namespace: 'shop', labels: { tier: 'data' } },
        spec: { containers: [{ name: 'postgres', image: busybox, command: ['sh', '-c', 'echo no data dir >&2; exit 1'] }] },
      }),
    );
    await writeFile(join(dir, 'bad.yaml'), JSON.stringify({ version: 'v1beta1', id: 'bad', containers: [{ name: 'x' }] }));
    agent = new AgentProcess([...flags, '--config', dir, '--hostname-override', node, '--auth-token', TOKEN, '--sync-frequency', '1s']);
    url = await agent.serverUrl();
    await agent.until(
      () => agent!.events('ContainerStarted', 'web').length >= 1 && agent!.events('ContainerStarted', 'db.shop').length >= 2,
      'web running and db failed twice',
      90_000,
    );
  }, 150_000);

  afterAll(async () => {
    await agent?.stop();
    await docker.cleanUp(node);
    await rm(dir, { recursive: true, force: true });
  });

  it("get pods: kubectl's columns, one namespace or all, wide, and JSON a parser reads", async () => {
    const got = await cli(url, ['get', 'pods']);
    expect(got.code).toBe(0);
    const [head, web, ...rest] = rows(got.stdout);
    expect(head).toEqual(['NAME', 'READY', 'STATUS', 'RESTARTS', 'AGE']);
    expect(web!.slice(0, 4)).toEqual(['web', '1/1', 'Running', '0']);
    expect(web![4]).toMatch(/^\d+s$/);
    expect(rest).toEqual([]);
    const shop = rows((await cli(url, ['get', 'pods', '-n', 'shop'])).stdout);
    expect(shop[1]![0]).toBe('db');
    expect(shop[1]![1]).toBe('0/1');
    expect(['CrashLoopBackOff', 'Error', 'Running', 'ContainerCreating']).toContain(shop[1]![2]);
    expect(shop[1]![3]).toMatch(/^[1-9]\d* \(\d+s ago\)$/);
    const all = rows((await cli(url, ['get', 'pods', '-A', '-o', 'wide'])).stdout);
    expect(all[0]).toEqual(['NAMESPACE', 'NAME', 'READY', 'STATUS', 'RESTARTS', 'AGE', 'IP', 'NODE']);
    expect(
      all
        .slice(1)
        .map((r) => `${r[0]}/${r[1]}`)
        .sort(),
    ).toEqual(['default/web', 'shop/db']);
    expect(all.slice(1).every((r) => r[7] === node)).toBe(true);
    const json = JSON.parse((await cli(url, ['get', 'pods', '-A', '-o', 'json', '-l', 'tier=data'])).stdout) as {
      kind: string;
      items: Array<{ metadata: { name: string; namespace: string }; status: { phase: string } }>;
    };
    expect(json.kind).toBe('PodList');
    expect(json.items.map((p) => `${p.metadata.namespace}/${p.metadata.name}`)).toEqual(['shop/db']);
  });

  it("get containers: crictl's columns, the running container of each pod", async () => {
    const got = rows((await cli(url, ['get', 'containers', '-A'])).stdout);
    expect(got[0]).toEqual(['CONTAINER', 'IMAGE', 'CREATED', 'STATE', 'NAME', 'ATTEMPT', 'POD ID', 'POD']);
    const web = got.find((r) => r[7] === 'web')!;
    expect(web[0]).toMatch(/^[0-9a-f]{13}$/);
    expect(web.slice(3, 6)).toEqual(['Running', 'main', '0']);
  });

  it('get events: what the agent did, a failing pod as Warning BackOff, and the rejected manifest on the node', async () => {
    await agent!.until(() => agent!.events('BackOff', 'db.shop').length >= 1, 'a back-off of db', 60_000);
    const got = await cli(url, ['get', 'events', '-A']);
    expect(got.code).toBe(0);
    const table = rows(got.stdout);
    expect(table[0]).toEqual(['NAMESPACE', 'LAST SEEN', 'TYPE', 'REASON', 'OBJECT', 'MESSAGE']);
    expect(table.some((r) => r[0] === 'default' && r[2] === 'Normal' && r[3] === 'Started' && r[4] === 'pod/web')).toBe(true);
    expect(table.some((r) => r[0] === 'shop' && r[2] === 'Warning' && r[3] === 'BackOff' && r[4] === 'pod/db')).toBe(true);
    expect(table.some((r) => r[3] === 'ManifestRejected' && r[4] === `node/${node}` && /bad\.yaml/.test(r[5] ?? ''))).toBe(true);
    const json = JSON.parse((await cli(url, ['get', 'events', '-n', 'shop', '-o', 'json'])).stdout) as {
      items: Array<{ involvedObject: { name: string } }>;
    };
    expect(json.items.length).toBeGreaterThan(0);
    expect(json.items.every((e) => e.involvedObject.name === 'db')).toBe(true);
  });

  it('get sources: the file source, its manifests, and the one it rejected with the field', async () => {
    const got = await cli(url, ['get', 'sources']);
    expect(got.code).toBe(0);
    const [head, file] = rows(got.stdout);
    expect(head).toEqual(['NAME', 'SEEN', 'MANIFESTS', 'STATUS']);
    expect(file!.slice(0, 3)).toEqual(['file', 'yes', '2']);
    expect(got.stdout).toMatch(/bad\.yaml.*image/);
  });

  it("describe pod: kubectl's layout, its container's state and the pod's events", async () => {
    const got = await cli(url, ['describe', 'pod', 'web']);
    expect(got.code).toBe(0);
    expect(got.stdout).toMatch(/^Name: +web$/m);
    expect(got.stdout).toMatch(/^Namespace: +default$/m);
    expect(got.stdout).toMatch(new RegExp(`^Node: +${node}`, 'm'));
    expect(got.stdout).toMatch(/^Status: +Running$/m);
    expect(got.stdout).toMatch(/^ {2}main:$/m);
    expect(got.stdout).toMatch(/^ {4}State: +Running$/m);
    expect(got.stdout).toMatch(/^Events:$/m);
    expect(got.stdout).toMatch(/Normal +Started/);
    const missing = await cli(url, ['describe', 'pod', 'nope']);
    expect(missing.code).toBe(1);
  });

  it('says what is wrong with one line and an exit code: 3 for a refused token, 2 for no agent', async () => {
    const refused = await cli(url, ['get', 'pods'], 'not-the-token-0123456789abcdef0123456');
    expect(refused.code).toBe(3);
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    const unreachable = await runCli(['get', 'pods', '--server', 'http://127.0.0.1:1']);
    expect(unreachable.code).toBe(2);
    expect(unreachable.stderr.trim().split('\n')).toHaveLength(1);
  });
});
