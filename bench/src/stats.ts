/** Median, p95 and friends of a list of samples (milliseconds unless said otherwise). */
export interface Summary {
  readonly runs: number;
  readonly median: number;
  readonly p95: number;
  /** Shown in the notes of the rows whose target is a p99 (the table has no column for it). */
  readonly p99: number;
  readonly min: number;
  readonly max: number;
}

export function summarise(samples: readonly number[]): Summary {
  if (samples.length === 0) throw new Error('no samples');
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
  const mid = sorted.length / 2;
  const median = sorted.length % 2 === 1 ? sorted[Math.floor(mid)]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return { runs: sorted.length, median, p95: at(0.95), p99: at(0.99), min: sorted[0]!, max: sorted[sorted.length - 1]! };
}

/** One row of the results: a measurement, optionally against its baseline and a target. */
export interface Row {
  readonly scenario: string;
  readonly metric: string;
  readonly unit: string;
  readonly value: Summary;
  readonly baseline?: { readonly name: string; readonly value: Summary };
  /** `value.median / baseline.median` */
  readonly ratio?: number;
  readonly target?: { readonly text: string; readonly met: boolean };
  readonly note?: string;
}

export function row(fields: Omit<Row, 'ratio'>): Row {
  const ratio = fields.baseline === undefined ? undefined : fields.value.median / fields.baseline.value.median;
  return { ...fields, ...(ratio === undefined ? {} : { ratio }) };
}

export function ms(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e6;
}
