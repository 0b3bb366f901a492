import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AgentProcess } from './agent-process.js';
import { printedOnce } from './agent-logs.js';
import { AGENT_ENGINES } from './agent-engines.js';

/**
 * ConfigMaps and Secrets without an API server (issue 26), as `podman kube play` reads them: given
 * as documents beside the pod in the agent's --config directory, read by the pod as files and as
 * variables on each real engine; a ConfigMap changed on disk reaches the running container's
 * files; a pod whose Secret is missing waits, and starts once the Secret is written.
 */
describe.each(AGENT_ENGINES)('v1 ConfigMaps and Secrets beside the pod on $name, through the agent', (engine) => {
  const node = `e2e-objects-${engine.name.split(' ')[0]!.toLowerCase()}-${process.pid}`;
  let dir: string;
  let files: string;
  let agent: AgentProcess | undefined;
  let url: string;

  const configMap = (mode: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'web-config' }, data: { mode } });
  /** The documents of one file, as kubectl writes them: a JSON document per `---`. */
  const writeDocuments = (name: string, documents: readonly object[]) =>
    writeFile(join(dir, `${name}.yaml`), documents.map((d) => JSON.stringify(d)).join('\n---\n'));
  type Listed = {
    items: Array<{
      metadata: { name: string };
      status: { containerStatuses?: Array<{ state: Record<string, { reason?: string; message?: string }> }> };
    }>;
  };
  const stateOf = async (name: string) =>
    ((await (await fetch(`${url}/pods`)).json()) as Listed).items.find((p) => p.metadata.name === name)?.status.containerStatuses?.[0]
      ?.state;

  let busybox: string;
  const webPod = () => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web' },
    spec: {
      securityContext: { runAsUser: 1000, fsGroup: 2000 },
      containers: [
        {
          name: 'main',
          image: busybox,
          command: ['sh', '-c'],
          args: [
            'echo "MODE=$MODE PASS=$DB_password"; stat -L -c "SECRET %a %u %g" /run/creds/password; cat /run/creds/password; echo; ' +
              'while true; do echo "FILE=$(cat /etc/web/mode) SUB=$(cat /etc/app.mode)"; sleep 1; done',
          ],
          envFrom: [{ prefix: 'DB_', secretRef: { name: 'web-secret' } }],
          env: [{ name: 'MODE', valueFrom: { configMapKeyRef: { name: 'web-config', key: 'mode' } } }],
          volumeMounts: [
            { name: 'config', mountPath: '/etc/web' },
            { name: 'creds', mountPath: '/run/creds' },
            // One key as a file: bound as it was when the container was made, as the kubelet binds a subPath.
            { name: 'config', mountPath: '/etc/app.mode', subPath: 'mode' },
          ],
        },
      ],
      volumes: [
        { name: 'config', configMap: { name: 'web-config' } },
        { name: 'creds', secret: { secretName: 'web-secret' } },
      ],
    },
  });

  beforeAll(async () => {
    const prepared = await engine.prepare();
    busybox = prepared.busybox;
    dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-e2e-objects-'));
    files = await mkdtemp('/dev/shm/kubelet-ts-e2e-files-');
    await writeDocuments('web', [
      webPod(),
      configMap('fast'),
      { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'web-secret' }, data: { password: Buffer.from('s3cr3t').toString('base64') } },
    ]);
    // A pod whose Secret is not there yet.
    await writeDocuments('late', [
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'late' },
        spec: {
          containers: [
            {
              name: 'main',
              image: busybox,
              command: ['sh', '-c', 'echo "TOKEN=$TOKEN"; exec sleep 3600'],
              env: [{ name: 'TOKEN', valueFrom: { secretKeyRef: { name: 'late-secret', key: 'token' } } }],
            },
          ],
        },
      },
    ]);
    agent = new AgentProcess([
      ...prepared.flags,
      '--config',
      dir,
      '--volume-files-dir',
      files,
      '--hostname-override',
      node,
      '--sync-frequency',
      '1s',
      '--file-check-frequency',
      '1s',
    ]);
    url = await agent.serverUrl();
    await agent.until(() => agent!.events('ContainerStarted', 'web').length === 1, 'the container started', 60_000);
  }, 120_000);

  afterAll(async () => {
    await agent?.stop();
    await engine.cleanUp(node);
    await rm(dir, { recursive: true, force: true });
    await rm(files, { recursive: true, force: true });
  });

  it('gives the container the ConfigMap and the Secret as files and variables, the Secret 0400 to the pod’s user and fsGroup', async () => {
    const printed = await printedOnce(url, 'default/web/main', 'FILE=');
    expect(printed).toContain('MODE=fast PASS=s3cr3t');
    // 0400 with the fsGroup's read added, owned by the pod's runAsUser and fsGroup: readable by the non-root user.
    expect(printed).toContain('SECRET 440 1000 2000');
    expect(printed).toContain('\ns3cr3t\n');
    expect(printed).toContain('FILE=fast SUB=fast');
  });

  it('rewrites the running container’s files when the ConfigMap changes on disk, without restarting it', async () => {
    const id = agent!.events('ContainerStarted', 'web');
    await writeDocuments('web', [
      webPod(),
      configMap('slow'),
      { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'web-secret' }, data: { password: Buffer.from('s3cr3t').toString('base64') } },
    ]);
    const printed = await printedOnce(url, 'default/web/main', 'FILE=slow');
    // The volume's files change in place; a key bound by subPath keeps the version it was bound from.
    expect(printed).toContain('FILE=slow SUB=fast');
    expect(agent!.events('ContainerStarted', 'web')).toEqual(id);
    // The variable was read when the container was made, as the kubelet reads it.
    expect(printed).not.toContain('MODE=slow');
  });

  it('holds a pod whose Secret is missing, saying so, and starts it once the Secret is written beside it', async () => {
    let state = await stateOf('late');
    for (let i = 0; i < 150 && state?.['waiting']?.reason !== 'CreateContainerConfigError'; i++) {
      await new Promise((r) => setTimeout(r, 200));
      state = await stateOf('late');
    }
    expect(state?.['waiting']).toEqual({
      reason: 'CreateContainerConfigError',
      message: expect.stringContaining('secret "late-secret" not found'),
    });
    await writeDocuments('late-secret', [
      { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'late-secret' }, stringData: { token: 't0k3n' } },
    ]);
    expect(await printedOnce(url, 'default/late/main', 'TOKEN=')).toContain('TOKEN=t0k3n');
  });
});
