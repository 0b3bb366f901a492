/**
 * Kubernetes resource quantities (`128Mi`, `500m`, `1e3`, `0.5`), read exactly: the number is kept
 * as a rational (a bigint numerator over a power of ten) so `0.1` or `1.5Gi` lose nothing before
 * they are rounded the way the kubelet rounds them.
 */

const SUFFIXES: Readonly<Record<string, { readonly base: bigint; readonly exponent: number }>> = {
  '': { base: 10n, exponent: 0 },
  m: { base: 10n, exponent: -3 },
  k: { base: 10n, exponent: 3 },
  M: { base: 10n, exponent: 6 },
  G: { base: 10n, exponent: 9 },
  T: { base: 10n, exponent: 12 },
  P: { base: 10n, exponent: 15 },
  E: { base: 10n, exponent: 18 },
  Ki: { base: 2n, exponent: 10 },
  Mi: { base: 2n, exponent: 20 },
  Gi: { base: 2n, exponent: 30 },
  Ti: { base: 2n, exponent: 40 },
  Pi: { base: 2n, exponent: 50 },
  Ei: { base: 2n, exponent: 60 },
};

// The grammar of k8s.io/apimachinery's resource.Quantity: a signed decimal, then a binary or
// decimal SI suffix, or a decimal exponent (`e3`, `E-2`). `E` alone is exa; `E3` is an exponent.
const QUANTITY = /^([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?)$/;

/** A quantity as numerator / 10^scale (exact). */
interface Exact {
  readonly numerator: bigint;
  readonly scale: number;
}

export type QuantityResult = { readonly ok: true; readonly value: Exact } | { readonly ok: false; readonly message: string };

/** Reads a quantity written as a string or a plain number (YAML `memory: 1000`). */
export function parseQuantity(input: unknown): QuantityResult {
  const text = typeof input === 'number' && Number.isFinite(input) ? String(input) : input;
  if (typeof text !== 'string') return { ok: false, message: `must be a quantity such as 128Mi or 500m, got ${typeof input}` };
  const m = QUANTITY.exec(text);
  // An exponent beyond ±30 is far outside any resource a host has; refusing it bounds the bigints.
  const exponentPart = m?.[3] === undefined ? 0 : Number(m[3].slice(1));
  if (m === null || Math.abs(exponentPart) > 30) {
    return {
      ok: false,
      message: `must be a Kubernetes quantity (a number with an optional suffix m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or an exponent such as 1e3), got ${JSON.stringify(text.slice(0, 40))}`,
    };
  }
  const [, sign, digits = '0', , suffix = ''] = m;
  const [whole = '', fraction = ''] = digits.split('.');
  let numerator = BigInt(`${whole}${fraction}` || '0');
  let scale = fraction.length;
  const unit = SUFFIXES[suffix] ?? { base: 10n, exponent: 0 };
  const exponent = m[3] === undefined ? unit.exponent : exponentPart;
  if (unit.base === 2n) numerator *= 2n ** BigInt(exponent);
  else if (exponent >= 0) numerator *= 10n ** BigInt(exponent);
  else scale -= exponent;
  if (sign === '-') numerator = -numerator;
  return { ok: true, value: { numerator, scale } };
}

/** Whole units, rounded up (a fraction of a byte is a whole byte, as Kubernetes rounds `Value()`). */
export function ceilUnits(q: Exact): bigint {
  return ceilDiv(q.numerator, 10n ** BigInt(q.scale));
}

/** Thousandths, rounded up (`0.0001` CPU is 1m, as Kubernetes' `MilliValue()` rounds). */
export function ceilMillis(q: Exact): bigint {
  return q.scale <= 3 ? q.numerator * 10n ** BigInt(3 - q.scale) : ceilDiv(q.numerator, 10n ** BigInt(q.scale - 3));
}

function ceilDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b > 0n ? q + 1n : q;
}

const MI = 1024 * 1024;

/** Bytes as a quantity: `Mi` when exact, else the plain integer. */
export function formatBytes(bytes: number): string {
  return bytes % MI === 0 ? `${bytes / MI}Mi` : String(bytes);
}

/**
 * The request in millicores that gives `shares` back: the smallest positive milli whose shares are
 * at least `shares` (`ceil(shares × 1000 / 1024)`, 1m for the minimum of 2), so a conversion
 * round-trips whenever any milli value can. Some share counts (1, 1023, …) have none: 1 is below
 * the kubelet's minimum of 2.
 */
export function millisOfShares(shares: number): number {
  return shares <= 2 ? 1 : Math.ceil((shares * 1000) / 1024);
}
