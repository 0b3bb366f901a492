import { KEY_NAME, LABEL_VALUE, describeValue, isRecord } from './field-checks.js';
import type { ContainerManifest, NodeSelectorRequirement, NodeSelectorTerm } from './manifest.js';
import { isDnsSubdomain } from './naming.js';
import { ContainerChecks } from './validate-container.js';

const OPERATORS: readonly NodeSelectorRequirement['operator'][] = ['In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt', 'Lt'];
const AFFINITY_FIELDS = new Set(['nodeSelectorTerms']);
const TERM_FIELDS = new Set(['matchExpressions', 'matchFields']);
const REQUIREMENT_FIELDS = new Set(['key', 'operator', 'values']);
/** The node label the kubelet names the node by; `matchFields` on `metadata.name` reads it. */
export const HOSTNAME_LABEL = 'kubernetes.io/hostname';

/**
 * The labels a node has without `--node-labels`: its OS and architecture, as the kubelet sets them
 * (with the deprecated `beta.` spellings it still sets), and its name when known.
 */
export function nodeLabelsOf(given: Readonly<Record<string, string>> | undefined, hostname?: string): Record<string, string> {
  const arch = process.arch === 'x64' ? 'amd64' : process.arch === 'ia32' ? '386' : process.arch;
  return {
    'kubernetes.io/os': 'linux',
    'kubernetes.io/arch': arch,
    'beta.kubernetes.io/os': 'linux',
    'beta.kubernetes.io/arch': arch,
    ...(hostname === undefined ? {} : { [HOSTNAME_LABEL]: hostname }),
    ...given,
  };
}

/**
 * Where a pod may run, as the kubelet's admission checks it (`NodeAffinity`): its `nodeSelector`
 * must match this node's labels, and one term of its required node affinity must hold. A pod for
 * another node is refused by field, saying which label it wants and how to give it. And which of
 * the host's namespaces it may join (`hostPID`, `hostIPC`).
 */
export class PlacementChecks extends ContainerChecks {
  protected placement(selector: unknown, affinity: unknown): Pick<ContainerManifest, 'nodeSelector' | 'nodeAffinity'> {
    // At admission (`placementAtAdmission`), the selector is read and not matched: the agent's
    // admission matches it, and a pod for another node becomes `Failed` (`NodeAffinity`).
    const labels = this.checks.placementAtAdmission === true ? undefined : nodeLabelsOf(this.checks.nodeLabels);
    const nodeSelector = selector == null ? undefined : this.selector(selector, labels);
    const nodeAffinity = affinity == null ? undefined : this.affinity(affinity, labels);
    return {
      ...(nodeSelector === undefined ? {} : { nodeSelector }),
      ...(nodeAffinity === undefined ? {} : { nodeAffinity }),
    };
  }

  /**
   * `hostPID` and `hostIPC`: a container in the host's process or IPC namespace sees (and, as root,
   * may signal or trace) every process of the host, so they are taken only where privileged
   * containers are (`--allow-privileged`); `hostPID` with `shareProcessNamespace` is refused, as
   * Kubernetes refuses it.
   */
  protected hostNamespaces(m: Record<string, unknown>, sharePid: boolean): Pick<ContainerManifest, 'hostPID' | 'hostIPC'> {
    const out: { hostPID?: boolean; hostIPC?: boolean } = {};
    for (const field of ['hostPID', 'hostIPC'] as const) {
      const value = m[field];
      if (value == null || value === false) continue;
      if (value !== true) {
        this.fail(field, `must be true or false, got ${describeValue(value)}`);
        continue;
      }
      if (!this.checks.allowPrivileged) {
        this.fail(
          field,
          `true puts the pod's containers in the host's ${field === 'hostPID' ? 'process' : 'IPC'} namespace, where they reach every process of the host, which this agent refuses; run it with --allow-privileged (allowPrivileged) to accept it`,
        );
        continue;
      }
      if (field === 'hostPID' && sharePid)
        this.fail(field, "cannot be true with shareProcessNamespace: the pod shares the host's process namespace or its own, not both");
      out[field] = true;
    }
    return out;
  }

  private selector(input: unknown, labels: Readonly<Record<string, string>> | undefined): Record<string, string> | undefined {
    if (!isRecord(input)) return this.fail('nodeSelector', `must be a map of labels, got ${describeValue(input)}`);
    const out: Record<string, string> = {};
    for (const [key, value] of Object.entries(input)) {
      const path = `nodeSelector.${key}`;
      if (!this.labelKey(key, path) || this.string(value, path, false) === undefined) continue;
      if (labels !== undefined && labels[key] !== value)
        this.fail(
          path,
          `wants the node label ${key}=${String(value)}, and this node's ${key} is ${labels[key] === undefined ? 'not set' : JSON.stringify(labels[key])}: the pod is for another node; give this node the label (--node-labels ${key}=${String(value)}, nodeLabels) or leave the selector out`,
        );
      Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
    }
    return Object.keys(out).length === 0 ? undefined : out;
  }

