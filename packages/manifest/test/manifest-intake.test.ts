import { describe, expect, it } from '@jest/globals';
import { KubeletError, type ContainerManifest, type SourceSink, type SourceWarning } from '@kubelet-ts/core';
import { ManifestIntake, type ManifestIntakeOptions } from '../src/manifest-intake.js';

const manifest = (id: string, image = 'app:1') => ({ id, containers: [{ name: 'main', image }] });
const text = (...manifests: object[]) => JSON.stringify(manifests);
const badPort = (id: string) => ({ id, containers: [{ name: 'main', image: 'app:1', ports: [{ containerPort: 80, hostPort: 70000 }] }] });
/** A 2014 env var spelled `key`: valid, with a DeprecatedField warning. */
const deprecated = (id: string, image = 'app:1') => ({ id, containers: [{ name: 'main', image, env: [{ key: 'MODE', value: 'x' }] }] });

class Sink implements SourceSink {
  readonly updates: (readonly ContainerManifest[])[] = [];
  readonly errors: KubeletError[] = [];
  readonly warnings: SourceWarning[] = [];
  update(manifests: readonly ContainerManifest[]): void {
    this.updates.push(manifests);
  }
  error(error: Error): void {
    this.errors.push(error as KubeletError);
  }
  warning(warning: SourceWarning): void {
    this.warnings.push(warning);
  }
  get ids(): string[] {
    return (this.updates.at(-1) ?? []).map((m) => m.id);
  }
  /** The messages said since the last call. */
  said(): string[] {
    return this.errors.splice(0).map((e) => e.message);
  }
}

const started = (options: Partial<ManifestIntakeOptions> = {}) => {
  const intake = new ManifestIntake({ adapter: 'test', ...options });
  const sink = new Sink();
  intake.start(sink);
  return { intake, sink };
};

