import fc from 'fast-check';
import {
  canonicalJson,
  validateManifest,
  type ContainerManifest,
  type FieldError,
  type KubeletError,
  type SourceSink,
} from '@kubelet-ts/core';
import { firstOfEachId, parseManifests, retainLastGood } from '@kubelet-ts/manifest';
import { recordFigures, reliabilityRuns, reliabilitySeed, type ReliabilityCounts } from '../reliability.js';
import { resolveTestApi, type TestApiExpect, type TestApiOption } from '../test-api.js';
import { describeFuzzInput, fuzzBytes, fuzzInput, type FuzzInput } from './cases.js';
import { heapUsedMB } from './memory.js';
import { renderDocument } from './render.js';
import type { ManifestInput } from './valid-manifests.js';

/**
 * A source whose backend holds one document that each publication replaces (a file, a URL's body,
 * an etcd key). `sentinel` says where the sentinel manifest lives:
 * - `separate`: `start` publishes it in a document of its own (another file of the directory);
 * - `embedded`: the source has one document only, so the contract puts the sentinel first in every
 *   document it publishes (a bad neighbour in the same document must not disturb it either).
 */
export interface DocumentFuzzHarness {
  readonly kind: 'document';
  readonly sentinel: 'separate' | 'embedded';
  /** Starts the source with `sink`; for `separate`, after writing `sentinel` where it stays (for `embedded`, it is already published). */
  start(sink: SourceSink, sentinel: string): Promise<void>;
  /** Replaces the fuzzed document with `bytes` (also before `start`); resolves once the backend holds them. */
  publish(bytes: Uint8Array): Promise<void>;
  close(): Promise<void>;
}

/** A source that is sent manifests one request at a time (the agent's own server). */
export interface RequestFuzzHarness {
  readonly kind: 'request';
  start(sink: SourceSink): Promise<void>;
  /** Sends one document as a request that adds or replaces a manifest; resolves with the answer. */
  send(bytes: Uint8Array): Promise<{ readonly ok: boolean; readonly fieldErrors: readonly FieldError[] }>;
  /** Removes a manifest sent earlier, so that the set stays small over a long run. */
  withdraw(id: string): Promise<void>;
  close(): Promise<void>;
}

/** How `sourceFuzzContract` feeds a source: documents it reads (a file, a URL, a key) or requests it answers (a server). */
export type SourceFuzzHarness = DocumentFuzzHarness | RequestFuzzHarness;

/** What `sourceFuzzContract` takes: how many inputs, how long a step and the whole run may take, and how much the heap may grow. */
export interface SourceFuzzOptions extends TestApiOption {
  /** Inputs per run (short in CI, long under `KUBELET_TS_RELIABILITY=long`). */
  readonly runs: ReliabilityCounts;
  /** How long the source may take to act on one publication. Default 10 s. */
  readonly stepTimeoutMs?: number;
  /** The test timeout of the whole run. Default 15 min. */
  readonly testTimeoutMs?: number;
  /**
   * Heap growth allowed over the run, after a full collection. Default 48 MB: a source holds one
   * document (at most about 1.25 MiB here) and its parse, so what this catches is anything kept
   * per input, which over a long run of 10,000 inputs shows at 5 KB each.
   */
  readonly maxHeapGrowthMB?: number;
}

const SENTINEL_ID = 'fuzz-sentinel';
/** Generated ids never start like the sentinel's or a barrier's, so no input can replace them. */
const reserved = (id: string) => id.startsWith('fuzz-');

const SENTINEL_INPUT: ManifestInput = {
  version: 'v1beta1',
  id: SENTINEL_ID,
  volumes: [{ name: 'data' }],
  containers: [
    {
      name: 'web',
      image: 'nginx:1.7',
      ports: [{ name: 'http', containerPort: 80, hostPort: 8080 }],
      volumeMounts: [{ name: 'data', mountPath: '/data' }],
      livenessProbe: { httpGet: { path: '/', port: 'http' } },
    },
    { name: 'side', image: 'busybox', command: ['sleep', '3600'], env: [{ name: 'MODE', value: 'sentinel' }] },
  ],
};

