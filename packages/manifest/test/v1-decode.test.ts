import { describe, expect, it } from '@jest/globals';
import { specHashes } from '@kubelet-ts/core';
import { parseManifests } from '../src/parse.js';
import { toV1Pod } from '../src/v1/to-v1.js';
import { IGNORED_V1_FIELDS } from '../src/v1/fields.js';
import { accepted, app, pod, refused } from './v1-pod-fixture.js';

describe('v1 Pod → domain manifest, row by row of docs/MANIFESTS.md’s table', () => {
  it('metadata.name is the id; a namespace other than default follows it; uid is the uuid; labels and annotations are kept', () => {
    expect(accepted(pod()).id).toBe('web');
    const m = accepted(pod({}, {}, { namespace: 'kube-system', uid: '7f3c-11', labels: { app: 'web' }, annotations: { note: 'a b c' } }));
    expect(m).toMatchObject({
      id: 'web.kube-system',
      namespace: 'kube-system',
      uuid: '7f3c-11',
      labels: { app: 'web' },
      annotations: { note: 'a b c' },
    });
    expect(accepted(pod({}, {}, { namespace: 'default' }))).toMatchObject({ id: 'web', namespace: 'default' });
  });

  it('metadata.deletionTimestamp and deletionGracePeriodSeconds mark the pod Terminating, and toV1Pod writes them back', () => {
    const marked = pod({}, {}, { deletionTimestamp: '2026-12-06T10:00:00.5+01:00', deletionGracePeriodSeconds: 2 });
    const m = accepted(marked);
    expect(m).toMatchObject({ deletionTimestamp: '2026-12-06T10:00:00.5+01:00', deletionGracePeriodSeconds: 2 });
    expect(toV1Pod(m).metadata).toMatchObject({ deletionTimestamp: '2026-12-06T10:00:00.5+01:00', deletionGracePeriodSeconds: 2 });
    // The mark is not what runs: the containers' spec hashes are those of the pod unmarked.
    expect(specHashes(m)).toEqual(specHashes(accepted(pod())));
  });

  it('command is the entrypoint and args the 2014 command (Docker Cmd)', () => {
    expect(app(accepted(pod({ command: ['nginx'], args: ['-g', 'daemon off;'] })))).toMatchObject({
      entrypoint: ['nginx'],
      command: ['-g', 'daemon off;'],
    });
  });

  it('workingDir, env values, imagePullPolicy are as written', () => {
    expect(
      app(accepted(pod({ workingDir: '/srv', env: [{ name: 'A', value: '1' }, { name: 'B' }], imagePullPolicy: 'Never' }))),
    ).toMatchObject({
      workingDir: '/srv',
      env: [
        { name: 'A', value: '1' },
        { name: 'B', value: '' },
      ],
      imagePullPolicy: 'Never',
    });
  });

  it('a port without hostPort is not published; hostPort, hostIP, protocol and name are kept', () => {
    expect(
      app(
        accepted(
          pod({ ports: [{ containerPort: 80 }, { name: 'dns', containerPort: 53, hostPort: 5353, hostIP: '127.0.0.1', protocol: 'UDP' }] }),
        ),
      )?.ports,
    ).toEqual([
      { containerPort: 80, protocol: 'TCP' },
      { name: 'dns', containerPort: 53, hostPort: 5353, hostIP: '127.0.0.1', protocol: 'UDP' },
    ]);
  });

  it('limits.memory is bytes, requests.cpu shares, limits.cpu millis; requests.memory is checked, not applied', () => {
    expect(
      app(accepted(pod({ resources: { limits: { memory: '128Mi', cpu: '1' }, requests: { cpu: '500m', memory: '64Mi' } } }))),
    ).toMatchObject({
      memory: 134217728,
      cpu: 512,
      cpuLimitMillis: 1000,
    });
    expect(app(accepted(pod({ resources: { requests: { memory: '64Mi' } } })))).not.toHaveProperty('memory');
  });

  it('a CPU limit without a request requests the limit, as Kubernetes defaults it', () => {
    expect(app(accepted(pod({ resources: { limits: { cpu: '250m' } } })))).toMatchObject({ cpu: 256, cpuLimitMillis: 250 });
  });

  it('CPU shares are floor(milli × 1024 / 1000), at least 2 and at most 262144', () => {
    expect(app(accepted(pod({ resources: { requests: { cpu: '1m' } } })))?.cpu).toBe(2);
    expect(app(accepted(pod({ resources: { requests: { cpu: '100m' } } })))?.cpu).toBe(102);
    expect(app(accepted(pod({ resources: { requests: { cpu: '500' } } })))?.cpu).toBe(262144);
  });

  it('probes: exec, httpGet with host, scheme and headers, tcpSocket; Kubernetes defaults', () => {
    const c = app(
      accepted(
        pod({
          ports: [{ name: 'http', containerPort: 8080, hostPort: 8080 }],
          livenessProbe: { exec: { command: ['true'] } },
          readinessProbe: { httpGet: { port: 'http', scheme: 'HTTPS', httpHeaders: [{ name: 'Host', value: 'x' }] }, successThreshold: 2 },
          startupProbe: { tcpSocket: { port: 9000, host: '127.0.0.1' }, failureThreshold: 30 },
        }),
      ),
    );
    const defaults = { initialDelaySeconds: 0, periodSeconds: 10, timeoutSeconds: 1, failureThreshold: 3 };
    expect(c?.livenessProbe).toEqual({ exec: { command: ['true'] }, ...defaults });
    expect(c?.readinessProbe).toEqual({
      httpGet: { path: '/', port: 'http', scheme: 'HTTPS', httpHeaders: [{ name: 'Host', value: 'x' }] },
      ...defaults,
      successThreshold: 2,
    });
    expect(c?.startupProbe).toEqual({ tcpSocket: { port: 9000, host: '127.0.0.1' }, ...defaults, failureThreshold: 30 });
  });

  it('restartPolicy, terminationGracePeriodSeconds, hostNetwork', () => {
    expect(accepted(pod({}, { restartPolicy: 'Never', terminationGracePeriodSeconds: 5, hostNetwork: true }))).toMatchObject({
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 5,
      hostNetwork: true,
    });
    expect(accepted(pod({}, { hostNetwork: false }))).not.toHaveProperty('hostNetwork');
  });

  it('volumes: emptyDir (or no source) is a pod volume, hostPath a host path with its type; mounts keep readOnly', () => {
    const m = accepted(
      pod(
        {
          volumeMounts: [
            { name: 'a', mountPath: '/a', readOnly: true },
            { name: 'c', mountPath: '/c', mountPropagation: 'None' },
          ],
        },
        {
          volumes: [
            { name: 'a', emptyDir: {} },
            { name: 'b' },
            { name: 'c', hostPath: { path: '/var/log', type: 'Directory' } },
            { name: 'd', emptyDir: { medium: '' } },
          ],
        },
      ),
    );
    expect(m.volumes).toEqual([
      { name: 'a' },
      { name: 'b' },
      { name: 'c', hostPath: { path: '/var/log', type: 'Directory' } },
      { name: 'd' },
    ]);
    expect(app(m)?.volumeMounts).toEqual([
      { name: 'a', mountPath: '/a', readOnly: true },
      { name: 'c', mountPath: '/c', readOnly: false },
    ]);
  });

  it('securityContext with only the RuntimeDefault seccomp profile, pod or container, is accepted', () => {
    const sc = { seccompProfile: { type: 'RuntimeDefault' } };
    expect(accepted(pod({ securityContext: sc }, { securityContext: sc })).id).toBe('web');
    expect(accepted(pod({ securityContext: {} }, { securityContext: {} })).id).toBe('web');
  });
});

