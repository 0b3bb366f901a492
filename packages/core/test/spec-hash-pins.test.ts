import { describe, expect, it } from '@jest/globals';
import { formatFieldErrors } from '../src/errors.js';
import { sandboxHash } from '../src/sandbox.js';
import { podPorts, specHashes } from '../src/spec.js';
import { validateManifest } from '../src/validate.js';

/**
 * Spec and sandbox hashes of manifests that were valid before the 2014 compatibility rules, as the
 * release before them computed them. An agent upgrade must not restart a container that runs one of
 * these: if a hash here changes, every such container on every host is replaced on upgrade.
 * Never update a value here to make a test pass; change the code (or bump SPEC_HASH_VERSION on
 * purpose and say so).
 */
const PINNED: ReadonlyArray<{ name: string; input: Record<string, unknown>; specs: string[]; sandbox: string }> = [
  {
    name: 'web-frontend (examples/manifests)',
    input: {
      version: 'v1beta1',
      id: 'web-frontend',
      volumes: [{ name: 'static' }],
      containers: [
        {
          name: 'nginx',
          image: 'nginx:1.25',
          command: ['nginx', '-g', 'daemon off;'],
          ports: [{ name: 'http', containerPort: 80, hostPort: 8080, protocol: 'TCP' }],
          env: [{ name: 'MODE', value: 'production' }],
          memory: 134217728,
          cpu: 512,
          volumeMounts: [{ name: 'static', mountPath: '/usr/share/nginx/html', readOnly: true }],
        },
      ],
    },
    specs: ['v1-12f3579cc02a5784'],
    sandbox: '88746a8f2fb83413',
  },
  {
    name: 'cache (examples/manifests)',
    input: {
      version: 'v1beta1',
      id: 'cache',
      containers: [{ name: 'redis', image: 'redis:7.2', ports: [{ containerPort: 6379, hostPort: 6379 }], memory: 268435456 }],
    },
    specs: ['v1-171ae7610e8e4957'],
    sandbox: '6f34681db2ba1146',
  },
  {
    name: 'syslog, udp in lower case',
    input: {
      version: 'v1beta1',
      id: 'syslog',
      containers: [
        {
          name: 'syslog',
          image: 'busybox:1.36',
          command: ['syslogd', '-n', '-O', '/dev/stdout'],
          ports: [{ containerPort: 514, hostPort: 5514, protocol: 'udp' }],
        },
      ],
    },
    specs: ['v1-8fb8c6ad9fe14bf5'],
    sandbox: 'e2d7b4aeebd89e89',
  },
  {
    // No version: ports without hostPort keep meaning "not published".
    name: 'no version, ports without hostPort',
    input: {
      id: 'api',
      containers: [
        {
          name: 'api',
          image: 'example/api:2',
          ports: [{ containerPort: 8080 }, { name: 'metrics', containerPort: 9090, protocol: 'TCP' }],
          env: [{ name: 'EMPTY' }],
        },
        { name: 'sidecar', image: 'busybox', command: ['sleep', '3600'] },
      ],
    },
    specs: ['v1-587f3f33e8b18492', 'v1-47d04aafb988f0b3'],
    sandbox: 'fc7f3118a16d25e7',
  },
  {
    // hostPort 0 written out is the opt-out of publishing, in every version.
    name: 'v1beta1, hostPort 0 written out',
    input: {
      version: 'v1beta1',
      id: 'worker',
      containers: [
        {
          name: 'worker',
          image: `example/worker@sha256:${'a'.repeat(64)}`,
          ports: [{ containerPort: 7000, hostPort: 0 }],
          workingDir: '/work',
        },
      ],
    },
    specs: ['v1-38c21df8fef88b13'],
    sandbox: 'b4c82755abfe1eb6',
  },
  {
    name: 'probe, policies, grace period',
    input: {
      version: 'v1beta1',
      id: 'probed',
      restartPolicy: 'OnFailure',
      terminationGracePeriodSeconds: 10,
      volumes: [{ name: 'data' }, { name: 'unused' }],
      containers: [
        {
          name: 'web',
          image: 'nginx',
          imagePullPolicy: 'IfNotPresent',
          ports: [{ name: 'http', containerPort: 80, hostPort: 8081 }],
          livenessProbe: { httpGet: { path: '/healthz', port: 'http' }, initialDelaySeconds: 5 },
          volumeMounts: [{ name: 'data', mountPath: '/data' }],
        },
      ],
    },
    specs: ['v1-c540a8a324f796aa'],
    sandbox: '861f0d6a9dc8b126',
  },
];

describe('spec hashes of manifests valid before the 2014 compatibility rules', () => {
  it.each(PINNED)('$name: the container and sandbox hashes are unchanged', ({ input, specs, sandbox }) => {
    const result = validateManifest(structuredClone(input));
    if (!result.ok) throw new Error(formatFieldErrors(result.errors));
    expect(specHashes(result.manifest)).toEqual(specs);
    expect(sandboxHash(podPorts(result.manifest))).toBe(sandbox);
  });
});
