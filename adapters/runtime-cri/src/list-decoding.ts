/**
 * ListContainers and ListPodSandbox answers decoded once an entry: an entry that is the last
 * answer's entry of that id again decodes to the same object as then, without being decoded again.
 * A steady node answers with the same entries pass after pass (CRI changes only a container's or
 * sandbox's state), and decoding both lists of 200 pods is about 0.5 ms of the agent's no-op pass.
 *
 * "The same entry": every byte the same, but those of its maps (labels, annotations), which must
 * only be as long as before. containerd 1.6 writes a map in Go's random order, so two answers of one
 * container seldom match byte for byte; and CRI has no call that changes a container's or sandbox's
 * labels or annotations (the adapter's records rely on it too, see `ListedRecords`). A map of
 * another length, or any other byte changed (the state, say), is a new entry.
 *
 * Both answers are `repeated <Entry> <list> = 1` and both entries `string id = 1`, the first field
 * written; an answer in any other shape is decoded whole, as without the cache.
 */

type Deserialize = (bytes: Buffer) => unknown;

/** Ids remembered at most; past it the cache starts again (a host with more decodes them all, as before). */
const MAX_ENTRIES = 4_096;
const LIST_FIELD = 0x0a; // field 1, length-delimited
const ID_FIELD = 0x0a;

/** The map fields of each list's entries: CRI's `Container` (labels 8, annotations 9) and `PodSandbox` (5, 6). */
const MAP_FIELDS = { containers: [8, 9], items: [5, 6] } as const;

interface Known {
  readonly bytes: Buffer;
  /** Where its maps' fields are, one after the other (the same place, empty, when it has none). */
  readonly maps: { readonly start: number; readonly end: number };
  readonly value: unknown;
}

/** A varint at `at`: its value and the offset after it, or undefined past the end or above 2^28. */
function varint(bytes: Buffer, at: number): { value: number; next: number } | undefined {
  let value = 0;
  for (let shift = 0, i = at; shift < 28 && i < bytes.length; shift += 7, i++) {
    const b = bytes[i]!;
    value |= (b & 0x7f) << shift;
    if ((b & 0x80) === 0) return { value, next: i + 1 };
  }
  return undefined;
}

/**
 * Calls `visit` with each top-level field of `entry` (its number and the span of its tag and value);
 * false when the entry is not well formed (or holds a group), and the walk stops.
 */
function walk(entry: Buffer, visit: (field: number, start: number, end: number) => boolean): boolean {
  let at = 0;
  while (at < entry.length) {
    const tag = varint(entry, at);
    if (tag === undefined) return false;
    let end: number;
    switch (tag.value & 7) {
      case 0: {
        // A value of up to 10 bytes (an int64 such as createdAt): skipped, not read.
        end = tag.next;
        while (end < entry.length && end - tag.next < 10 && (entry[end]! & 0x80) !== 0) end++;
        if (end >= entry.length || (entry[end]! & 0x80) !== 0) return false;
        end++;
        break;
      }
      case 1:
        end = tag.next + 8;
        break;
      case 2: {
        const length = varint(entry, tag.next);
        if (length === undefined) return false;
        end = length.next + length.value;
        break;
      }
      case 5:
        end = tag.next + 4;
        break;
      default:
        return false;
    }
    if (end > entry.length || !visit(tag.value >>> 3, at, end)) return false;
    at = end;
  }
  return true;
}

/** Where the map fields of a well-formed entry are, when they are one after the other; else undefined. */
function mapsOf(entry: Buffer, maps: readonly number[]): { start: number; end: number } | undefined {
  let start = -1;
  let end = -1;
  const ok = walk(entry, (field, from, to) => {
    if (!maps.includes(field)) return true;
    if (start === -1) start = from;
    else if (end !== from) return false; // another field between two maps' entries
    end = to;
    return true;
  });
  if (!ok) return undefined;
  return start === -1 ? { start: entry.length, end: entry.length } : { start, end };
}

/** Whether `entry` is `known` again: every byte the same, but its maps', which are as long as before. */
function same(entry: Buffer, known: Known): boolean {
  const { start, end } = known.maps;
  return (
    entry.length === known.bytes.length &&
    entry.compare(known.bytes, 0, start, 0, start) === 0 &&
    entry.compare(known.bytes, end, entry.length, end, entry.length) === 0
  );
}

/** The entry's id (its first field), or undefined when it does not start with one. */
function idOf(entry: Buffer): string | undefined {
  if (entry[0] !== ID_FIELD) return undefined;
  const length = varint(entry, 1);
  if (length === undefined || length.next + length.value > entry.length) return undefined;
  return entry.toString('latin1', length.next, length.next + length.value);
}

/** The answer's entries (each the bytes of one), or undefined when it holds anything else. */
function entriesOf(answer: Buffer): Buffer[] | undefined {
  const entries: Buffer[] = [];
  let at = 0;
  while (at < answer.length) {
    if (answer[at] !== LIST_FIELD) return undefined;
    const length = varint(answer, at + 1);
    if (length === undefined || length.next + length.value > answer.length) return undefined;
    entries.push(answer.subarray(length.next, length.next + length.value));
    at = length.next + length.value;
  }
  return entries;
}

/** The list's entries again as an answer of their own, for the whole-answer decoder. */
function answerOf(entries: readonly Buffer[]): Buffer {
  const parts: Buffer[] = [];
  for (const entry of entries) {
    const header = [LIST_FIELD];
    for (let n = entry.length; ; n >>>= 7) {
      if (n < 0x80) {
        header.push(n);
        break;
      }
      header.push((n & 0x7f) | 0x80);
    }
    parts.push(Buffer.from(header), entry);
  }
  return Buffer.concat(parts);
}

/** An entry and the objects in it (metadata, labels...), frozen: one decoded entry is handed to every later list. */
function frozen(entry: unknown): unknown {
  if (typeof entry === 'object' && entry !== null) {
    for (const value of Object.values(entry)) if (typeof value === 'object' && value !== null) Object.freeze(value);
    Object.freeze(entry);
  }
  return entry;
}

/**
 * A deserializer for an answer whose list is `list` that decodes only the entries it has not
 * decoded before (through `decode`, the answer's own deserializer).
 */
export function cachedListDeserializer(list: 'containers' | 'items', decode: Deserialize): Deserialize {
  const maps = MAP_FIELDS[list];
  let known = new Map<string, Known>();
  return (answer) => {
    const entries = entriesOf(answer);
    if (entries === undefined) return decode(answer);
    const values: unknown[] = new Array(entries.length);
    const fresh: { index: number; id: string | undefined; bytes: Buffer }[] = [];
    for (const [index, bytes] of entries.entries()) {
      const id = idOf(bytes);
      const cached = id === undefined ? undefined : known.get(id);
      if (cached !== undefined && same(bytes, cached)) values[index] = cached.value;
      else fresh.push({ index, id, bytes });
    }
    if (fresh.length > 0) {
      const decoded = (decode(answerOf(fresh.map((f) => f.bytes))) as Record<string, unknown[]>)[list] ?? [];
      if (known.size + fresh.length > MAX_ENTRIES) known = new Map();
      for (const [i, f] of fresh.entries()) {
        values[f.index] = frozen(decoded[i]);
        const where = mapsOf(f.bytes, maps);
        // A copy: the answer's buffer is not kept for one entry's sake.
        if (f.id !== undefined && where !== undefined)
          known.set(f.id, { bytes: Buffer.from(f.bytes), maps: where, value: values[f.index] });
      }
    }
    return { [list]: values };
  };
}
