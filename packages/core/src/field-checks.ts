import type { FieldError } from './errors.js';
import { isDnsLabel, isManifestId } from './naming.js';

const MAX_STRING = 4096;
/**
 * Kubernetes' label and annotation keys: an optional DNS subdomain prefix and '/', then this name of
 * at most 63 letters, digits, '-', '_' and '.', beginning and ending with a letter or digit; and a label value.
 */
export const KEY_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
export const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;
/**
 * Entries in one list of a manifest (volumes) or a container (command, env, ports, volumeMounts).
 * The kubelet set none, but no real container comes near a thousand arguments, variables, ports or
 * mounts, while each entry is work later (an engine call argument, a port binding, a spec hash
 * input) and 250 containers × 5 lists of them is what one manifest may ask for.
 */
export const MAX_LIST_ENTRIES = 1024;
// No argument, environment value or path of a Linux process can hold a NUL, so a string with one can
// never run as written; paths hold no control characters at all.
const NUL = /\u0000/;
const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * How a value that is not a string was written in the text (`01234` for the number 1234), found by
 * the object or list that holds it and its key there. A message can then show what to quote. The
 * text's decoder (`@kubelet-ts/manifest`) gives it; validation takes it (`ValidateOptions.writtenAs`).
 */
export type WrittenAs = (holder: object, key: string | number) => string | undefined;

/** A plain object (not null, not a list): what a manifest and each of its objects must be. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function join(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  return path === '' ? key : `${path}.${key}`;
}

/**
 * A value as a field error names what was found (`a list`, `number 5`); the v1 Pod decoder of
 * `@kubelet-ts/manifest` uses it too, so its messages read as validation's.
 */
export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (value === undefined) return 'nothing';
  return typeof value === 'object' ? 'an object' : `${typeof value} ${JSON.stringify(value).slice(0, 40)}`;
}

/**
 * A manifest that was accepted but spells a field in a way that is going away. One per deprecated
 * field of a manifest, however often it is used there: sources turn each into one `DeprecatedField`
 * event per manifest version.
 */
export interface ValidationWarning {
  readonly reason: 'DeprecatedField';
  /** The deprecated field, as a pattern: `containers[].volumeMounts[].path`, `containers[].env[].key`. */
  readonly field: string;
  /** Every place the manifest uses it. */
  readonly paths: readonly string[];
  /** What it means and what to write instead. */
  readonly message: string;
}

/** The checks every field is made of, collecting field errors rather than stopping at the first. */
export class FieldChecks {
  readonly errors: FieldError[] = [];
  private readonly deprecations = new Map<string, { paths: string[]; message: string }>();

  constructor(private readonly writtenAs: WrittenAs | undefined) {}

  protected fail(path: string, message: string): undefined {
    this.errors.push({ path, message });
    return undefined;
  }

  /** Notes a use of the deprecated `field` at `path`; `message` says what to write instead. */
  protected deprecated(path: string, field: string, message: string): void {
    const known = this.deprecations.get(field);
    if (known === undefined) this.deprecations.set(field, { paths: [path], message });
    else known.paths.push(path);
  }

  /** The deprecated fields used, one warning each, in the order first met. */
  warnings(): ValidationWarning[] {
    return [...this.deprecations].map(([field, { paths, message }]) => ({ reason: 'DeprecatedField', field, paths, message }));
  }

  /** How `holder[key]` was written in the text it came from, when it is not a string there. */
  protected written(holder: object, key: string | number): string | undefined {
    return this.writtenAs?.(holder, key);
  }

  protected record(value: unknown, path: string, allowed: Set<string>): Record<string, unknown> | undefined {
    if (!isRecord(value)) return this.fail(path, `must be an object, got ${describeValue(value)}`);
    for (const key of Object.keys(value)) {
      if (!allowed.has(key)) this.fail(join(path, key), 'unknown field');
    }
    return value;
  }

  /** A list of at most MAX_LIST_ENTRIES; a longer one is one error, and none of its entries is looked at. */
  protected list(value: unknown, path: string): unknown[] | undefined {
    if (value === undefined || value === null) return [];
    if (!Array.isArray(value)) return this.fail(path, `must be a list, got ${describeValue(value)}`);
    if (value.length > MAX_LIST_ENTRIES) return this.fail(path, `must list at most ${MAX_LIST_ENTRIES} entries, got ${value.length}`);
    return value;
  }

  /**
   * A string, as written. A number or boolean is refused rather than turned into text: YAML reads
   * `01234` as 1234, `0x1F` as 31, `1.10` as 1.1 and a 20-digit number with digits lost, so the
   * text would not be what its author wrote (the kubelet refuses them too). The message shows the
   * value as written, quoted, when the text it came from is known (`written`).
   */
  protected string(value: unknown, path: string, required: boolean, written?: string): string | undefined {
    if (value === undefined || value === null) return required ? this.fail(path, 'is required') : undefined;
    if (typeof value === 'number' || typeof value === 'boolean') {
      return this.fail(path, `must be a string; quote it: ${JSON.stringify(written ?? String(value))}`);
    }
    if (typeof value !== 'string') return this.fail(path, `must be a string, got ${describeValue(value)}`);
    if (required && value === '') return this.fail(path, 'is required');
    if (value.length > MAX_STRING) return this.fail(path, `must be at most ${MAX_STRING} characters`);
    if (NUL.test(value)) return this.fail(path, 'must not contain a NUL character');
    return value;
  }

  /** An absolute path without control characters (and, for a mount, without `:`: the engine's bind syntax). */
  protected absolutePath(value: unknown, path: string, required: boolean, forbidColon = false): string | undefined {
    const s = this.string(value, path, required);
    if (s === undefined || s === '') return s;
    if (!s.startsWith('/')) return this.fail(path, 'must be an absolute path');
    if (CONTROL.test(s)) return this.fail(path, `must not contain control characters, got ${JSON.stringify(s.slice(0, 70))}`);
    if (forbidColon && s.includes(':')) return this.fail(path, `must not contain ":", got ${JSON.stringify(s.slice(0, 70))}`);
    return s;
  }

  protected dnsLabel(value: unknown, path: string, required: boolean): string | undefined {
    const s = this.string(value, path, required);
    if (s === undefined) return undefined;
    if (!isDnsLabel(s)) {
      return this.fail(path, `must be a DNS label (lower-case letters, digits and '-', at most 63), got ${JSON.stringify(s.slice(0, 70))}`);
    }
    return s;
  }

  /** A manifest id: a DNS subdomain (the 2014 rule; see `isManifestId`). */
  protected manifestId(value: unknown, path: string, required: boolean): string | undefined {
    const s = this.string(value, path, required);
    if (s === undefined) return undefined;
    if (!isManifestId(s)) {
      return this.fail(
        path,
        `must be a DNS subdomain (lower-case letters, digits, '-' and '.', at most 253), got ${JSON.stringify(s.slice(0, 70))}`,
      );
    }
    return s;
  }

  protected integer(value: unknown, path: string, min: number, max: number): number | undefined {
    if (typeof value !== 'number' || !Number.isInteger(value)) {
      return this.fail(path, `must be an integer, got ${describeValue(value)}`);
    }
    if (value < min || value > max) return this.fail(path, `must be ${min}-${max}, got ${value}`);
    return value;
  }

  protected oneOf<T extends string>(input: unknown, path: string, allowed: readonly T[]): T | undefined {
    if (input == null) return undefined;
    if (typeof input === 'string' && (allowed as readonly string[]).includes(input)) return input as T;
    return this.fail(path, `must be one of ${allowed.join(', ')}, got ${describeValue(input)}`);
  }
}
