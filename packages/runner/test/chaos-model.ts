import { Labels, specHashes, validateManifest, type ContainerManifest, type ContainerSummary, type DesiredPod } from '@kubelet-ts/core';
import { StaticManifestSource } from '@kubelet-ts/manifest';
import type { MemoryRuntime, SeededRandom } from '@kubelet-ts/runtime-memory';

/**
 * The chaos suite's world: three sources whose sets change at random, and the rule the runtime
 * must match once the agent has caught up. Every choice is drawn from one `SeededRandom`.
 */

const POD_IDS = Array.from({ length: 10 }, (_, i) => `p${i}`);
const CONTAINER_NAMES = ['main', 'side', 'log'];
// `cache:latest` is pulled on every create (pull policy Always), the others once.
const IMAGES = ['app:1', 'app:2', 'db:5', 'cache:latest'];
const RESTART_POLICIES = [undefined, 'Always', 'OnFailure', 'Never'] as const;

/**
 * A host port per pod and container: the same pod id always claims the same ports, so no two
 * different pods can want one port and every desired state is one the runtime can satisfy.
 */
function hostPortOf(podId: string, container: number): number {
  return 30_000 + POD_IDS.indexOf(podId) * 10 + container;
}

function rawContainer(random: SeededRandom, podId: string, name: string, index: number): Record<string, unknown> {
  return {
    name,
    image: random.pick(IMAGES),
    ...(random.chance(0.3) ? { command: ['run', random.pick(['x', 'y'])] } : {}),
    env: random.chance(0.5) ? [{ name: 'MODE', value: random.pick(['a', 'b', 'c']) }] : [],
    ports: random.chance(0.3)
      ? [{ containerPort: 80 + random.int(2), ...(random.chance(0.5) ? { hostPort: hostPortOf(podId, index) } : {}) }]
      : [],
    ...(random.chance(0.2) ? { imagePullPolicy: random.pick(['Always', 'IfNotPresent']) } : {}),
    ...(random.chance(0.3) ? { livenessProbe: randomProbe(random) } : {}),
  };
}

/**
 * An exec probe: it passes in the memory runtime unless its exec call fails, so under chaos the
 * prober kills containers now and then, outside the pod workers.
 */
function randomProbe(random: SeededRandom): Record<string, unknown> {
  return {
    exec: { command: ['check'] },
    initialDelaySeconds: random.int(5),
    periodSeconds: 1 + random.int(5),
    timeoutSeconds: 1,
    failureThreshold: 1 + random.int(3),
  };
}

function validated(raw: Record<string, unknown>): ContainerManifest {
  const result = validateManifest(raw);
  if (!result.ok) throw new Error(`the chaos generator wrote an invalid manifest: ${JSON.stringify(result.errors)}`);
  return result.manifest;
}

/** A random manifest: one to three containers, random images, env, command, ports, probes and policies. */
function randomManifest(random: SeededRandom, podId: string): ContainerManifest {
  const count = 1 + random.int(CONTAINER_NAMES.length);
  const first = random.int(CONTAINER_NAMES.length);
  const names = Array.from({ length: count }, (_, i) => CONTAINER_NAMES[(first + i) % CONTAINER_NAMES.length]!);
  const restartPolicy = random.pick(RESTART_POLICIES);
  return validated({
    id: podId,
    containers: names.map((name, i) => rawContainer(random, podId, name, i)),
    ...(restartPolicy === undefined ? {} : { restartPolicy }),
    terminationGracePeriodSeconds: random.int(11),
  });
}

/** The manifest with one thing changed: one container's image, env or command, or the restart policy. */
function edited(random: SeededRandom, m: ContainerManifest): ContainerManifest {
  const raw = JSON.parse(JSON.stringify(m)) as { containers: Array<Record<string, unknown>>; restartPolicy?: string };
  const c = random.pick(raw.containers);
  switch (random.int(4)) {
    case 0:
      c['image'] = random.pick(IMAGES);
      break;
    case 1:
      c['env'] = [{ name: 'MODE', value: random.pick(['a', 'b', 'c', 'd']) }];
      break;
    case 2:
      c['command'] = ['run', random.pick(['x', 'y', 'z'])];
      break;
    default:
      raw.restartPolicy = random.pick(['Always', 'OnFailure', 'Never']);
  }
  return validated(raw);
}

/** Three static sources, in priority order, and the sets the test has given each. */
export class ChaosSources {
  readonly sources = ['a', 'b', 'c'].map((name) => new StaticManifestSource(name));
  private readonly sets = new Map<StaticManifestSource, Map<string, ContainerManifest>>(this.sources.map((s) => [s, new Map()]));

  /** What the agent should run: the union of the sets, the earlier source's manifest winning an id. */
  desired(): DesiredPod[] {
    const byId = new Map<string, DesiredPod>();
    for (const source of this.sources) {
      for (const manifest of this.sets.get(source)!.values())
        if (!byId.has(manifest.id)) byId.set(manifest.id, { manifest, source: source.name });
    }
    return [...byId.values()];
  }

