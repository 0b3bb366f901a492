import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { isIPv4 } from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AgentProcess } from './agent-process.js';
import { printedOnce, writeV1Pod } from './agent-logs.js';
import { AGENT_ENGINES } from './agent-engines.js';
import { kubectl } from './kubectl.js';
import { KubeConfig, Watch } from '@kubernetes/client-node';

/**
 * The downward API, `$(VAR)` expansion and probes on the pod's IP (issue 26) on each real engine,
 * through the agent process: a v1 Pod's container prints what its env and args became, `/pods`
 * shows the pod's IP, the one the container read, and a pod is made ready by probing a port it
 * does not publish.
 */
describe.each(AGENT_ENGINES)("v1 env valueFrom, $(VAR), probes on the pod's IP and sysctls on $name, through the agent", (engine) => {
  const node = `e2e-downward-${engine.name.split(' ')[0]!.toLowerCase()}-${process.pid}`;
  let dir: string;
  let agent: AgentProcess | undefined;
  let url: string;

  const writePod = (name: string, spec: object, metadata: object = {}) => writeV1Pod(dir, name, spec, metadata);

  beforeAll(async () => {
    const { flags, busybox, etcd } = await engine.prepare();
    dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-e2e-downward-'));
    const field = (fieldPath: string) => ({ valueFrom: { fieldRef: { fieldPath } } });
    await writePod(
      'downward',
      {
        containers: [
          {
            name: 'main',
            image: busybox,
            command: ['sh', '-c'],
            // `$POD_IP` is the shell's; `$(GREETING)` the agent's, and `$$(GREETING)` its escape.
            args: [
              'echo "POD_IP=$POD_IP NAME=$MY_NAME NS=$MY_NS NODE=$MY_NODE APP=$APP CPU_M=$CPU_M MEM_MI=$MEM_MI"; ' +
                "echo 'ARG=$(GREETING) ESCAPED=$$(GREETING)'; exec sleep 3600",
            ],
            resources: { limits: { cpu: '250m', memory: '64Mi' } },
            env: [
              { name: 'POD_IP', ...field('status.podIP') },
              { name: 'MY_NAME', ...field('metadata.name') },
              { name: 'MY_NS', ...field('metadata.namespace') },
              { name: 'MY_NODE', ...field('spec.nodeName') },
              { name: 'APP', ...field("metadata.labels['app']") },
              { name: 'CPU_M', valueFrom: { resourceFieldRef: { resource: 'limits.cpu', divisor: '1m' } } },
              { name: 'MEM_MI', valueFrom: { resourceFieldRef: { resource: 'limits.memory', divisor: '1Mi' } } },
              { name: 'GREETING', value: 'hello-$(MY_NAME)' },
            ],
          },
        ],
      },
      { namespace: 'team-a', labels: { app: 'web' } },
    );
    // A readiness probe of a port that is not published: the agent dials the pod's IP, as the kubelet does.
    await writePod('probed', {
      containers: [
        {
          name: 'web',
          image: busybox,
          command: ['sh', '-c', 'mkdir -p /www; echo ok > /www/ready.html; exec httpd -f -p 8080 -h /www'],
          ports: [{ containerPort: 8080 }],
          readinessProbe: { httpGet: { path: '/ready.html', port: 8080 }, periodSeconds: 1 },
        },
      ],
    });
    // gRPC probes on the pod's IP (the Kubernetes documentation's etcd-with-grpc): the server's health
    // makes it ready; a service etcd does not know fails, and with a high threshold kills nothing.
    await writePod('grpc', {
      containers: [
        {
          name: 'etcd',
          image: etcd,
          ports: [{ containerPort: 2379 }],
          readinessProbe: { grpc: { port: 2379 }, periodSeconds: 1 },
          livenessProbe: { grpc: { port: 2379, service: 'no-such-service' }, periodSeconds: 1, failureThreshold: 1000 },
        },
      ],
    });
    // A pod's dnsConfig added to the host's resolver (--resolv-conf below), as the kubelet merges them.
    await writePod('resolver', {
      dnsConfig: { nameservers: ['192.0.2.53'], searches: ['extra.example'], options: [{ name: 'ndots', value: '3' }] },
      containers: [{ name: 'main', image: busybox, command: ['sh', '-c', 'cat /etc/resolv.conf; echo END; exec sleep 3600'] }],
    });
    await writeFile(join(dir, '.resolv.conf'), 'nameserver 10.0.0.2\nsearch host.example\noptions timeout:2\n');
    // One process namespace for the pod, and a hostname of its own.
    await writePod('shared', {
      hostname: 'named-host',
      shareProcessNamespace: true,
      containers: [
        { name: 'sleeper', image: busybox, command: ['sleep', '3601'] },
        { name: 'looker', image: busybox, command: ['sh', '-c', 'sleep 1; hostname; ps; exec sleep 3600'] },
      ],
    });
    // The pod's sysctls (safe ones), read by each of its containers.
    const readSysctls = ['sh', '-c', 'cat /proc/sys/net/ipv4/ip_local_port_range /proc/sys/kernel/shm_rmid_forced; exec sleep 3600'];
    await writePod('tuned', {
      securityContext: {
        sysctls: [
          { name: 'net.ipv4.ip_local_port_range', value: '40000 50000' },
          { name: 'kernel/shm_rmid_forced', value: '1' },
        ],
      },
      containers: [
        { name: 'one', image: busybox, command: readSysctls },
        { name: 'two', image: busybox, command: readSysctls },
      ],
    });
    agent = new AgentProcess([
      ...flags,
      ...['--config', dir, '--hostname-override', node, '--sync-frequency', '1s', '--resolv-conf', join(dir, '.resolv.conf')],
    ]);
    url = await agent.serverUrl();
    await agent.until(() => agent!.events('ContainerStarted', 'downward.team-a').length === 1, 'the container started', 60_000);
  }, 120_000);

  afterAll(async () => {
    await agent?.stop();
    await engine.cleanUp(node);
    await rm(dir, { recursive: true, force: true });
  });

  it('gives the container its pod’s IP, fields and limits, its args expanded; /pods shows the same IP', async () => {
    const printed = await printedOnce(url, 'team-a/downward/main', 'ESCAPED=');
    const podIP = /POD_IP=(\S*)/.exec(printed)?.[1] ?? '';
    expect(isIPv4(podIP)).toBe(true);
    expect(podIP.startsWith('127.')).toBe(false);
    expect(printed).toContain(`NAME=downward NS=team-a NODE=${node} APP=web CPU_M=250 MEM_MI=64`);
    expect(printed).toContain('ARG=hello-downward ESCAPED=$(GREETING)');
    const pods = (await (await fetch(`${url}/pods`)).json()) as {
      items: Array<{ metadata: { name: string }; status: { podIP?: string } }>;
    };
    expect(pods.items.find((p) => p.metadata.name === 'downward')?.status.podIP).toBe(podIP);
  });

  it('serves /pods to clients that are not ours: kubectl get --raw reads the list, @kubernetes/client-node watches it', async () => {
    type Listed = { kind: string; items: Array<{ kind: string; metadata: { name: string }; status: { phase?: string } }> };
    const listed = JSON.parse((await kubectl(['get', '--raw', '/pods', '--server', url])).stdout) as Listed;
    expect(listed.kind).toBe('PodList');
    const names = listed.items.map((p) => p.metadata.name).sort();
    expect(names).toEqual(expect.arrayContaining(['downward', 'grpc', 'probed', 'resolver', 'shared', 'tuned']));
    // The watch's first batch (the pods now, ADDED, written as one chunk) read line by line by the client.
    const config = new KubeConfig();
    config.loadFromOptions({
      clusters: [{ name: 'agent', server: url, skipTLSVerify: true }],
      users: [{ name: 'anyone' }],
      contexts: [{ name: 'agent', cluster: 'agent', user: 'anyone' }],
      currentContext: 'agent',
    });
    const added: string[] = [];
    let ended: unknown;
    const watching = await new Watch(config).watch(
      '/pods',
      {},
      (type, pod: { kind: string; metadata: { name: string } }) => {
        expect(pod.kind).toBe('Pod');
        if (type === 'ADDED') added.push(pod.metadata.name);
      },
      (error) => (ended = error ?? 'ended'),
    );
    try {
      for (const deadline = Date.now() + 10_000; added.length < names.length && Date.now() < deadline; )
        await new Promise((r) => setTimeout(r, 50));
      expect(added.sort()).toEqual(names);
      expect(ended).toBeUndefined();
    } finally {
      watching.abort();
    }
  });

  it("gives a pod's containers its dnsConfig added to the host's resolver (--resolv-conf)", async () => {
    const printed = await printedOnce(url, 'default/resolver/main', 'END');
    const lines = printed
      .split('\n')
      .map((l) => l.trim().split(/\s+/).join(' '))
      .filter((l) => /^(nameserver|search|options) /.test(l));
    expect(lines.sort()).toEqual([
      'nameserver 10.0.0.2',
      'nameserver 192.0.2.53',
      'options timeout:2 ndots:3',
      'search host.example extra.example',
    ]);
  });

  it('gives a pod its spec.hostname, and with shareProcessNamespace one process namespace for its containers', async () => {
    const printed = await printedOnce(url, 'default/shared/looker', 'sleep 3601');
    expect(printed.split('\n')[0]).toBe('named-host');
    // The other container's process, seen from this one.
    expect(printed).toContain('sleep 3601');
  });

  it("sets a pod's sysctls where each of its containers reads them", async () => {
    for (const container of ['one', 'two']) {
      const printed = await printedOnce(url, `default/tuned/${container}`, '\n1');
      expect(printed.split('\n').map((l) => l.trim().split(/\s+/).join(' '))).toEqual(['40000 50000', '1', '']);
    }
    // The same log route read by a client that is not ours: the runtime's block read, whole and with times.
    const whole = await kubectl(['get', '--raw', '/containerLogs/default/tuned/one', '--server', url]);
    expect(whole.stdout).toBe(await printedOnce(url, 'default/tuned/one', '\n1'));
    const stamped = await kubectl(['get', '--raw', '/containerLogs/default/tuned/one?timestamps=true&tailLines=1', '--server', url]);
    expect(stamped.stdout).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z 1\n$/);
  });

  it("makes a pod ready by a readiness probe of a port it does not publish, dialled on the pod's IP", async () => {
    type Listed = {
      items: Array<{ metadata: { name: string }; status: { podIP?: string; containerStatuses?: Array<{ ready: boolean }> } }>;
    };
    let probed: Listed['items'][number] | undefined;
    for (let i = 0; i < 100; i++) {
      probed = ((await (await fetch(`${url}/pods`)).json()) as Listed).items.find((p) => p.metadata.name === 'probed');
      if (probed?.status.containerStatuses?.[0]?.ready === true) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(probed?.status.containerStatuses?.[0]?.ready).toBe(true);
    expect(isIPv4(probed?.status.podIP ?? '')).toBe(true);
    // A probe that ran before httpd listened may have failed, as on a kubelet: it dialled the pod's IP too.
    for (const failed of agent!.events('ProbeFailed', 'probed'))
      expect(String(failed['msg'])).toContain(`http://${probed?.status.podIP}:8080/`);
  });

  it("makes a pod ready by a gRPC health check on the pod's IP, and fails one of a service the server does not know", async () => {
    type Listed = {
      items: Array<{ metadata: { name: string }; status: { podIP?: string; containerStatuses?: Array<{ ready: boolean }> } }>;
    };
    const unknownService = () =>
      agent!
        .events('ProbeFailed', 'grpc')
        .map((e) => String(e['msg']))
        .filter((m) => m.includes('health rpc probe failed'));
    let pod: Listed['items'][number] | undefined;
    for (const deadline = Date.now() + 60_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 250))) {
      pod = ((await (await fetch(`${url}/pods`)).json()) as Listed).items.find((p) => p.metadata.name === 'grpc');
      if (pod?.status.containerStatuses?.[0]?.ready === true && unknownService().length > 0) break;
    }
    expect(pod?.status.containerStatuses?.[0]?.ready).toBe(true);
    const podIP = pod?.status.podIP ?? '';
    expect(isIPv4(podIP)).toBe(true);
    // Before etcd listened, a probe may have found no connection; once it did, the unknown service fails.
    expect(unknownService()[0]).toMatch(
      new RegExp(
        `^liveness probe grpc ${podIP.replaceAll('.', '\\.')}:2379 service "no-such-service" failed \\(\\d+/1000\\): error: health rpc probe failed: unknown service`,
      ),
    );
    // The readiness probe dials the same address; any failure it had was before etcd listened.
    for (const message of agent!
      .events('ProbeFailed', 'grpc')
      .map((e) => String(e['msg']))
      .filter((m) => m.startsWith('readiness')))
      expect(message).toContain(`grpc ${podIP}:2379 failed`);
  });
});