describe('v1 Pod: ignored fields', () => {
  it('accepts every ignored field, and the manifest is the same as without it', () => {
    const plain = accepted(pod());
    const withAll = pod(
      Object.fromEntries(IGNORED_V1_FIELDS.container.map((f) => [f, 'x'])),
      Object.fromEntries(IGNORED_V1_FIELDS.spec.map((f) => [f, { any: ['value'] }])),
      Object.fromEntries(IGNORED_V1_FIELDS.metadata.map((f) => [f, null])),
      { status: { phase: 'Running' } },
    );
    expect(accepted(withAll)).toEqual(plain);
    expect(IGNORED_V1_FIELDS.spec).toEqual(
      expect.arrayContaining(['priority', 'priorityClassName', 'schedulerName', 'tolerations', 'nodeName', 'schedulingGates']),
    );
  });
});

describe('v1 Pod: refused fields name their path and say "not supported"', () => {
  it.each([
    [
      pod({}, { hostPID: true }),
      'spec.hostPID',
      "in the host's process namespace, where they reach every process of the host, which this agent refuses; run it with --allow-privileged",
    ],
    [pod({}, { hostIPC: true }), 'spec.hostIPC', '--allow-privileged'],
    [pod({}, { hostname: 'Not_A_Label' }), 'spec.hostname', 'must be a DNS label'],
    [pod({}, { shareProcessNamespace: 'yes' }), 'spec.shareProcessNamespace', 'must be true or false'],
    [pod({}, { dnsConfig: { nameservers: ['10.0.0.1'] }, hostNetwork: true }), 'spec.dnsConfig', "uses the host's resolv.conf here"],
    [pod({}, { hostAliases: [] }), 'spec.hostAliases', 'not supported'],
    [pod({}, { ephemeralContainers: [] }), 'spec.ephemeralContainers', 'not supported'],
    [
      pod({}, { securityContext: { sysctls: [{ name: 'kernel.msgmax', value: '65535' }] } }),
      'spec.securityContext.sysctls[0].name',
      "kernel.msgmax is not one of the kubelet's safe sysctls; run the agent with --allowed-unsafe-sysctls kernel.msgmax",
    ],
    [
      pod({}, { securityContext: { seccompProfile: { type: 'Localhost', localhostProfile: '../etc/audit.json' } } }),
      'spec.securityContext.seccompProfile.localhostProfile',
      'must be a relative name without ".."',
    ],
    [
      pod({}, { securityContext: { seccompProfile: { type: 'Localhost' } } }),
      'spec.securityContext.seccompProfile.localhostProfile',
      'is required with type Localhost',
    ],
    [pod({ securityContext: { privileged: true } }), 'spec.containers[0].securityContext.privileged', '--allow-privileged'],
    [pod({ securityContext: { procMount: 'Unmasked' } }), 'spec.containers[0].securityContext.procMount', 'not supported'],
    [pod({ lifecycle: { stopSignal: 'SIGUSR1' } }), 'spec.containers[0].lifecycle.stopSignal', "not supported; the image's STOPSIGNAL"],
    [
      pod({ lifecycle: { postStart: { tcpSocket: { port: 80 } } } }),
      'spec.containers[0].lifecycle.postStart.tcpSocket',
      'is not run as a hook',
    ],
    [pod({ volumeDevices: [] }), 'spec.containers[0].volumeDevices', 'not supported'],
    [pod({ ports: [{ containerPort: 80, protocol: 'SCTP' }] }), 'spec.containers[0].ports[0].protocol', 'SCTP is not supported'],
    [
      pod({ volumeMounts: [{ name: 'v', mountPath: '/v', subPath: '../x' }] }, { volumes: [{ name: 'v' }] }),
      'spec.containers[0].volumeMounts[0].subPath',
      "must be a relative path without '..'",
    ],
    [
      pod({ volumeMounts: [{ name: 'v', mountPath: '/v', subPathExpr: '$(POD)' }] }, { volumes: [{ name: 'v' }] }),
      'spec.containers[0].volumeMounts[0].subPathExpr',
      'not supported; write the path itself as subPath',
    ],
    [
      pod({ volumeMounts: [{ name: 'v', mountPath: '/v', mountPropagation: 'Bidirectional' }] }, { volumes: [{ name: 'v' }] }),
      'spec.containers[0].volumeMounts[0].mountPropagation',
      'not supported',
    ],
    [
      pod({}, { volumes: [{ name: 'v', nfs: { server: 'x', path: '/' } }] }),
      'spec.volumes[0].nfs',
      'not supported; a network or cloud volume is attached by its storage provider',
    ],
    [pod({}, { volumes: [{ name: 'v', emptyDir: { medium: 'HugePages' } }] }), 'spec.volumes[0].emptyDir.medium', 'must be one of Memory'],
    [pod({}, { volumes: [{ name: 'v', emptyDir: { sizeLimit: '-1Gi' } }] }), 'spec.volumes[0].emptyDir.sizeLimit', 'must be'],
    [
      pod({}, { volumes: [{ name: 'v', emptyDir: { medium: 'Memory', sizeLimit: 'lots' } }] }),
      'spec.volumes[0].emptyDir.sizeLimit',
      'must be a Kubernetes quantity',
    ],
    [pod({}, { volumes: [{ name: 'v', emptyDir: {}, hostPath: { path: '/x' } }] }), 'spec.volumes[0]', 'exactly one of emptyDir, hostPath'],
    [
      pod({ resources: { limits: { 'ephemeral-storage': '1Gi' } } }),
      'spec.containers[0].resources.limits.ephemeral-storage',
      'not supported',
    ],
    [pod({ resources: { requests: { 'hugepages-2Mi': '2Mi' } } }), 'spec.containers[0].resources.requests.hugepages-2Mi', 'not supported'],
    [pod({ resources: { limits: { 'nvidia.com/gpu': 1 } } }), 'spec.containers[0].resources.limits.nvidia.com/gpu', 'not supported'],
    [pod({ resources: { claims: [] } }), 'spec.containers[0].resources.claims', 'not supported'],
    [
      pod({ livenessProbe: { grpc: { port: 'grpc' } } }),
      'spec.containers[0].livenessProbe.grpc.port',
      'must be a port number (a gRPC probe names no port)',
    ],
    [
      pod({ livenessProbe: { exec: { command: ['x'] }, terminationGracePeriodSeconds: 3 } }),
      'spec.containers[0].livenessProbe.terminationGracePeriodSeconds',
      'not supported',
    ],
    [
      pod({ readinessProbe: { httpGet: { port: 1, foo: 1 } } }, { hostNetwork: true }),
      'spec.containers[0].readinessProbe.httpGet.foo',
      'not supported',
    ],
    [pod({}, {}, { clusterName: 'x' }), 'metadata.clusterName', 'not supported'],
    [pod({}, {}, {}, { extra: 1 }), 'extra', 'not supported'],
  ])('%# refuses %j', (input, path, message) => {
    const errors = refused(input);
    expect(errors).toContainEqual({ path, message: expect.stringContaining(message) });
    expect(errors.every((e) => e.path.startsWith(path.split('.')[0] ?? ''))).toBe(true);
  });
});

