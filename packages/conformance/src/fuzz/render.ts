import fc from 'fast-check';

/** How a document is written: JSON (compact or indented) or block YAML; lists also as `---` documents. */
export type DocumentStyle = 'json' | 'json-indented' | 'yaml' | 'yaml-documents';

/** Draws one of the ways a source's text may write a manifest (JSON, indented JSON, YAML, several YAML documents). */
export const documentStyle: fc.Arbitrary<DocumentStyle> = fc.constantFrom('json', 'json-indented', 'yaml', 'yaml-documents');

/**
 * Writes `value` (one manifest, or a list with `list`) as text. Every scalar and key is written as
 * a JSON string or number, which YAML reads back unchanged, so no generated text can change
 * meaning through YAML's implicit typing (`no`, `0x10`, `1e3`).
 */
export function renderDocument(value: unknown, style: DocumentStyle): string {
  if (style === 'json') return JSON.stringify(value);
  if (style === 'json-indented') return JSON.stringify(value, null, 2);
  if (style === 'yaml-documents' && Array.isArray(value)) return value.map((item) => `---\n${renderYaml(item)}\n`).join('');
  return `${renderYaml(value)}\n`;
}

/** Writes `value` as block YAML whose every key and scalar is a JSON string or number, so YAML reads it back unchanged. */
export function renderYaml(value: unknown): string {
  return node(value, '').replace(/^[\n ]/, '');
}

function node(value: unknown, indent: string): string {
  if (Array.isArray(value) && value.length > 0) return value.map((item) => `\n${indent}-${node(item, `${indent}  `)}`).join('');
  if (isRecord(value)) {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    if (entries.length > 0) return entries.map(([k, v]) => `\n${indent}${JSON.stringify(k)}:${node(v, `${indent}  `)}`).join('');
  }
  return ` ${JSON.stringify(value ?? null)}`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