function normalised(input: unknown): ContainerManifest {
  const result = validateManifest(input);
  if (!result.ok) throw new Error(`fuzz contract: not a valid manifest: ${JSON.stringify(result.errors)}`);
  return result.manifest;
}

/** Keeps the latest set and what was said since `mark`, not the history, so the heap measures the source. */
class FuzzSink implements SourceSink {
  latest: readonly ContainerManifest[] | undefined;
  updatesSinceMark: (readonly ContainerManifest[])[] = [];
  errorsSinceMark: KubeletError[] = [];
  updates = 0;
  errors = 0;
  /** A delivered set without the sentinel, or with it changed, once it was running: the first one seen. */
  disturbed: string | undefined;
  /** The sentinel has been delivered (a server source starts empty, before it is posted). */
  private running = false;

  constructor(private readonly sentinel: ContainerManifest) {}

  update(manifests: readonly ContainerManifest[]): void {
    this.latest = manifests;
    this.updatesSinceMark.push(manifests);
    this.updates += 1;
    if (this.disturbed !== undefined) return;
    const found = manifests.find((m) => m.id === this.sentinel.id);
    const intact = found !== undefined && canonicalJson(found) === canonicalJson(this.sentinel);
    if (this.running && !intact) this.disturbed = `set ${this.updates}: ${JSON.stringify(found ?? 'missing')}`;
    this.running ||= intact;
  }

  error(error: Error): void {
    this.errorsSinceMark.push(error as KubeletError);
    this.errors += 1;
  }

  mark(): void {
    this.updatesSinceMark = [];
    this.errorsSinceMark = [];
  }

  async until(check: () => boolean, what: string, ms: number): Promise<void> {
    const deadline = Date.now() + ms;
    while (!check()) {
      if (Date.now() > deadline) {
        throw new Error(
          `timed out after ${ms} ms waiting for ${what}; updates since: ${this.updatesSinceMark.length}, errors since: ${this.errorsSinceMark.map((e) => e.message.slice(0, 200)).join(' | ')}`,
        );
      }
      await new Promise((r) => setTimeout(r, 1));
    }
  }
}

const sameSet = (a: readonly ContainerManifest[] | undefined, b: readonly ContainerManifest[]) =>
  a !== undefined && canonicalJson(a) === canonicalJson(b);
const encode = (text: string) => new TextEncoder().encode(text);

/**
 * The fuzz contract of a manifest source: generated inputs (valid, one mutation from valid,
 * unreadable, random) go through the source's real backend, and for every one:
 * - nothing throws and no promise rejection goes unhandled;
 * - the sentinel, a valid manifest published at the start, is in every set delivered, unchanged;
 * - the set delivered is what parsing with "retain last good" says it must be (so an invalid
 *   version of a running manifest leaves the running one in force, and unreadable text changes
 *   nothing), and each invalid input is reported with `fieldErrors` naming the broken path;
 * - after the run, the heap (after a full collection) has not grown past a bound.
 *
 * Sources deliver only changed sets and say a standing problem once, so an input that changes
 * nothing would give nothing to wait for. Each input is therefore preceded by a publication of its
 * own: the valid manifest it was mutated from (or nothing) with a barrier manifest of a unique id.
 * After that, every input changes the set or raises an error, and the wait is for exactly that.
 * This also tests the case that matters: a valid manifest running, then a broken version of it.
 */
