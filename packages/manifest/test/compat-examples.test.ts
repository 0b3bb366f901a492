import { readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import { derivedManifestId, type ContainerManifest, type SourceSink, type SourceWarning } from '@kubelet-ts/core';
import { parseManifests, type ParseOptions } from '../src/parse.js';
import { StaticManifestSource } from '../src/static-source.js';
import { WarningReporter } from '../src/warning-reporter.js';

const fixture = (name: string) => readFileSync(new URL(`./fixtures/2014/${name}`, import.meta.url));
const parse = (name: string, options: ParseOptions = {}) =>
  parseManifests(fixture(name), name, { idFor: (position) => derivedManifestId(name, `/etc/kubernetes/${name}`, position), ...options });

/** The container-agent example, as it must come out of both its YAML and its JSON. */
const EXAMPLE_CONTAINER = {
  name: 'container1',
  image: 'foo/bar',
  command: ['/bin/echo', "'12345' '6789'"],
  volumeMounts: [
    { name: 'vol1', mountPath: '/mnt/vol1', readOnly: true },
    { name: 'vol2', mountPath: '/mnt/vol2', readOnly: false },
  ],
  ports: [
    { name: 'port80', containerPort: 80, hostPort: 80, protocol: 'TCP' },
    { name: 'port81', containerPort: 81, hostPort: 81, protocol: 'TCP' },
  ],
  env: [
    { name: 'VAR1', value: 'value' },
    { name: 'VAR2', value: 'value' },
  ],
};

describe('the container-agent example manifests', () => {
  it.each(['container-agent-example.yaml', 'container-agent-example.json'])(
    '%s is accepted, named after its file, read field by field',
    (name) => {
      const parsed = parse(name);
      expect(parsed.rejected).toEqual([]);
      expect(parsed.manifests).toEqual([
        {
          id: derivedManifestId(name, `/etc/kubernetes/${name}`),
          volumes: [{ name: 'vol1' }, { name: 'vol2' }],
          containers: [EXAMPLE_CONTAINER],
        },
      ]);
      expect(parsed.warnings[0]!.warnings.map((w) => [w.field, w.paths])).toEqual([
        ['containers[].env[].key', ['containers[0].env[0].key', 'containers[0].env[1].key']],
        ['containers[].volumeMounts[].path', ['containers[0].volumeMounts[0].path', 'containers[0].volumeMounts[1].path']],
      ]);
    },
  );

  it('publishes the registry port, written without hostPort, on its containerPort', () => {
    const [m] = parse('container-agent-registry.yaml').manifests;
    expect(m!.containers.map((c) => c.ports)).toEqual([
      [{ name: 'port5000', containerPort: 5000, hostPort: 5000, protocol: 'TCP' }],
      [{ name: 'port80', containerPort: 8080, hostPort: 80, protocol: 'TCP' }],
    ]);
    expect(m!.containers[0]!.env).toEqual([{ name: 'GCS_BUCKET', value: 'my-private-repository-bucket' }]);
  });

  it('shares one volume between two containers through the deprecated path', () => {
    const [m] = parse('container-agent-volumes.yaml').manifests;
    expect(m!.containers.map((c) => c.volumeMounts)).toEqual([
      [{ name: 'data', mountPath: '/mnt/data', readOnly: false }],
      [{ name: 'data', mountPath: '/mnt/data', readOnly: false }],
    ]);
    expect(m!.containers[1]!.ports).toEqual([{ name: 'www', containerPort: 80, hostPort: 80, protocol: 'TCP' }]);
  });

  it('refuses the HOST mounts of cadvisor.manifest unless allowed, then binds them', () => {
    expect(parse('cadvisor.manifest').rejected[0]!.errors.map((e) => e.path)).toEqual(
      [0, 1, 2].map((i) => `containers[0].volumeMounts[${i}].mountType`),
    );
    const [m] = parse('cadvisor.manifest', { allowHostMounts: true }).manifests;
    expect(m!.id).toBe('cadvisor-agent');
    expect(m!.containers[0]!.volumeMounts.map((v) => [v.mountPath, v.mountType, v.readOnly])).toEqual([
      ['/var/run', 'HOST', false],
      ['/var/lib/docker', 'HOST', true],
      ['/sys/fs/cgroup', 'HOST', true],
    ]);
  });

  it('reads the late-2014 spellings of late-2014.json', () => {
    const [m] = parse('late-2014.json').manifests;
    expect(m).toEqual({
      id: 'monitoring.kube-system.example.com',
      uuid: '6a3f2b1c-8d4e-11e4-b116-123b93f75cba',
      restartPolicy: 'OnFailure',
      volumes: [],
      containers: [
        {
          name: 'collector',
          image: 'example/collector:0.9',
          imagePullPolicy: 'IfNotPresent',
          ports: [
            { containerPort: 8125, hostPort: 8125, protocol: 'UDP' },
            { containerPort: 9102, protocol: 'TCP' },
          ],
          env: [{ name: 'MODE', value: 'agent' }],
          volumeMounts: [],
        },
      ],
    });
  });
});

describe('WarningReporter', () => {
  it('says each deprecated field once per manifest version', () => {
    const said: SourceWarning[] = [];
    const reporter = new WarningReporter();
    const read = (text: string) => reporter.report(parseManifests(text, 'web.yaml', { idFor: () => 'web' }).warnings, (w) => said.push(w));
    const v1 = 'containers: [{name: a, image: x, env: [{key: A, value: "1"}]}]';
    read(v1);
    expect(said).toEqual([
      {
        reason: 'DeprecatedField',
        podId: 'web',
        field: 'containers[].env[].key',
        paths: ['containers[0].env[0].key'],
        message: expect.stringMatching(
          /^web\.yaml \(id "web"\): containers\[0\]\.env\[0\]\.key: "key" is the deprecated 2014 spelling of "name"/,
        ),
      },
    ]);
    read(v1);
    expect(said).toHaveLength(1);
    read(v1.replace('"1"', '"2"'));
    expect(said).toHaveLength(2);
    read('containers: [{name: a, image: x}]');
    read(v1);
    expect(said).toHaveLength(3);
    reporter.reset();
    read(v1);
    expect(said).toHaveLength(4);
  });
});

class Sink implements SourceSink {
  sets: Array<readonly ContainerManifest[]> = [];
  warnings: SourceWarning[] = [];
  update(manifests: readonly ContainerManifest[]): void {
    this.sets.push(manifests);
  }
  error(error: Error): void {
    throw error;
  }
  warning(warning: SourceWarning): void {
    this.warnings.push(warning);
  }
}

describe('2014 rule 8: StaticManifestSource validates what it is given', () => {
  // What an embedder writes in plain JavaScript, where no type checker stops a wrong object.
  const plain = (value: unknown) => value as ContainerManifest;

  it('delivers the normalised form, naming an id-less manifest after the source and its position', async () => {
    const source = new StaticManifestSource('embedded', [
      plain({
        containers: [{ name: 'web', image: 'nginx', env: [{ key: 'A', value: 'b' }], ports: [{ containerPort: 80, protocol: 'tcp' }] }],
      }),
    ]);
    const sink = new Sink();
    await source.start(sink);
    const [m] = sink.sets[0]!;
    expect(m!.id).toBe(derivedManifestId('embedded', 'static source "embedded"', 0));
    expect(m!.containers[0]!.env).toEqual([{ name: 'A', value: 'b' }]);
    expect(m!.containers[0]!.ports).toEqual([{ containerPort: 80, protocol: 'TCP' }]);
    expect(sink.warnings.map((w) => w.field)).toEqual(['containers[].env[].key']);
  });

  it('throws InvalidManifest naming every wrong field, and changes nothing', async () => {
    const source = new StaticManifestSource('embedded');
    const sink = new Sink();
    await source.start(sink);
    const bad = [
      plain({ id: 'ok', containers: [{ name: 'a', image: 'x' }] }),
      plain({
        id: 'web',
        containers: [
          { name: 'a', image: '' },
          { name: 'b', image: 'x', memory: '1g' },
        ],
      }),
    ];
    expect(() => source.set(bad)).toThrow(
      expect.objectContaining({
        code: 'InvalidManifest',
        fieldErrors: [
          { path: '[1].containers[0].image', message: 'is required' },
          { path: '[1].containers[1].memory', message: expect.any(String) },
        ],
      }),
    );
    expect(sink.sets).toEqual([[]]);
    expect(() => source.set([plain({ id: 'x', containers: [] }), plain({ id: 'x', containers: [] })])).toThrow(
      /\[1\]\.id: duplicate manifest id "x"/,
    );
    expect(() => new StaticManifestSource('s', [plain({ id: 'Bad' })])).toThrow(/\[0\]\.id: must be a DNS subdomain/);
  });

  it('refuses HOST mounts unless the source allows them', () => {
    const host = plain({
      id: 'c',
      volumes: [{ name: 'v' }],
      containers: [{ name: 'a', image: 'x', volumeMounts: [{ name: 'v', mountPath: '/var/run', mountType: 'HOST' }] }],
    });
    expect(() => new StaticManifestSource('s', [host])).toThrow(/--allow-host-mounts/);
    expect(() => new StaticManifestSource('s', [host], { allowHostMounts: true })).not.toThrow();
  });

  it('delivers each valid set, and warns again only about a changed manifest', async () => {
    const source = new StaticManifestSource('embedded');
    const sink = new Sink();
    await source.start(sink);
    const old = plain({
      id: 'w',
      volumes: [{ name: 'v' }],
      containers: [{ name: 'a', image: 'x', volumeMounts: [{ name: 'v', path: '/v' }] }],
    });
    source.set([old]);
    source.set([old]);
    expect(sink.sets).toHaveLength(3);
    expect(sink.warnings).toHaveLength(1);
    expect(sink.warnings[0]!.message).toMatch(/^static source "embedded"\[0\] \(id "w"\): containers\[0\]\.volumeMounts\[0\]\.path: /);
  });
});
