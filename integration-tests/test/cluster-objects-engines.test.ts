import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startControlPlane, type StartedControlPlane } from '@kubelet-ts/testkit';
import { AgentProcess } from './agent-process.js';
import { AGENT_ENGINES, type AgentEngine } from './agent-engines.js';
import { freePort, nodeFlags, until } from './cluster-helpers.js';
import { kubectlOk as kubectl } from './kubectl.js';

/**
 * ConfigMaps and Secrets from the API server for the pods it binds to the node (issue 45, part): read
 * with the node's own credentials (the Node authorizer lets it read those of its pods), into volumes
 * and variables, a change of a ConfigMap reaching the mounted volume within the refresh, a Secret's
 * files on a tmpfs, and a missing one holding only the containers that need it until it exists. On
 * Docker and on containerd, through the real kube-apiserver, read with kubectl.
 */

let cluster: StartedControlPlane;
let dir: string;
const k = (...args: string[]) => kubectl(cluster.kubeconfigPath, ...args);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-e2e-objects-'));
  cluster = await startControlPlane();
}, 240_000);

afterAll(async () => {
  await cluster?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe.each(AGENT_ENGINES)('ConfigMaps and Secrets from the API, on $name', (engine: AgentEngine) => {
  const short = engine.name.split(' ')[0]!.toLowerCase();
  const node = `objects-${short}-${process.pid}`;
  const ns = `objects-${short}`;
  let agent: AgentProcess | undefined;
  const kn = (...args: string[]) => k('-n', ns, ...args);
  const apply = async (name: string, object: unknown) => {
    const file = join(dir, `${ns}-${name}.json`);
    await writeFile(file, JSON.stringify(object));
    await k('apply', '-f', file);
  };

  beforeAll(async () => {
    const prepared = await engine.prepare();
    agent = new AgentProcess([
      ...prepared.flags,
      ...nodeFlags(await cluster.nodeKubeconfig(node), node, await freePort()),
      // kubectl exec reads what the pod sees: the API server's client certificate, trusted.
      '--client-ca-file',
      cluster.ca.certFile,
    ]);
    await agent.serverUrl();
    await until('the node Ready', async () =>
      (await k('get', 'node', node, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')) === 'True' ? true : undefined,
    );
    await k('create', 'namespace', ns);
    await kn('create', 'configmap', 'settings', '--from-literal=greeting=hello', '--from-literal=colour=blue');
    await kn('create', 'secret', 'generic', 'password', '--from-literal=password=s3cret');
    const container = (name: string, command: string, extra: Record<string, unknown> = {}) => ({
      name,
      image: prepared.busybox,
      imagePullPolicy: 'IfNotPresent',
      command: ['sh', '-c', command],
      ...extra,
    });
    await apply('reader', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'reader', namespace: ns },
      spec: {
        nodeName: node,
        automountServiceAccountToken: false,
        terminationGracePeriodSeconds: 1,
        volumes: [
          { name: 'settings', configMap: { name: 'settings' } },
          { name: 'password', secret: { secretName: 'password' } },
        ],
        containers: [
          container('main', 'sleep 3600', {
            env: [{ name: 'GREETING', valueFrom: { configMapKeyRef: { name: 'settings', key: 'greeting' } } }],
            envFrom: [{ prefix: 'S_', secretRef: { name: 'password' } }],
            volumeMounts: [
              { name: 'settings', mountPath: '/etc/settings' },
              { name: 'password', mountPath: '/etc/password' },
            ],
          }),
          // Needs a ConfigMap that is not there yet: it alone waits.
          container('later', 'sleep 3600', {
            env: [{ name: 'LATER', valueFrom: { configMapKeyRef: { name: 'made-later', key: 'value' } } }],
          }),
        ],
      },
    });
  }, 180_000);

  afterAll(async () => {
    await agent?.stop();
    await k('delete', 'namespace', ns, '--ignore-not-found', '--wait=false').catch(() => undefined);
    await k('delete', 'node', node, '--ignore-not-found').catch(() => undefined);
    await engine.cleanUp(node);
  });

  const statusOf = async (name: string) => {
    const pod = JSON.parse(await kn('get', 'pod', 'reader', '-o', 'json')) as {
      status: { containerStatuses?: Array<{ name: string; ready: boolean; state: { waiting?: { reason: string; message?: string } } }> };
    };
    return pod.status.containerStatuses?.find((c) => c.name === name);
  };

  it('mounts and reads them; one that is not there holds only the container that needs it, until it is made', async () => {
    await until('main running', async () => ((await statusOf('main'))?.ready === true ? true : undefined), 90_000);
    expect(
      await kn('exec', 'reader', '-c', 'main', '--', 'cat', '/etc/settings/greeting', '/etc/settings/colour', '/etc/password/password'),
    ).toBe('helloblues3cret');
    expect(await kn('exec', 'reader', '-c', 'main', '--', 'sh', '-c', 'echo "$GREETING $S_password"')).toBe('hello s3cret\n');
    // The Secret's files are on a tmpfs (never the disk), 0644: the API server writes the volume's
    // defaultMode (420) into every pod it serves, and the agent keeps to it, as the kubelet does.
    expect(await kn('exec', 'reader', '-c', 'main', '--', 'sh', '-c', 'awk \'$2 == "/etc/password" { print $3 }\' /proc/mounts')).toBe(
      'tmpfs\n',
    );
    expect(await kn('exec', 'reader', '-c', 'main', '--', 'stat', '-L', '-c', '%a', '/etc/password/password')).toBe('644\n');
    const waiting = await statusOf('later');
    expect(waiting?.state.waiting?.reason).toBe('CreateContainerConfigError');
    expect(waiting?.state.waiting?.message).toContain('made-later');
    await kn('create', 'configmap', 'made-later', '--from-literal=value=now');
    await until('later running', async () => ((await statusOf('later'))?.ready === true ? true : undefined), 60_000);
    expect(await kn('exec', 'reader', '-c', 'later', '--', 'sh', '-c', 'echo "$LATER"')).toBe('now\n');
  }, 180_000);

  it('a change of the ConfigMap reaches the mounted volume within the refresh; no value reaches the agent’s log', async () => {
    await kn(
      'create',
      'configmap',
      'settings',
      '--from-literal=greeting=bonjour',
      '--from-literal=colour=blue',
      '--dry-run=client',
      '-o',
      'yaml',
    ).then(async (yaml) => {
      const file = join(dir, `${ns}-settings.yaml`);
      await writeFile(file, yaml);
      await k('replace', '-f', file);
    });
    await until(
      'the new greeting in the volume',
      async () => ((await kn('exec', 'reader', '-c', 'main', '--', 'cat', '/etc/settings/greeting')) === 'bonjour' ? true : undefined),
      40_000,
    );
    // The Secret's value is in no line the agent logged.
    expect(agent!.lines.some((l) => JSON.stringify(l).includes('s3cret'))).toBe(false);
  }, 60_000);
});