describe('v1 Pod: values are checked as every manifest is, at the v1 path', () => {
  it.each([
    [pod({ resources: { limits: { memory: '12 8Mi' } } }), 'spec.containers[0].resources.limits.memory', 'must be a Kubernetes quantity'],
    [pod({ resources: { limits: { memory: '-1' } } }), 'spec.containers[0].resources.limits.memory', 'must not be negative'],
    [pod({ resources: { limits: { cpu: '0' } } }), 'spec.containers[0].resources.limits.cpu', 'must be more than 0'],
    [pod({ resources: { limits: { cpu: '2000' } } }), 'spec.containers[0].resources.limits.cpu', 'at most 1000 CPUs'],
    [
      pod({ resources: { limits: { cpu: '1' }, requests: { cpu: '2' } } }),
      'spec.containers[0].resources.requests.cpu',
      'at most the limit',
    ],
    [
      pod({ resources: { limits: { memory: '1Mi' }, requests: { memory: '2Mi' } } }),
      'spec.containers[0].resources.requests.memory',
      'at most the limit',
    ],
    [pod({ resources: { limits: { memory: '1E' } } }), 'spec.containers[0].resources.limits.memory', 'must be at most'],
    [pod({ resources: [] }), 'spec.containers[0].resources', 'must be an object'],
    [pod({ args: ['ok', 5] }), 'spec.containers[0].args[1]', 'quote it'],
    [pod({ command: 'nginx' }), 'spec.containers[0].command', 'must be a list'],
    [pod({ image: '' }), 'spec.containers[0].image', 'is required'],
    [pod({ name: 'App' }), 'spec.containers[0].name', 'DNS label'],
    [pod({ env: [{ name: '1A', value: 'x' }] }), 'spec.containers[0].env[0].name', 'C identifier'],
    [pod({ ports: [{ containerPort: 80, hostIP: 'localhost' }] }), 'spec.containers[0].ports[0].hostIP', 'IPv4 or IPv6'],
    [
      pod({ ports: [{ containerPort: 80, hostPort: 81 }] }, { hostNetwork: true }),
      'spec.containers[0].ports[0].hostPort',
      'must equal containerPort',
    ],
    [
      pod({ livenessProbe: { httpGet: { port: 'web' } } }),
      'spec.containers[0].livenessProbe.httpGet.port',
      "name one of this container's TCP ports",
    ],
    [
      pod({ startupProbe: { exec: { command: ['x'] }, successThreshold: 2 } }),
      'spec.containers[0].startupProbe.successThreshold',
      'must be 1',
    ],
    [pod({}, { restartPolicy: 'Sometimes' }), 'spec.restartPolicy', 'must be one of'],
    [pod({}, { terminationGracePeriodSeconds: -1 }), 'spec.terminationGracePeriodSeconds', 'must be 0-86400'],
    [pod({}, { volumes: [{ name: 'h', hostPath: { path: 'relative' } }] }), 'spec.volumes[0].hostPath.path', 'absolute'],
    [pod({}, { volumes: [{ name: 'h', hostPath: { path: '/x', type: 'Dir' } }] }), 'spec.volumes[0].hostPath.type', 'must be one of'],
    [pod({ volumeMounts: [{ name: 'nope', mountPath: '/x' }] }), 'spec.containers[0].volumeMounts[0].name', 'names no declared volume'],
    [pod({}, { containers: [] }, {}, { spec: null }), 'spec', 'is required'],
    [{ apiVersion: 'v1', kind: 'Pod', spec: { containers: [] } }, 'metadata', 'is required'],
    [pod({}, {}, { name: 'Web' }), 'metadata.name', 'DNS subdomain'],
    [pod({}, {}, { name: 'web', namespace: 'Kube' }), 'metadata.namespace', 'DNS label'],
    [pod({}, {}, { labels: { a: 'x y' } }), 'metadata.labels.a', 'label value'],
    [pod({}, {}, { uid: 'a b' }), 'metadata.uid', 'must be letters'],
    [pod({}, {}, { deletionTimestamp: '6 Dec 2026' }), 'metadata.deletionTimestamp', 'RFC 3339'],
    [pod({}, {}, { deletionGracePeriodSeconds: 2 }), 'metadata.deletionGracePeriodSeconds', 'only with deletionTimestamp'],
    [
      pod({}, {}, { deletionTimestamp: '2026-12-06T10:00:00Z', deletionGracePeriodSeconds: 1.5 }),
      'metadata.deletionGracePeriodSeconds',
      'must be',
    ],
    [pod({}, { hostNetwork: 'true' }), 'spec.hostNetwork', 'true or false'],
    [pod({}, { containers: { name: 'x' } }), 'spec.containers', 'must be a list'],
  ])('%# refuses %j', (input, path, message) => {
    expect(refused(input)).toContainEqual({ path, message: expect.stringContaining(message) });
  });

  it('names the v1 paths inside messages, and shows a value as it was written', () => {
    const twice = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'w' },
      spec: {
        containers: [
          { name: 'a', image: 'x', ports: [{ containerPort: 80, hostPort: 80 }] },
          { name: 'a', image: 'x', ports: [{ containerPort: 81, hostPort: 80 }] },
        ],
      },
    };
    expect(refused(twice)).toEqual([
      { path: 'spec.containers[1].name', message: 'duplicate container name "a" (also spec.containers[0])' },
      { path: 'spec.containers[1].ports[0].hostPort', message: 'host port 80/TCP is already used by spec.containers[0].ports[0].hostPort' },
    ]);
    const parsed = parseManifests(
      'apiVersion: v1\nkind: Pod\nmetadata: {name: w}\nspec:\n  containers: [{name: a, image: x, env: [{name: A, value: 01234}]}]',
      'w.yaml',
    );
    expect(parsed.rejected[0]?.errors).toEqual([
      { path: 'spec.containers[0].env[0].value', message: 'must be a string; quote it: "01234"' },
    ]);
  });

  it('refuses a hostPath volume without --allow-host-mounts, naming the flag', () => {
    expect(refused(pod({}, { volumes: [{ name: 'h', hostPath: { path: '/x' } }] }), false)).toEqual([
      { path: 'spec.volumes[0].hostPath', message: expect.stringContaining('--allow-host-mounts') },
    ]);
  });

  it('names a rejected pod by its id so its last good version is kept', () => {
    const parsed = parseManifests(JSON.stringify(pod({ volumeDevices: [] }, {}, { namespace: 'ops' })), 'x.json');
    expect(parsed.rejected[0]?.id).toBe('web.ops');
  });

  it('refuses every wrong field at once, mapping and validation alike', () => {
    expect(
      refused(pod({ volumeDevices: [], image: '', resources: { limits: { memory: 'lots' } } }, { hostIPC: true }))
        .map((e) => e.path)
        .sort(),
    ).toEqual([
      'spec.containers[0].image',
      'spec.containers[0].resources.limits.memory',
      'spec.containers[0].volumeDevices',
      'spec.hostIPC',
    ]);
  });
});
