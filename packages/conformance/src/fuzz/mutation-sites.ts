/** Where a mutation breaks a manifest: a container, a port, an env entry or a mount of it, by fast-check's picks. */

export type Rec = Record<string, unknown>;

/** Random choices for a mutation, drawn by fast-check so that a seed replays them. */
export class Picks {
  private next = 0;
  constructor(private readonly values: readonly number[]) {}
  index(length: number): number {
    const value = this.values[this.next++ % this.values.length] ?? 0;
    return length <= 0 ? 0 : value % length;
  }
  pick<T>(items: readonly T[]): T {
    return items[this.index(items.length)] as T;
  }
}

export const list = (value: unknown): Rec[] => (Array.isArray(value) ? (value as Rec[]) : []);
export const containersOf = (m: Rec) => list(m['containers']);

/** A container of the manifest, and its path. */
export function someContainer(m: Rec, r: Picks): [Rec, string] {
  const cs = containersOf(m);
  const i = r.index(cs.length);
  return [cs[i]!, `containers[${i}]`];
}

/** An element of `field` (created from `fresh` when the list is empty), and its path. */
export function someItem(parent: Rec, field: string, path: string, r: Picks, fresh: () => Rec): [Rec, string] {
  const items = Array.isArray(parent[field]) ? (parent[field] as Rec[]) : [];
  parent[field] = items;
  if (items.length === 0) items.push(fresh());
  const i = r.index(items.length);
  return [items[i]!, `${path}.${field}[${i}]`];
}

export function someVolumeMount(m: Rec, r: Picks): [Rec, string] {
  const [c, path] = someContainer(m, r);
  if (list(c['volumeMounts']).length === 0) {
    const volumes = list(m['volumes']);
    m['volumes'] = volumes;
    const name = freshName(
      volumes.map((v) => String(v['name'])),
      'data',
    );
    volumes.push({ name });
    c['volumeMounts'] = [{ name, mountPath: '/data' }];
  }
  return someItem(c, 'volumeMounts', path, r, () => ({}));
}

export function freshName(taken: readonly string[], base: string): string {
  let name = base;
  while (taken.includes(name)) name += '-x';
  return name;
}

/** Sets a key that no field has, even `__proto__` (as JSON.parse and YAML would). */
export function setOwn(target: Rec, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

export const port = (c: Rec, path: string, r: Picks) => someItem(c, 'ports', path, r, () => ({ containerPort: 80 }));
export const env = (c: Rec, path: string, r: Picks) => someItem(c, 'env', path, r, () => ({ name: 'A', value: 'b' }));
