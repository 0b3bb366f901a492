import { describe, expect, it } from '@jest/globals';
import type { ContainerManifest, KubeletError, SourceObject, SourceSink } from '@kubelet-ts/core';
import { ManifestIntake, parseManifests, toV1Pod } from '../src/index.js';
import { pod, refused } from './v1-pod-fixture.js';

const POD = `apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  containers:
  - name: app
    image: nginx:1.25
    envFrom:
    - prefix: CFG_
      configMapRef: {name: web-config}
    env:
    - name: PASSWORD
      valueFrom: {secretKeyRef: {name: web-secret, key: password, optional: true}}
    volumeMounts:
    - {name: config, mountPath: /etc/web}
    - {name: all, mountPath: /etc/all}
  volumes:
  - name: config
    configMap:
      name: web-config
      items: [{key: app.conf, path: conf/app.conf, mode: 0600}]
      defaultMode: 0640
  - name: all
    projected:
      sources:
      - secret: {name: web-secret}
      - downwardAPI:
          items:
          - {path: labels, fieldRef: {fieldPath: metadata.labels}}
          - {path: mem, resourceFieldRef: {containerName: app, resource: limits.memory, divisor: 1Mi}}
`;
const CONFIG_MAP = `apiVersion: v1
kind: ConfigMap
metadata: {name: web-config}
data: {app.conf: "port=80\\n", mode: fast}
binaryData: {logo.png: iVBORw0K}
`;
const SECRET = `apiVersion: v1
kind: Secret
metadata: {name: web-secret, namespace: default}
type: Opaque
data: {password: czNjcjN0, user: YWRtaW4=}
stringData: {user: root}
`;

const utf8 = (o: SourceObject | undefined, key: string) => Buffer.from(o?.data[key] ?? []).toString('utf8');

