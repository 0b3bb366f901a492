import {
  OBJECT_KEY,
  describeValue,
  isDnsLabel,
  isManifestId,
  isRecord,
  objectKey,
  type FieldError,
  type SourceObject,
} from '@kubelet-ts/core';

/** The kinds a source may give beside its pods: read by the pods of that source, by name. */
export function isV1Object(value: unknown): value is Record<string, unknown> {
  return isRecord(value) && value['apiVersion'] === 'v1' && (value['kind'] === 'ConfigMap' || value['kind'] === 'Secret');
}

export type ObjectResult =
  | { readonly ok: true; readonly object: SourceObject }
  | { readonly ok: false; readonly errors: readonly FieldError[]; readonly key?: string };

/** What a ConfigMap or a Secret may hold in all, as the API server bounds it. */
const MAX_OBJECT_BYTES = 1024 * 1024;
const FIELDS: Readonly<Record<'ConfigMap' | 'Secret', readonly string[]>> = {
  ConfigMap: ['apiVersion', 'kind', 'metadata', 'data', 'binaryData', 'immutable'],
  Secret: ['apiVersion', 'kind', 'metadata', 'data', 'stringData', 'type', 'immutable'],
};
/** Metadata that names the object; the rest of what a cluster keeps there is accepted and means nothing here. */
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * A v1 ConfigMap or Secret as the object its source gives beside its pods. A ConfigMap's `data`
 * is text and its `binaryData` base64; a Secret's `data` is base64 and its `stringData` text, which
 * wins over `data` for the same key (as the API server merges them). Errors name the field and
 * never show a value: a Secret's bytes appear in no message.
 */
export function decodeV1Object(input: Record<string, unknown>): ObjectResult {
  const kind = input['kind'] as 'ConfigMap' | 'Secret';
  const errors: FieldError[] = [];
  const fail = (path: string, message: string) => void errors.push({ path, message });
  for (const key of Object.keys(input)) if (!FIELDS[kind].includes(key)) fail(key, `not supported in a ${kind}`);
  const meta = isRecord(input['metadata']) ? input['metadata'] : {};
  if (!isRecord(input['metadata'])) fail('metadata', `is required (with the ${kind}'s name)`);
  const name = meta['name'];
  if (typeof name !== 'string' || !isManifestId(name))
    fail('metadata.name', `must be a DNS subdomain (lower-case letters, digits, '-' and '.', at most 253), got ${describeValue(name)}`);
  const namespace = meta['namespace'] == null || meta['namespace'] === '' ? 'default' : meta['namespace'];
  if (typeof namespace !== 'string' || !isDnsLabel(namespace))
    fail('metadata.namespace', `must be a DNS label, got ${describeValue(namespace)}`);
  const data: Record<string, Uint8Array> = {};
  const put = (field: string, text: boolean, override: boolean) => {
    const map = input[field];
    if (map == null) return;
    if (!isRecord(map)) return fail(field, `must be a map of keys to ${text ? 'strings' : 'base64 strings'}, got ${describeValue(map)}`);
    for (const [key, value] of Object.entries(map)) {
      const at = `${field}.${key}`;
      if (!OBJECT_KEY.test(key) || key === '.' || key === '..') {
        fail(at, "must be a key of letters, digits, '-', '_' and '.'");
        continue;
      }
      if (typeof value !== 'string') {
        fail(at, `must be a string, got ${value === null ? 'null' : typeof value}`);
        continue;
      }
      if (!text && (value.length % 4 !== 0 || !BASE64.test(value))) {
        fail(
          at,
          `must be base64 (as kubectl writes a ${kind}'s ${field}); write the text under ${kind === 'Secret' ? 'stringData' : 'data'} instead`,
        );
        continue;
      }
      if (Object.hasOwn(data, key) && !override) {
        fail(at, `key "${key}" is also in ${kind === 'ConfigMap' ? 'data' : field}; a key may be given once`);
        continue;
      }
      Object.defineProperty(data, key, {
        value: text ? Buffer.from(value, 'utf8') : Buffer.from(value, 'base64'),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
  };
  if (kind === 'ConfigMap') {
    put('data', true, false);
    put('binaryData', false, false);
  } else {
    put('data', false, false);
    put('stringData', true, true);
    if (input['type'] != null && typeof input['type'] !== 'string') fail('type', `must be a string, got ${describeValue(input['type'])}`);
  }
  let bytes = 0;
  for (const [key, value] of Object.entries(data)) bytes += key.length + value.byteLength;
  if (bytes > MAX_OBJECT_BYTES) fail('data', `must hold at most ${MAX_OBJECT_BYTES} bytes in all (as the API server allows), got ${bytes}`);
  const key = typeof name === 'string' && typeof namespace === 'string' ? objectKey(kind, namespace, name) : undefined;
  if (errors.length > 0) return key === undefined ? { ok: false, errors } : { ok: false, errors, key };
  return { ok: true, object: { kind, namespace: namespace as string, name: name as string, data } };
}