export function sourceFuzzContract(
  name: string,
  makeHarness: () => SourceFuzzHarness | Promise<SourceFuzzHarness>,
  options: SourceFuzzOptions,
): void {
  const { describe, expect, it } = resolveTestApi(options.testApi, `sourceFuzzContract('${name}')`);
  const stepMs = options.stepTimeoutMs ?? 10_000;
  describe(`source fuzz: ${name}`, () => {
    it(
      'keeps the sentinel, follows parsing with retain-last-good, names each broken field, and never crashes',
      async () => {
        const seed = reliabilitySeed();
        const runs = reliabilityRuns(options.runs);
        const harness = await makeHarness();
        const sentinel = normalised(SENTINEL_INPUT);
        const sink = new FuzzSink(sentinel);
        const unhandled: unknown[] = [];
        const onUnhandled = (reason: unknown) => unhandled.push(reason);
        const counts = { valid: 0, invalid: 0, unreadable: 0, random: 0 };
        let barriers = 0;
        let slowestMs = 0;
        const heapBefore = heapUsedMB();
        const started = Date.now();
        process.on('unhandledRejection', onUnhandled);
        try {
          const step =
            harness.kind === 'document'
              ? await documentSteps(harness, sink, sentinel, stepMs, expect)
              : await requestSteps(harness, sink, sentinel, expect);
          await fc.assert(
            fc.asyncProperty(fuzzInput({ avoidId: reserved }), async (input) => {
              counts[input.kind] += 1;
              const began = performance.now();
              try {
                await step(input, `fuzz-barrier-${(barriers += 1)}`);
              } catch (error) {
                throw new Error(`${describeFuzzInput(input)}: ${(error as Error).message}`, { cause: error });
              }
              slowestMs = Math.max(slowestMs, performance.now() - began);
              expect(sink.disturbed).toBeUndefined();
              expect(unhandled).toEqual([]);
            }),
            { seed, numRuns: runs },
          );
        } finally {
          process.off('unhandledRejection', onUnhandled);
          await harness.close();
        }
        const durationMs = Date.now() - started;
        const heapMB = heapUsedMB();
        console.log(`fuzz-${name}: seed ${seed}, ${runs} inputs in ${durationMs} ms (replay with KUBELET_TS_SEED=${seed})`);
        recordFigures(`fuzz-${name}`, {
          seed,
          inputs: runs,
          ...counts,
          publications: harness.kind === 'document' ? runs * 2 : undefined,
          updates: sink.updates,
          errors: sink.errors,
          durationMs,
          slowestInputMs: Math.round(slowestMs),
          heapMB: Math.round(heapMB * 10) / 10,
          heapGrowthMB: Math.round((heapMB - heapBefore) * 10) / 10,
        });
        expect(heapMB - heapBefore).toBeLessThan(options.maxHeapGrowthMB ?? 48);
      },
      options.testTimeoutMs ?? 15 * 60_000,
    );
  });
}

type Step = (input: FuzzInput, barrierId: string) => Promise<void>;

