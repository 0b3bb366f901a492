import { AgentClientError } from './agent-client.js';

/** One requirement of a label selector, as apimachinery's `labels.Requirement` has it. */
export interface Requirement {
  readonly key: string;
  readonly op: 'exists' | 'doesNotExist' | 'equals' | 'notEquals' | 'in' | 'notIn';
  readonly values: readonly string[];
}

/** A label name, with an optional DNS-subdomain prefix (`app.kubernetes.io/name`), as Kubernetes checks it. */
const NAME = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)$/;
const PREFIX = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * Parses a label selector as `kubectl -l` takes one: requirements joined by commas, each
 * `key=value` (or `==`), `key!=value`, `key` (has the label), `!key` (has it not),
 * `key in (a,b)` or `key notin (a,b)`. All must hold. An empty selector selects everything.
 * Throws an `AgentClientError` (exit 1) naming what it could not read.
 */
export function parseSelector(selector: string): readonly Requirement[] {
  if (selector.trim() === '') return [];
  return splitTopLevel(selector).map((part) => requirement(part.trim(), selector));
}

/** Whether `labels` meet every requirement; `!=` and `notin` hold for an object without the label, as in Kubernetes. */
export function selects(requirements: readonly Requirement[], labels: Readonly<Record<string, string>> = {}): boolean {
  return requirements.every(({ key, op, values }) => {
    const value = Object.hasOwn(labels, key) ? labels[key] : undefined;
    switch (op) {
      case 'exists':
        return value !== undefined;
      case 'doesNotExist':
        return value === undefined;
      case 'equals':
      case 'in':
        return value !== undefined && values.includes(value);
      case 'notEquals':
      case 'notIn':
        return value === undefined || !values.includes(value);
    }
  });
}

function requirement(part: string, selector: string): Requirement {
  const bad = (why: string) => new AgentClientError(`invalid label selector ${JSON.stringify(selector)}: ${why}`);
  if (part === '') throw bad('an empty requirement (a comma too many?)');
  let match = /^!\s*(\S+)$/.exec(part);
  if (match !== null) return { key: checkedKey(match[1]!, bad), op: 'doesNotExist', values: [] };
  match = /^(\S+)\s+(in|notin)\s*\((.*)\)$/.exec(part);
  if (match !== null) {
    const values = match[3]!.split(',').map((v) => checkedValue(v.trim(), bad));
    return { key: checkedKey(match[1]!, bad), op: match[2] === 'in' ? 'in' : 'notIn', values };
  }
  match = /^([^=!\s]+)\s*(==|=|!=)\s*(.*)$/.exec(part);
  if (match !== null)
    return { key: checkedKey(match[1]!, bad), op: match[2] === '!=' ? 'notEquals' : 'equals', values: [checkedValue(match[3]!, bad)] };
  if (/^[^=!\s(),]+$/.test(part)) return { key: checkedKey(part, bad), op: 'exists', values: [] };
  throw bad(`cannot read ${JSON.stringify(part)}: use key=value, key!=value, key, !key, key in (a,b) or key notin (a,b)`);
}

function checkedKey(key: string, bad: (why: string) => Error): string {
  const slash = key.indexOf('/');
  const [prefix, name] = slash === -1 ? [undefined, key] : [key.slice(0, slash), key.slice(slash + 1)];
  if (!NAME.test(name) || (prefix !== undefined && (prefix.length > 253 || !PREFIX.test(prefix))))
    throw bad(
      `${JSON.stringify(key)} is not a label key (at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit, after an optional DNS prefix and '/')`,
    );
  return key;
}

function checkedValue(value: string, bad: (why: string) => Error): string {
  if (value !== '' && !NAME.test(value))
    throw bad(
      `${JSON.stringify(value)} is not a label value (at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit)`,
    );
  return value;
}

/** The requirements of a selector: split at the commas outside parentheses. */
function splitTopLevel(selector: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of selector) {
    if (ch === '(') depth += 1;
    else if (ch === ')') depth -= 1;
    if (ch === ',' && depth === 0) {
      parts.push(current);
      current = '';
    } else current += ch;
  }
  parts.push(current);
  return parts;
}
