import { describe, expect, it } from '@jest/globals';
import { resolveContainerEnv } from '../src/container-env.js';
import {
  KubeletError,
  objectLookupOf,
  plan,
  referencedObjects,
  specHash,
  validateManifest,
  type ContainerManifest,
  type SourceObject,
} from '../src/index.js';
import { volumeFilesOf } from '../src/objects.js';

const bytes = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array | undefined) => new TextDecoder().decode(b);
const object = (kind: SourceObject['kind'], name: string, data: Record<string, string>, namespace = 'default'): SourceObject => ({
  kind,
  namespace,
  name,
  data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, bytes(v)])),
});
const checked = (raw: unknown): ContainerManifest => {
  const r = validateManifest(raw);
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.manifest;
};
const context = { node: 'node-a', podUid: 'uid-1' };

describe('what a pod reads of the ConfigMaps and Secrets beside it', () => {
  const objects = objectLookupOf([
    object('ConfigMap', 'cfg', { mode: 'fast', 'bad-name': 'x', B: 'from-cm' }),
    object('Secret', 'sec', { B: 'from-secret', token: 't0k3n' }),
    object('ConfigMap', 'cfg', { mode: 'other-namespace' }, 'team-b'),
  ]);

  it("makes the env as the kubelet does: envFrom in order, then env, which wins; keys that are not names left out; a pod's own namespace", () => {
    const m = checked({
      id: 'web',
      containers: [
        {
          name: 'app',
          image: 'nginx',
          envFrom: [{ configMapRef: { name: 'cfg' } }, { prefix: 'S_', secretRef: { name: 'sec' } }, { secretRef: { name: 'sec' } }],
          env: [
            { name: 'MODE', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'mode' } } },
            { name: 'GONE', valueFrom: { secretKeyRef: { name: 'nope', key: 'x', optional: true } } },
            { name: 'SAY', value: '$(MODE)-$(S_token)' },
          ],
        },
      ],
    });
    const { env } = resolveContainerEnv(m, m.containers[0]!, { ...context, objects });
    expect(env).toEqual({
      mode: 'fast',
      B: 'from-secret',
      S_B: 'from-secret',
      S_token: 't0k3n',
      token: 't0k3n',
      MODE: 'fast',
      SAY: 'fast-t0k3n',
    });
    // Without the objects (a plan's preview), what they give is left out.
    expect(resolveContainerEnv(m, m.containers[0]!, context).env).toEqual({ SAY: '$(MODE)-$(S_token)' });
    const inTeamB = checked({
      id: 'web.team-b',
      namespace: 'team-b',
      containers: [{ name: 'app', image: 'nginx', env: [{ name: 'MODE', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'mode' } } }] }],
    });
    expect(resolveContainerEnv(inTeamB, inTeamB.containers[0]!, { ...context, objects }).env['MODE']).toBe('other-namespace');
  });

  it('throws NotFound naming the object or key that a required reference misses, and what to do', () => {
    const m = checked({
      id: 'web',
      containers: [{ name: 'app', image: 'nginx', env: [{ name: 'K', valueFrom: { secretKeyRef: { name: 'sec', key: 'nope' } } }] }],
    });
    const resolve = () => resolveContainerEnv(m, m.containers[0]!, { ...context, objects });
    expect(resolve).toThrow(KubeletError);
    expect(resolve).toThrow(
      'key "nope" not found in secret "sec" (namespace default); add it to the Secret, or mark the reference optional: true',
    );
    const noObject = checked({ id: 'web', containers: [{ name: 'app', image: 'nginx', envFrom: [{ configMapRef: { name: 'absent' } }] }] });
    expect(() => resolveContainerEnv(noObject, noObject.containers[0]!, { ...context, objects })).toThrow(
      /configmap "absent" not found .* add a kind: ConfigMap document named absent/,
    );
  });

  it('projects files: all keys or the items, modes by item, default, then 0400 for a Secret; a later source wins a path', () => {
    const m = checked({
      id: 'web',
      annotations: { b: '2', a: 'say "hi"' },
      volumes: [
        {
          name: 'v',
          files: {
            sources: [
              {
                configMap: {
                  name: 'cfg',
                  items: [
                    { key: 'mode', path: 'conf/mode' },
                    { key: 'B', path: 'b', mode: 0o600 },
                  ],
                },
              },
              { secret: { name: 'sec', items: [{ key: 'token', path: 'b' }] } },
              { secret: { name: 'absent', optional: true } },
              { downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.annotations' } }] } },
            ],
          },
        },
        { name: 'all', files: { sources: [{ secret: { name: 'sec' } }], defaultMode: 0o440 } },
        { name: 'missing', files: { sources: [{ configMap: { name: 'cfg', items: [{ key: 'nope', path: 'x' }] } }] } },
      ],
      containers: [{ name: 'app', image: 'nginx' }],
    });
    const files = volumeFilesOf(m, m.volumes[0]!, objects, context);
    expect(files.map((f) => [f.path, text(f.data), f.mode.toString(8)])).toEqual([
      ['conf/mode', 'fast', '644'],
      ['b', 't0k3n', '400'],
      ['labels', 'a="say \\"hi\\""\nb="2"', '644'],
    ]);
    expect(volumeFilesOf(m, m.volumes[1]!, objects, context).map((f) => [f.path, f.mode.toString(8)])).toEqual([
      ['B', '440'],
      ['token', '440'],
    ]);
    expect(() => volumeFilesOf(m, m.volumes[2]!, objects, context)).toThrow('volume "missing": key "nope" not found in configmap "cfg"');
  });

  it('leaves what a ConfigMap holds out of the spec hash (its files are rewritten in place), and previews a create without its values', () => {
    const m = checked({
      id: 'web',
      volumes: [{ name: 'v', files: { sources: [{ configMap: { name: 'cfg' } }] } }],
      containers: [
        {
          name: 'app',
          image: 'nginx',
          env: [{ name: 'T', valueFrom: { secretKeyRef: { name: 'sec', key: 'token' } } }],
          volumeMounts: [{ name: 'v', mountPath: '/etc/v' }],
        },
      ],
    });
    const emptyDir = checked({ ...m, volumes: [{ name: 'v' }] });
    expect(specHash(m, m.containers[0]!)).not.toBe(specHash(emptyDir, emptyDir.containers[0]!));
    const p = plan({
      desired: [{ manifest: m, source: 'file' }],
      actual: [],
      sandboxes: [
        {
          id: 's1',
          name: 'web',
          labels: { 'io.kubelet-ts.sandbox': 'web', 'io.kubelet-ts.node': 'node-a' },
          state: 'ready',
          createdAt: 1,
        } as never,
      ],
      node: 'node-a',
      allowRemovals: true,
      now: 0,
      objects: (source) => (source === 'file' ? objects : undefined),
    });
    const create = p.pods[0]?.actions.find((a) => a.type === 'create');
    if (create?.type !== 'create') throw new Error('no create planned');
    expect(create.spec.env).toEqual({});
    expect(create.spec.mounts).toEqual([{ volume: 'v', containerPath: '/etc/v', readOnly: true, files: true }]);
    expect(create.respec?.({}).env).toEqual({ T: 't0k3n' });
    expect([...(create.volumeFiles?.().volumes.keys() ?? [])]).toEqual(['v']);
  });
});

