const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * Parses `500ms`, `10s`, `1m`, `1h`, `1m30s`; a bare number is seconds, as the 2014 flags were.
 * Throws with the offending text on anything else.
 */
export function parseDuration(text: string): number {
  const trimmed = text.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const parts = [...trimmed.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== trimmed) {
    throw new Error(`invalid duration ${JSON.stringify(text)}: use e.g. 500ms, 10s, 1m`);
  }
  return Math.round(parts.reduce((sum, [, n, unit]) => sum + Number(n) * (UNITS[unit as string] ?? 0), 0));
}