  /** Makes one random change to the desired state or to the runtime, and says what it was. */
  change(random: SeededRandom, runtime: MemoryRuntime, node: string): string {
    const source = random.pick(this.sources);
    const set = this.sets.get(source)!;
    const roll = random.next();
    if (roll < 0.3) {
      const id = random.pick(POD_IDS);
      const m = randomManifest(random, id);
      this.put(source, [...set.values()].filter((x) => x.id !== id).concat(m));
      return `${source.name}: set ${id} (${m.containers.map((c) => `${c.name}=${c.image}`).join(' ')}, ${m.restartPolicy ?? 'Always'})`;
    }
    if (roll < 0.45 && set.size > 0) {
      const m = random.pick([...set.values()]);
      const next = edited(random, m);
      this.put(
        source,
        [...set.values()].map((x) => (x === m ? next : x)),
      );
      return `${source.name}: edit ${m.id}`;
    }
    if (roll < 0.55 && set.size > 0) {
      const m = random.pick([...set.values()]);
      this.put(
        source,
        [...set.values()].filter((x) => x !== m),
      );
      return `${source.name}: remove ${m.id}`;
    }
    if (roll < 0.63 && set.size > 0) {
      const m = random.pick([...set.values()]);
      const to = random.pick(this.sources.filter((s) => s !== source));
      this.put(
        source,
        [...set.values()].filter((x) => x !== m),
      );
      this.put(to, [...this.sets.get(to)!.values()].filter((x) => x.id !== m.id).concat(m));
      return `move ${m.id} from ${source.name} to ${to.name}`;
    }
    if (roll < 0.66) {
      this.put(source, []);
      return `${source.name}: clear`;
    }
    const ours = runtime.snapshot().filter((c) => c.state === 'running' && c.labels[Labels.node] === node);
    if (roll < 0.85 && ours.length > 0) {
      const c = random.pick(ours);
      const code = random.pick([0, 1, 137]);
      runtime.exit(c.id, code);
      return `runtime: ${c.id} (${c.labels[Labels.manifestId]}/${c.labels[Labels.containerName]}) exits ${code}`;
    }
    if (roll < 0.88 && ours.length > 0) {
      const c = random.pick(ours);
      runtime.hangOnStop(c.id);
      return `runtime: ${c.id} ignores stop signals`;
    }
    return 'nothing';
  }

  private put(source: StaticManifestSource, manifests: readonly ContainerManifest[]): void {
    this.sets.set(source, new Map(manifests.map((m) => [m.id, m])));
    source.set(manifests);
  }
}

/** How the runtime differs from the desired state. */
export interface Divergence {
  /** A container of a pod or a container name no source asks for. */
  readonly leaks: string[];
  /** More than one running container for one pod container. */
  readonly duplicates: string[];
  /** Anything else still to do: a missing or stale container, or exited ones not collected. */
  readonly pending: string[];
}

export function isConverged(d: Divergence): boolean {
  return d.leaks.length === 0 && d.duplicates.length === 0 && d.pending.length === 0;
}

/**
 * Compares this node's containers with the desired pods. Converged means: per manifest container
 * exactly one container with the current spec hash running (or, when the restart policy says an
 * exited one stays down, that one exited), at most one exited container kept beside it for
 * inspection, and nothing else of this node.
 */
export function divergence(desired: readonly DesiredPod[], containers: readonly ContainerSummary[], node: string): Divergence {
  const leaks: string[] = [];
  const duplicates: string[] = [];
  const pending: string[] = [];
  const byKey = new Map<string, ContainerSummary[]>();
  for (const c of containers) {
    if (c.labels[Labels.node] !== node) continue;
    const key = `${c.labels[Labels.manifestId]}/${c.labels[Labels.containerName]}`;
    byKey.set(key, [...(byKey.get(key) ?? []), c]);
  }
  for (const { manifest } of desired) {
    const hashes = specHashes(manifest);
    manifest.containers.forEach((container, i) => {
      const key = `${manifest.id}/${container.name}`;
      const found = byKey.get(key) ?? [];
      byKey.delete(key);
      const describe = (c: ContainerSummary) => `${key} ${c.id} ${c.state}${c.exitCode === undefined ? '' : ` (exit ${c.exitCode})`}`;
      const running = found.filter((c) => c.state === 'running');
      if (running.length > 1) duplicates.push(`${key}: ${running.length} running (${running.map((c) => c.id).join(', ')})`);
      const stale = found.filter((c) => c.labels[Labels.specHash] !== hashes[i]);
      for (const c of stale) pending.push(`${describe(c)}: stale spec`);
      const current = found.filter((c) => c.labels[Labels.specHash] === hashes[i]);
      const stopped = current.filter((c) => c.state !== 'running');
      if (stopped.some((c) => c.state === 'created')) pending.push(`${key}: created, never started`);
      if (stopped.length > 1) pending.push(`${key}: ${stopped.length} stopped containers kept`);
      if (current.some((c) => c.state === 'running')) return;
      const newest = stopped.sort((a, b) => b.createdAt - a.createdAt)[0];
      const staysDown =
        newest !== undefined && (manifest.restartPolicy === 'Never' || (manifest.restartPolicy === 'OnFailure' && newest.exitCode === 0));
      if (!staysDown)
        pending.push(
          `${key}: not running${newest === undefined ? '' : ` (newest ${describe(newest)}, policy ${manifest.restartPolicy ?? 'Always'})`}`,
        );
    });
  }
  for (const [key, found] of byKey) for (const c of found) leaks.push(`${key} ${c.id} ${c.state}: not desired`);
  return { leaks, duplicates, pending };
}

/** Pod containers with more than one running container right now, whatever their spec. */
export function runningTwice(containers: readonly ContainerSummary[], node: string): string[] {
  const seen = new Map<string, number>();
  for (const c of containers) {
    if (c.labels[Labels.node] !== node || c.state !== 'running') continue;
    const key = `${c.labels[Labels.manifestId]}/${c.labels[Labels.containerName]}`;
    seen.set(key, (seen.get(key) ?? 0) + 1);
  }
  return [...seen].filter(([, n]) => n > 1).map(([key]) => key);
}