describe('v1 ConfigMaps and Secrets beside pods', () => {
  it('reads the pod and the objects of one text, each decoded as the API server keeps it', () => {
    const parsed = parseManifests([POD, CONFIG_MAP, SECRET].join('---\n'), 'web.yaml');
    expect(parsed.rejected).toEqual([]);
    expect(parsed.manifests.map((m) => m.id)).toEqual(['web']);
    const [config, secret] = parsed.objects;
    expect(config).toMatchObject({ kind: 'ConfigMap', namespace: 'default', name: 'web-config' });
    expect(utf8(config, 'app.conf')).toBe('port=80\n');
    expect(Buffer.from(config?.data['logo.png'] ?? []).toString('base64')).toBe('iVBORw0K');
    // A Secret's data is base64; its stringData wins for the same key.
    expect(utf8(secret, 'password')).toBe('s3cr3t');
    expect(utf8(secret, 'user')).toBe('root');
  });

  it('maps each kind of volume onto the files it projects, and writes the pod back as it was read', () => {
    const [m] = parseManifests(POD, 'web.yaml').manifests as [ContainerManifest];
    expect(m.volumes).toEqual([
      {
        name: 'config',
        files: {
          sources: [{ configMap: { name: 'web-config', items: [{ key: 'app.conf', path: 'conf/app.conf', mode: 0o600 }] } }],
          defaultMode: 0o640,
        },
      },
      {
        name: 'all',
        files: {
          sources: [
            { secret: { name: 'web-secret' } },
            {
              downwardAPI: {
                items: [
                  { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
                  { path: 'mem', resourceFieldRef: { containerName: 'app', resource: 'limits.memory', divisor: 1048576 } },
                ],
              },
            },
          ],
        },
      },
    ]);
    expect(m.containers[0]?.envFrom).toEqual([{ prefix: 'CFG_', configMapRef: { name: 'web-config' } }]);
    expect(parseManifests(JSON.stringify(toV1Pod(m)), 'back.json').manifests).toEqual([m]);
    // A secret volume reads back as one, by its secretName.
    const secretPod = POD.replace(/ {2}- name: all\n[\s\S]*$/, '  - name: all\n    secret: {secretName: web-secret, optional: true}\n');
    const [s] = parseManifests(secretPod, 'secret.yaml').manifests as [ContainerManifest];
    expect(toV1Pod(s).spec['volumes']).toContainEqual({ name: 'all', secret: { secretName: 'web-secret', optional: true } });
    expect(parseManifests(JSON.stringify(toV1Pod(s)), 'back.json').manifests).toEqual([s]);
  });

  it('refuses a bad object by the field, showing no value of it', () => {
    const bad = SECRET.replace('password: czNjcjN0', 'password: "not base64!hunter2"').replace('name: web-secret', 'name: Web_Secret');
    const parsed = parseManifests(bad, 'secret.yaml');
    expect(parsed.objects).toEqual([]);
    const errors = parsed.rejected[0]?.errors ?? [];
    expect(errors.map((e) => e.path).sort()).toEqual(['data.password', 'metadata.name']);
    expect(JSON.stringify(errors)).not.toContain('hunter2');
    const keyed = parseManifests(CONFIG_MAP.replace('mode: fast', '"a/b": fast'), 'cm.yaml');
    expect(keyed.rejected[0]).toMatchObject({ objectKey: 'ConfigMap/default/web-config', errors: [{ path: 'data.a/b' }] });
    expect(parseManifests(`${CONFIG_MAP}extra: 1\n`, 'cm.yaml').rejected[0]?.errors).toEqual([
      { path: 'extra', message: 'not supported in a ConfigMap' },
    ]);
  });
});

class Sink implements SourceSink {
  readonly updates: Array<{ manifests: readonly ContainerManifest[]; objects: readonly SourceObject[] }> = [];
  readonly errors: KubeletError[] = [];
  update(manifests: readonly ContainerManifest[], objects: readonly SourceObject[] = []): void {
    this.updates.push({ manifests, objects });
  }
  error(error: Error): void {
    this.errors.push(error as KubeletError);
  }
}

describe('ManifestIntake with objects', () => {
  it('delivers the objects with the set, again when only an object changed, and keeps the last good one of a bad re-read', () => {
    const intake = new ManifestIntake({ adapter: 'test' });
    const sink = new Sink();
    intake.start(sink);
    intake.read('pod.yaml', POD);
    intake.read('cm.yaml', CONFIG_MAP);
    intake.commit();
    expect(sink.updates).toHaveLength(1);
    expect(sink.updates[0]?.objects.map((o) => o.name)).toEqual(['web-config']);
    intake.read('cm.yaml', CONFIG_MAP);
    intake.commit();
    expect(sink.updates).toHaveLength(1);
    intake.read('cm.yaml', CONFIG_MAP.replace('mode: fast', 'mode: slow'));
    intake.commit();
    expect(sink.updates).toHaveLength(2);
    expect(utf8(sink.updates[1]?.objects[0], 'mode')).toBe('slow');
    // Now wrong: its last good version stays, and the error names it.
    intake.read('cm.yaml', CONFIG_MAP.replace('mode: slow', 'mode: 5').replace('mode: fast', 'mode: 5'));
    intake.commit();
    expect(sink.updates).toHaveLength(2);
    expect(sink.errors.at(-1)?.message).toContain('(ConfigMap/default/web-config): data.mode: must be a string');
    // The same object in two documents: the first is used, the other is a conflict.
    intake.read('z.yaml', CONFIG_MAP.replace('mode: fast', 'mode: other'));
    intake.commit();
    expect(sink.errors.at(-1)?.message).toContain('ConfigMap default/web-config in z.yaml is also in cm.yaml');
  });
});

describe('what reads ConfigMaps and Secrets, refused by the field that is wrong', () => {
  it.each([
    [
      pod({ envFrom: [{ configMapRef: { name: 'a' }, secretRef: { name: 'b' } }] }),
      'spec.containers[0].envFrom[0]',
      'must have exactly one of configMapRef, secretRef',
    ],
    [
      pod({ envFrom: [{ prefix: '1_', configMapRef: { name: 'a' } }] }),
      'spec.containers[0].envFrom[0].prefix',
      'must begin a variable name',
    ],
    [
      pod({ env: [{ name: 'A', valueFrom: { configMapKeyRef: { name: 'cm', key: 'a/b' } } }] }),
      'spec.containers[0].env[0].valueFrom.configMapKeyRef.key',
      'must be a key of a ConfigMap or Secret',
    ],
    [
      pod({ env: [{ name: 'A', valueFrom: { configMapKeyRef: { name: 'Not_A_Name', key: 'k' } } }] }),
      'spec.containers[0].env[0].valueFrom.configMapKeyRef.name',
      'must be a DNS subdomain',
    ],
    [
      pod({}, { volumes: [{ name: 'v', configMap: { name: 'x', items: [{ key: 'k', path: '../etc' }] } }] }),
      'spec.volumes[0].configMap.items[0].path',
      "without '..'",
    ],
    [
      pod({}, { volumes: [{ name: 'v', configMap: { name: 'x', items: [{ key: 'k', path: '..data' }] } }] }),
      'spec.volumes[0].configMap.items[0].path',
      "must not begin with '..'",
    ],
    [
      pod({}, { volumes: [{ name: 'v', secret: { secretName: 'Bad_Name' } }] }),
      'spec.volumes[0].secret.secretName',
      'must be a DNS subdomain',
    ],
    [
      pod({}, { volumes: [{ name: 'v', secret: { secretName: 's', defaultMode: 0o1777 } }] }),
      'spec.volumes[0].secret.defaultMode',
      'must be 0-511',
    ],
    [pod({}, { volumes: [{ name: 'v', configMap: { name: 'x' }, emptyDir: {} }] }), 'spec.volumes[0]', 'exactly one of emptyDir'],
    [
      pod({}, { volumes: [{ name: 'v', projected: { sources: [{ serviceAccountToken: { path: 'token' } }] } }] }),
      'spec.volumes[0].projected.sources[0].serviceAccountToken',
      'issued by an API server',
    ],
    [
      pod({}, { volumes: [{ name: 'v', projected: { sources: [{ configMap: { name: 'a' }, secret: { name: 'b' } }] } }] }),
      'spec.volumes[0].projected.sources[0]',
      'must have exactly one of configMap, secret, downwardAPI',
    ],
    [
      pod({}, { volumes: [{ name: 'v', downwardAPI: { items: [{ path: 'ip', fieldRef: { fieldPath: 'status.podIP' } }] } }] }),
      'spec.volumes[0].downwardAPI.items[0].fieldRef.fieldPath',
      "the pod's IPs and node are for env only",
    ],
    [
      pod(
        {},
        {
          volumes: [
            { name: 'v', downwardAPI: { items: [{ path: 'cpu', resourceFieldRef: { containerName: 'nope', resource: 'limits.cpu' } }] } },
          ],
        },
      ),
      'spec.volumes[0].downwardAPI.items[0].resourceFieldRef.containerName',
      'names no container of the pod',
    ],
  ])('%# refuses %j', (given, path, message) => {
    expect(refused(given)).toContainEqual({ path, message: expect.stringContaining(message) });
  });
});