describe('referencedObjects: what a pod reads, for a source that fetches objects for its pods', () => {
  it('names each ConfigMap and Secret of volumes, env and envFrom, of init and app containers, once, in the pod’s namespace', () => {
    const m = checked({
      id: 'web.team-b',
      namespace: 'team-b',
      volumes: [
        {
          name: 'v',
          files: { sources: [{ configMap: { name: 'cfg' } }, { secret: { name: 'sec', optional: true } }, { downwardAPI: { items: [] } }] },
        },
        { name: 'again', files: { sources: [{ configMap: { name: 'cfg' } }] } },
        { name: 'scratch' },
      ],
      initContainers: [{ name: 'init', image: 'busybox', envFrom: [{ configMapRef: { name: 'init-cfg' } }] }],
      containers: [
        {
          name: 'app',
          image: 'nginx',
          env: [
            { name: 'A', valueFrom: { secretKeyRef: { name: 'token', key: 't' } } },
            { name: 'B', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'k' } } },
            { name: 'C', value: 'plain' },
          ],
          envFrom: [{ secretRef: { name: 'sec' } }],
        },
      ],
    });
    expect(referencedObjects(m)).toEqual([
      { kind: 'ConfigMap', namespace: 'team-b', name: 'cfg' },
      { kind: 'Secret', namespace: 'team-b', name: 'sec' },
      { kind: 'ConfigMap', namespace: 'team-b', name: 'init-cfg' },
      { kind: 'Secret', namespace: 'team-b', name: 'token' },
    ]);
    expect(referencedObjects(checked({ id: 'plain', containers: [{ name: 'app', image: 'nginx' }] }))).toEqual([]);
  });
});