async function documentSteps(
  harness: DocumentFuzzHarness,
  sink: FuzzSink,
  sentinel: ContainerManifest,
  stepMs: number,
  expect: TestApiExpect,
): Promise<Step> {
  const sentinelText = renderDocument(SENTINEL_INPUT, 'yaml');
  const prefix = encode(`${sentinelText}---\n`);
  const compose = (bytes: Uint8Array) => (harness.sentinel === 'embedded' ? Buffer.concat([prefix, bytes]) : bytes);
  /** The fuzzed document's manifests in force, as the source must hold them. */
  let channel: readonly ContainerManifest[] = [];

  /** Publishes `bytes` and waits for what parsing says the source must deliver and report. */
  const publish = async (bytes: Uint8Array, what: string) => {
    const composed = compose(bytes);
    const parsed = parseManifests(composed, 'fuzz');
    channel = firstOfEachId(retainLastGood(parsed, channel), 'fuzz').manifests;
    const expected = harness.sentinel === 'embedded' ? channel : firstOfEachId([sentinel, ...channel], 'fuzz').manifests;
    const changes = !sameSet(sink.latest, expected);
    const complains = parsed.unreadable !== undefined || parsed.rejected.length > 0;
    sink.mark();
    await harness.publish(composed);
    await sink.until(() => (!changes || sameSet(sink.latest, expected)) && (!complains || sink.errorsSinceMark.length > 0), what, stepMs);
    // At most the one expected set: a source that delivered something else on the way would show here.
    for (const delivered of sink.updatesSinceMark) expect(canonicalJson(delivered)).toBe(canonicalJson(expected));
    if (!complains) expect(sink.errorsSinceMark.filter((e) => e.code === 'InvalidManifest')).toEqual([]);
    return { parsed, expected };
  };

  // The sentinel is there before the source starts: it must be in the very first set.
  if (harness.sentinel === 'embedded') await harness.publish(prefix);
  await harness.start(sink, sentinelText);
  await sink.until(() => sameSet(sink.latest, [sentinel]), 'the sentinel', stepMs);

  return async (input, barrierId) => {
    const barrier = normalised({ id: barrierId, containers: [{ name: 'barrier', image: 'busybox' }] });
    const base = input.kind === 'invalid' ? [input.invalid.base, barrier] : [barrier];
    await publish(encode(renderDocument(base, 'json')), 'the barrier');
    const before = sink.latest ?? [];
    const { parsed, expected } = await publish(fuzzBytes(input), 'the input');
    expect(sameSet(sink.latest, expected)).toBe(true);
    switch (input.kind) {
      case 'valid':
        expect(sink.latest).toContainEqual(normalised(input.manifest));
        break;
      case 'invalid': {
        const paths = sink.errorsSinceMark.flatMap((e) => (e.fieldErrors ?? []).map((f) => f.path));
        expect(paths).toContain(input.invalid.path);
        // The valid version it broke is still in force, unless the mutation broke its id.
        if (input.invalid.keepsId) expect(sink.latest).toContainEqual(normalised(input.invalid.base));
        break;
      }
      case 'unreadable':
        expect(parsed.unreadable).toBeDefined();
        expect(sink.latest).toEqual(before);
        break;
      case 'random':
        if (parsed.unreadable !== undefined) expect(sink.latest).toEqual(before);
        break;
    }
  };
}

async function requestSteps(
  harness: RequestFuzzHarness,
  sink: FuzzSink,
  sentinel: ContainerManifest,
  expect: TestApiExpect,
): Promise<Step> {
  const held = new Map<string, ContainerManifest>();
  /** Sends `bytes`; the answer and the set must be what parsing one manifest says. */
  const send = async (bytes: Uint8Array) => {
    const parsed = parseManifests(bytes, 'request');
    const accepted =
      parsed.unreadable === undefined && parsed.rejected.length === 0 && parsed.manifests.length === 1 ? parsed.manifests[0] : undefined;
    sink.mark();
    const answer = await harness.send(bytes);
    expect(answer.ok).toBe(accepted !== undefined);
    if (accepted !== undefined) held.set(accepted.id, accepted);
    // The server delivers before it answers: the set is already there, or unchanged.
    expect(sink.updatesSinceMark).toHaveLength(accepted === undefined ? 0 : 1);
    expect(sameSet(sink.latest, [...held.values()])).toBe(true);
    return answer;
  };

  await harness.start(sink);
  await send(encode(renderDocument(SENTINEL_INPUT, 'yaml')));
  expect(sink.latest).toEqual([sentinel]);

  return async (input) => {
    if (input.kind === 'invalid') await send(encode(renderDocument(input.invalid.base, 'json')));
    const answer = await send(fuzzBytes(input));
    if (input.kind === 'invalid') {
      expect(answer.fieldErrors.map((f) => f.path)).toContain(input.invalid.path);
      if (input.invalid.keepsId) expect(sink.latest).toContainEqual(normalised(input.invalid.base));
    }
    for (const id of [...held.keys()].filter((id) => id !== SENTINEL_ID)) {
      await harness.withdraw(id);
      held.delete(id);
    }
    expect(sameSet(sink.latest, [...held.values()])).toBe(true);
  };
}