  private affinity(input: unknown, labels: Readonly<Record<string, string>> | undefined): ContainerManifest['nodeAffinity'] {
    const a = this.record(input, 'nodeAffinity', AFFINITY_FIELDS);
    if (a === undefined) return undefined;
    const before = this.errors.length;
    const terms: NodeSelectorTerm[] = [];
    (this.list(a['nodeSelectorTerms'], 'nodeAffinity.nodeSelectorTerms') ?? []).forEach((raw, i) => {
      const path = `nodeAffinity.nodeSelectorTerms[${i}]`;
      const t = this.record(raw, path, TERM_FIELDS);
      if (t === undefined) return;
      const read = (field: 'matchExpressions' | 'matchFields') =>
        (this.list(t[field], `${path}.${field}`) ?? []).flatMap((r, j) => this.requirement(r, `${path}.${field}[${j}]`, field) ?? []);
      const matchExpressions = read('matchExpressions');
      const matchFields = read('matchFields');
      terms.push({
        ...(matchExpressions.length === 0 ? {} : { matchExpressions }),
        ...(matchFields.length === 0 ? {} : { matchFields }),
      });
    });
    if (this.errors.length > before) return undefined;
    if (terms.length === 0) return this.fail('nodeAffinity.nodeSelectorTerms', 'must list at least one term');
    // Kubernetes: the terms are ORed, a term with no requirement matches nothing.
    if (labels !== undefined && !terms.some((t) => termMatches(t, labels)))
      this.fail(
        'nodeAffinity',
        `no term matches this node (its labels: ${Object.entries(labels)
          .map(([k, v]) => `${k}=${v}`)
          .join(
            ', ',
          )}): the pod is for another node; give this node the labels a term wants (--node-labels, nodeLabels) or leave the affinity out`,
      );
    return { nodeSelectorTerms: terms };
  }

  private requirement(input: unknown, path: string, field: 'matchExpressions' | 'matchFields'): NodeSelectorRequirement | undefined {
    const r = this.record(input, path, REQUIREMENT_FIELDS);
    if (r === undefined) return undefined;
    const key = this.string(r['key'], `${path}.key`, true);
    const operator =
      r['operator'] == null ? this.fail(`${path}.operator`, 'is required') : this.oneOf(r['operator'], `${path}.operator`, OPERATORS);
    const values = (this.list(r['values'], `${path}.values`) ?? []).map((v, i) => this.string(v, `${path}.values[${i}]`, true));
    if (key === undefined || operator === undefined || values.includes(undefined)) return undefined;
    if (field === 'matchFields' && (key !== 'metadata.name' || (operator !== 'In' && operator !== 'NotIn')))
      return this.fail(path, 'must be metadata.name with In or NotIn (the one field a node selector term may match)');
    if (field === 'matchExpressions' && !this.labelKey(key, `${path}.key`)) return undefined;
    const some = operator === 'In' || operator === 'NotIn';
    const one = operator === 'Gt' || operator === 'Lt';
    if (some && values.length === 0) return this.fail(`${path}.values`, `must list at least one value for ${operator}`);
    if (one && (values.length !== 1 || !/^-?\d+$/.test(values[0]!)))
      return this.fail(`${path}.values`, `must be one integer for ${operator}`);
    if (!some && !one && values.length > 0) return this.fail(`${path}.values`, `must be empty for ${operator}`);
    return { key, operator, ...(values.length === 0 ? {} : { values: values as string[] }) };
  }

  private labelKey(key: string, path: string): boolean {
    if (isLabelKey(key)) return true;
    this.fail(path, 'must be a label key: an optional DNS subdomain and "/", then at most 63 letters, digits, "-", "_" and "."');
    return false;
  }
}

/**
 * Whether a node with `labels` may run the pod: its `nodeSelector` labels are all the node's, and
 * one term of its required node affinity holds (the kubelet's `GetRequiredNodeAffinity(pod).Match`).
 */
export function placementMatches(
  manifest: Pick<ContainerManifest, 'nodeSelector' | 'nodeAffinity'>,
  labels: Readonly<Record<string, string>>,
): boolean {
  const selector = manifest.nodeSelector ?? {};
  if (!Object.keys(selector).every((key) => Object.hasOwn(labels, key) && labels[key] === selector[key])) return false;
  return manifest.nodeAffinity === undefined || manifest.nodeAffinity.nodeSelectorTerms.some((t) => termMatches(t, labels));
}

/** Whether a node with `labels` meets every requirement of `term` (one without requirements meets none). */
function termMatches(term: NodeSelectorTerm, labels: Readonly<Record<string, string>>): boolean {
  const expressions = term.matchExpressions ?? [];
  const fields = term.matchFields ?? [];
  if (expressions.length === 0 && fields.length === 0) return false;
  const name = labels[HOSTNAME_LABEL];
  return (
    expressions.every((r) => holds(r, Object.hasOwn(labels, r.key) ? labels[r.key] : undefined)) && fields.every((r) => holds(r, name))
  );
}

function holds(r: NodeSelectorRequirement, value: string | undefined): boolean {
  const values = r.values ?? [];
  switch (r.operator) {
    case 'In':
      return value !== undefined && values.includes(value);
    case 'NotIn':
      return value === undefined || !values.includes(value);
    case 'Exists':
      return value !== undefined;
    case 'DoesNotExist':
      return value === undefined;
    case 'Gt':
    case 'Lt': {
      if (value === undefined || !/^-?\d+$/.test(value)) return false;
      const [have, want] = [Number(value), Number(values[0])];
      return r.operator === 'Gt' ? have > want : have < want;
    }
  }
}

/** A label key: an optional DNS subdomain and `/`, then a name (see `KEY_NAME`). */
export function isLabelKey(key: string): boolean {
  const slash = key.lastIndexOf('/');
  const [prefix, name] = slash < 0 ? [undefined, key] : [key.slice(0, slash), key.slice(slash + 1)];
  return KEY_NAME.test(name) && (prefix === undefined || isDnsSubdomain(prefix));
}

/** A label value, for `--node-labels`: what Kubernetes allows. */
export function isLabelValue(value: string): boolean {
  return LABEL_VALUE.test(value);
}
