import { describeValue, isRecord, type FieldError } from '@kubelet-ts/core';
import { ceilMillis, ceilUnits, parseQuantity } from './quantity.js';

/** The domain fields a v1 container's `resources` sets. */
export interface DomainResources {
  /** Bytes, from `limits.memory`. */
  readonly memory?: number;
  /** CPU shares, from `requests.cpu` (or `limits.cpu` when no request is given, as Kubernetes defaults it). */
  readonly cpu?: number;
  /** From `limits.cpu`. */
  readonly cpuLimitMillis?: number;
  /** Bytes, from `requests.memory`: checked and kept, not applied. */
  readonly memoryRequest?: number;
}

/** The kubelet's largest CPU shares (cgroup v1's maximum); a larger request is clamped to it. */
const MAX_SHARES = 262_144n;
/** A thousand CPUs, in millicores: beyond any host, below where a CFS quota overflows. */
const MAX_CPU_MILLIS = 1_000_000n;
const NAMES = new Set(['cpu', 'memory']);

/**
 * Reads `resources.limits` and `resources.requests` of one container: `cpu` and `memory` in
 * Kubernetes quantities. `requests.memory` is checked (at most the limit) and not applied: one host
 * schedules nothing. Other resource names (`ephemeral-storage`, `hugepages-2Mi`, extended
 * resources) are refused, as the agent cannot give them.
 */
export function decodeResources(input: unknown, path: string, errors: FieldError[]): DomainResources {
  const fail = (at: string, message: string): undefined => {
    errors.push({ path: at, message });
    return undefined;
  };
  if (input == null) return {};
  if (!isRecord(input)) return fail(path, `must be an object, got ${describeValue(input)}`) ?? {};
  const read = (section: 'limits' | 'requests'): Partial<Record<'cpu' | 'memory', { numerator: bigint; scale: number }>> => {
    const raw = input[section];
    if (raw == null) return {};
    if (!isRecord(raw)) return fail(`${path}.${section}`, `must be an object, got ${describeValue(raw)}`) ?? {};
    const out: Partial<Record<'cpu' | 'memory', { numerator: bigint; scale: number }>> = {};
    for (const [name, value] of Object.entries(raw)) {
      const here = `${path}.${section}.${name}`;
      if (!NAMES.has(name)) {
        fail(here, 'not supported; only cpu and memory can be given to a container on this host');
        continue;
      }
      const q = parseQuantity(value);
      if (!q.ok) fail(here, q.message);
      else if (q.value.numerator < 0n) fail(here, 'must not be negative');
      else out[name as 'cpu' | 'memory'] = q.value;
    }
    return out;
  };
  for (const key of Object.keys(input)) {
    if (key !== 'limits' && key !== 'requests') fail(`${path}.${key}`, 'not supported; only limits and requests of cpu and memory are');
  }
  const limits = read('limits');
  const requests = read('requests');
  const out: { memory?: number; cpu?: number; cpuLimitMillis?: number; memoryRequest?: number } = {};

  const limitMillis = limits.cpu === undefined ? undefined : ceilMillis(limits.cpu);
  const requestMillis = requests.cpu === undefined ? limitMillis : ceilMillis(requests.cpu);
  if (limitMillis !== undefined) {
    if (limitMillis === 0n) fail(`${path}.limits.cpu`, 'must be more than 0; leave it out for no limit');
    else if (limitMillis > MAX_CPU_MILLIS) fail(`${path}.limits.cpu`, 'must be at most 1000 CPUs');
    else out.cpuLimitMillis = Number(limitMillis);
  }
  if (requestMillis !== undefined) {
    if (limitMillis !== undefined && requests.cpu !== undefined && requestMillis > limitMillis) {
      fail(`${path}.requests.cpu`, `must be at most the limit (${limitMillis}m), as Kubernetes requires`);
    }
    // The kubelet's shares of a request: milli × 1024 / 1000, at least 2, at most MAX_SHARES.
    const shares = (requestMillis * 1024n) / 1000n;
    out.cpu = Number(shares > MAX_SHARES ? MAX_SHARES : shares < 2n ? 2n : shares);
  }
  if (limits.memory !== undefined) {
    const bytes = ceilUnits(limits.memory);
    if (bytes > BigInt(Number.MAX_SAFE_INTEGER)) fail(`${path}.limits.memory`, `must be at most ${Number.MAX_SAFE_INTEGER} bytes`);
    // 0 is no limit, as in Kubernetes (and the 2014 memory: 0).
    else if (bytes > 0n) out.memory = Number(bytes);
    if (requests.memory !== undefined && ceilUnits(requests.memory) > bytes) {
      fail(`${path}.requests.memory`, 'must be at most the limit, as Kubernetes requires');
    }
  }
  if (requests.memory !== undefined) {
    const bytes = ceilUnits(requests.memory);
    if (bytes > 0n && bytes <= BigInt(Number.MAX_SAFE_INTEGER)) out.memoryRequest = Number(bytes);
  }
  return out;
}