describe('ManifestIntake', () => {
  it('delivers the set first after start, even empty, then only when it changes', () => {
    const { intake, sink } = started();
    intake.commit();
    expect(sink.updates).toEqual([[]]);
    intake.read('a.yaml', text(manifest('a')));
    intake.commit();
    intake.read('a.yaml', `# reformatted\n${text(manifest('a'))}`);
    intake.commit();
    expect(sink.updates.map((u) => u.map((m) => m.id))).toEqual([[], ['a']]);
    intake.start(sink);
    intake.commit();
    expect(sink.updates).toHaveLength(3);
  });

  it('keeps the last good version of a manifest that turns invalid, and all of a document whose text is unreadable or cannot be had', () => {
    const { intake, sink } = started();
    intake.read('m', text(manifest('a'), manifest('b')));
    intake.commit();
    intake.read('m', text(badPort('a'), manifest('b', 'app:2')));
    intake.commit();
    expect(sink.updates.at(-1)?.map((m) => `${m.id}:${m.containers[0]?.image}`)).toEqual(['b:app:2', 'a:app:1']);
    expect(sink.errors.map((e) => [e.code, e.fieldErrors.map((f) => f.path)])).toEqual([
      ['InvalidManifest', ['containers[0].ports[0].hostPort']],
    ]);
    intake.read('m', '[{"id": ');
    intake.commit();
    intake.fail('m', new KubeletError('Unavailable', 'm: cannot read'));
    intake.commit();
    expect(sink.updates).toHaveLength(2);
    expect(sink.errors.map((e) => e.code)).toEqual(['InvalidManifest', 'InvalidManifest', 'Unavailable']);
  });

  // The sources differed: the HTTP source never delivered an unreadable first body, the etcd source
  // delivered an empty set for an unreadable value at start, which would stop the pods the key
  // still asked for after an agent restart. One rule: an unreadable text is never an empty set.
  it('delivers nothing, not even an empty set, while no document was ever readable', () => {
    const { intake, sink } = started();
    intake.read('key', '');
    intake.keep([]); // gone: no document is an empty set
    intake.commit();
    expect(sink.updates).toEqual([[]]);

    const fresh = started();
    fresh.intake.read('README', 'These are the manifests of this host.\n');
    fresh.intake.fail('key', new KubeletError('InvalidManifest', 'key: the value is empty'));
    fresh.intake.commit();
    expect(fresh.sink.updates).toEqual([]);
    expect(fresh.sink.errors).toHaveLength(2);
    fresh.intake.read('web.yaml', text(manifest('web')));
    fresh.intake.commit();
    expect(fresh.sink.updates.map((u) => u.map((m) => m.id))).toEqual([['web']]);
    // Once known, a restarted source tells its new sink the last good set, whatever its text is now.
    fresh.intake.read('web.yaml', '{');
    fresh.intake.start(fresh.sink);
    fresh.intake.commit();
    expect(fresh.sink.updates).toHaveLength(2);
  });

  it('takes an id given twice from its first place, in a document and then in document order, and names each repeat', () => {
    const { intake, sink } = started();
    intake.read('20-web.yaml', text(manifest('web', 'second'), manifest('web', 'again')));
    intake.read('10-web.yaml', text(manifest('web', 'first')));
    intake.keep(['10-web.yaml', '20-web.yaml', 'never-read.yaml']);
    intake.commit();
    expect(sink.updates.at(-1)?.map((m) => m.containers[0]?.image)).toEqual(['first']);
    expect(sink.said()).toEqual([
      '20-web.yaml: manifest id "web" is given more than once; using the first',
      'manifest id "web" in 20-web.yaml is also in 10-web.yaml; using 10-web.yaml',
    ]);
    intake.keep(['20-web.yaml']);
    intake.commit();
    expect(sink.updates.at(-1)?.map((m) => m.containers[0]?.image)).toEqual(['second']);
    expect(sink.said()).toEqual([]);
  });

  it('keeps the set delivered last while the documents hold more than the limits, and says so once', () => {
    const { intake, sink } = started({ limits: { maxManifests: 2 }, describedAs: '/etc/kubelet: the files' });
    intake.read('a', text(manifest('a1'), manifest('a2')));
    intake.commit();
    intake.read('b', text(manifest('b')));
    intake.commit();
    intake.commit();
    expect(sink.ids).toEqual(['a1', 'a2']);
    expect(sink.said()).toEqual([
      '/etc/kubelet: the files hold 3 manifests, more than the 2 one source may hold (limits.maxManifests); nothing changed until they hold less',
    ]);
    intake.read('a', text(manifest('a1')));
    intake.commit();
    expect(sink.ids).toEqual(['a1', 'b']);
    expect(sink.said()).toEqual([]);
    // One text of more than the limit is unreadable on its own.
    intake.read('c', text(manifest('c1'), manifest('c2'), manifest('c3')));
    intake.commit();
    expect(sink.said()).toEqual(['c: holds 3 manifests, more than the 2 one source may hold; run fewer pods from it']);
  });

  // The sources differed: file and etcd said a document's problems again, all of them, when any
  // changed (core's ChangeReporter); the HTTP source said only the problems it had not said. One
  // rule, core's: a document's problems are said in full when they change, and nothing when they
  // repeat; another document's news does not repeat them.
  it('says a document’s problems in full when they change, nothing when they repeat, apart from other documents', () => {
    const { intake, sink } = started();
    intake.read('a', text(badPort('x'), manifest('y')));
    intake.read('b', text(badPort('z')));
    intake.commit();
    expect(sink.said()).toEqual([expect.stringMatching(/^a\[0\] \(id "x"\)/), expect.stringMatching(/^b\[0\] \(id "z"\)/)]);
    intake.read('a', text(badPort('x'), manifest('y')));
    intake.commit();
    expect(sink.said()).toEqual([]);
    intake.read('a', text(badPort('x'), badPort('y')));
    intake.commit();
    expect(sink.said()).toEqual([expect.stringMatching(/^a\[0\] \(id "x"\)/), expect.stringMatching(/^a\[1\] \(id "y"\)/)]);
    intake.read('a', text(manifest('x'), manifest('y')));
    intake.read('a', text(badPort('x'), manifest('y')));
    intake.commit();
    expect(sink.said()).toEqual([expect.stringMatching(/^a\[0\] \(id "x"\)/)]);
  });

  // The file source did not say a standing problem to the sink of a restart; the HTTP and etcd
  // sources did. One rule: a restarted source tells its new sink everything afresh.
  it('says what stands again after start, warnings too', () => {
    const { intake, sink } = started({ limits: { maxManifests: 2 } });
    intake.read('a', text(badPort('x'), deprecated('w')));
    intake.read('b', text(manifest('w'), manifest('v')));
    intake.read('c', text(manifest('u')));
    intake.commit();
    const said = sink.said();
    expect(said).toEqual([
      expect.stringMatching(/^a\[0\] \(id "x"\)/),
      'manifest id "w" in b is also in a; using a',
      "the test source's documents hold 3 manifests, more than the 2 one source may hold (limits.maxManifests); nothing changed until they hold less",
    ]);
    intake.commit();
    expect(sink.said()).toEqual([]);
    intake.start(sink);
    intake.commit();
    expect(sink.said()).toEqual(said);
    expect(sink.warnings.map((w) => w.podId)).toEqual(['w', 'w']);
  });

  it('says each warning once per manifest version, and again for a changed manifest', () => {
    const { intake, sink } = started();
    intake.read('a', text(deprecated('w')));
    intake.commit();
    intake.read('a', text(deprecated('w')));
    intake.read('b', text(manifest('other')));
    intake.commit();
    expect(sink.warnings.map((w) => [w.podId, w.field])).toEqual([['w', 'containers[].env[].key']]);
    intake.read('a', '{'); // unreadable: what it held stays, and so do its warnings
    intake.commit();
    intake.read('a', text(deprecated('w', 'app:2')));
    intake.commit();
    expect(sink.warnings).toHaveLength(2);
  });

  it('holds checked documents as one change, all or nothing within the limits', () => {
    const { intake, sink } = started({ limits: { maxManifests: 2 } });
    const held = (id: string, image = 'app:1') => ({ origin: id, manifests: intake.parse(text(manifest(id, image)), 'request').manifests });
    expect(intake.hold([held('a'), held('b')])).toBeUndefined();
    intake.commit();
    expect(intake.hold([held('c')])).toBe('3 manifests, more than the 2 one source may hold (limits.maxManifests)');
    expect(intake.hold([held('b', 'app:2')])).toBeUndefined(); // a replacement is no growth
    intake.commit();
    expect(sink.updates.map((u) => u.map((m) => `${m.id}:${m.containers[0]?.image}`))).toEqual([
      ['a:app:1', 'b:app:1'],
      ['a:app:1', 'b:app:2'],
    ]);
    expect(intake.hold([held('x'), held('y')], { replaceAll: true })).toBeUndefined();
    expect(intake.has('a')).toBe(false);
    expect(intake.drop('x')).toBe(true);
    expect(intake.drop('x')).toBe(false);
    intake.commit();
    expect(sink.ids).toEqual(['y']);
    expect(sink.errors).toEqual([]);
  });

  it('says nothing after close', () => {
    const { intake, sink } = started();
    intake.close();
    intake.read('a', text(badPort('a')));
    intake.commit();
    expect(sink.updates).toEqual([]);
    expect(sink.errors).toEqual([]);
  });
});

describe("ManifestIntake: the agent's kept set after a restart (issue 27 item 2)", () => {
  const kept = (...ids: string[]) =>
    ids.map((id) => {
      const parsed = new ManifestIntake({ adapter: 'test' }).parse(text(manifest(id, 'kept:1')), 'checkpoint');
      return parsed.manifests[0]!;
    });
  const restoredStart = (restored: readonly ContainerManifest[]) => {
    const intake = new ManifestIntake({ adapter: 'test' });
    const sink = Object.assign(new Sink(), { restored });
    intake.start(sink);
    return { intake, sink };
  };
  const images = (sink: Sink) => (sink.updates.at(-1) ?? []).map((m) => `${m.id}=${m.containers[0]!.image}`);

  it('runs the kept manifests a document unreadable since the restart gave, beside what the readable ones give', () => {
    const { intake, sink } = restoredStart(kept('a', 'b'));
    intake.read('a.yaml', text(manifest('a', 'app:2')));
    intake.read('b.yaml', '{ "id": "b", ');
    intake.commit();
    // a from its readable file (its new version), b as kept: the unreadable file has given nothing.
    expect(images(sink)).toEqual(['a=app:2', 'b=kept:1']);
    // Once b.yaml is readable, it alone says what b.yaml runs; the kept set is dropped.
    intake.read('b.yaml', text(manifest('c')));
    intake.commit();
    expect(images(sink)).toEqual(['a=app:2', 'c=app:1']);
    intake.read('b.yaml', '{ broken again');
    intake.commit();
    expect(images(sink)).toEqual(['a=app:2', 'c=app:1']);
  });

  it('drops the kept set when the unreadable document is gone, and takes it at the first start only', () => {
    const { intake, sink } = restoredStart(kept('a', 'b'));
    intake.read('a.yaml', text(manifest('a')));
    intake.read('b.yaml', 'not: [valid');
    intake.commit();
    expect(sink.ids).toEqual(['a', 'b']);
    intake.keep(['a.yaml']);
    intake.commit();
    expect(sink.ids).toEqual(['a']);
    intake.read('b.yaml', 'not: [valid');
    intake.start(Object.assign(new Sink(), { restored: kept('z') }));
    intake.commit();
    const again = (intake as unknown as { sink: Sink }).sink;
    expect(again.ids).toEqual(['a']);
  });

  it('delivers nothing while no document was ever readable (the agent keeps its set), and an empty source empties it', () => {
    const { intake, sink } = restoredStart(kept('a'));
    intake.fail('key', new KubeletError('InvalidManifest', 'the value is empty'));
    intake.commit();
    expect(sink.updates).toEqual([]);
    const empty = restoredStart(kept('a'));
    empty.intake.commit();
    expect(empty.sink.updates).toEqual([[]]);
  });
});
