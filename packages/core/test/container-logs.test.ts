import { describe, expect, it } from '@jest/globals';
import {
  formatLogTime,
  logText,
  parseLogTime,
  podNameOf,
  readLogText,
  type ContainerLogSource,
  type LogLine,
  type LogReadOptions,
} from '../src/index.js';

describe('log times', () => {
  it('are written as the kubelet writes them: UTC, nine fractional digits', () => {
    const time = Date.UTC(2026, 11, 4, 3, 24, 6, 123);
    expect(formatLogTime({ time })).toBe('2026-12-04T03:24:06.123000000Z');
    expect(formatLogTime({ time, nanos: 456_789 })).toBe('2026-12-04T03:24:06.123456789Z');
    expect(formatLogTime({ time: Date.UTC(1999, 0, 1), nanos: 7 })).toBe('1999-01-01T00:00:00.000000007Z');
  });

  it('are read back to the nanosecond from Docker and CRI timestamps, any zone and precision', () => {
    const time = Date.UTC(2026, 11, 4, 3, 24, 6, 123);
    expect(parseLogTime('2026-12-04T03:24:06.123456789Z')).toEqual({ time, nanos: 456_789 });
    expect(parseLogTime('2026-12-04T03:24:06.123Z')).toEqual({ time });
    expect(parseLogTime('2026-12-04T03:24:06Z')).toEqual({ time: time - 123 });
    expect(parseLogTime('2026-12-04T04:24:06.1234+01:00')).toEqual({ time, nanos: 400_000 });
    for (const text of ['2026-12-04T03:24:06.123456789012Z', '2026-12-04 03:24:06Z', 'yesterday', '2026-13-04T03:24:06Z', ''])
      expect(parseLogTime(text)).toBeUndefined();
    const line = { time: Date.UTC(2026, 0, 2, 3, 4, 5, 6), nanos: 789 };
    expect(parseLogTime(formatLogTime(line))).toEqual(line);
  });
});

const encoder = new TextEncoder();
const at = Date.UTC(2026, 11, 4, 3, 24, 6, 123);
const printed: LogLine[] = [
  { stream: 'stdout', time: at, nanos: 456_789, content: encoder.encode('one\n') },
  { stream: 'stderr', time: at + 1, content: encoder.encode('two ') },
  { stream: 'stderr', time: at + 2, content: encoder.encode('halves\n') },
];

/** The lines a source gives, the options it was asked with kept. */
function lineSource(asked: LogReadOptions[]): ContainerLogSource {
  return {
    logs: async (_id, options = {}) => {
      asked.push(options);
      return (async function* () {
        yield* printed;
      })();
    },
  };
}

async function joined(chunks: AsyncIterable<Uint8Array>): Promise<string> {
  let text = '';
  for await (const chunk of chunks) text += new TextDecoder().decode(chunk);
  return text;
}

async function* stream(lines: readonly LogLine[]): AsyncGenerator<LogLine> {
  yield* lines;
}

describe('log text', () => {
  it("is the lines' contents joined, a part of a line (no newline) joined to the next", async () => {
    expect(await joined(logText(stream(printed)))).toBe('one\ntwo halves\n');
    expect(await joined(logText(stream([])))).toBe('');
  });

  it('puts each line after its time with timestamps, nine digits', async () => {
    expect(await joined(logText(stream(printed), { timestamps: true }))).toBe(
      '2026-12-04T03:24:06.123456789Z one\n2026-12-04T03:24:06.124000000Z two 2026-12-04T03:24:06.125000000Z halves\n',
    );
  });

  it('stops at limitBytes of text, the times counted, and ends the read of the lines', async () => {
    expect(await joined(logText(stream(printed), { limitBytes: 6 }))).toBe('one\ntw');
    expect(await joined(logText(stream(printed), { timestamps: true, limitBytes: 33 }))).toBe('2026-12-04T03:24:06.123456789Z on');
    let read = 0;
    const counted = (async function* () {
      for (const line of printed) {
        read += 1;
        yield line;
      }
    })();
    await joined(logText(counted, { limitBytes: 4 }));
    expect(read).toBe(1);
  });

  it("is read from a source's own text when it has one, else from its lines with the same options", async () => {
    const asked: LogReadOptions[] = [];
    const lines = lineSource(asked);
    expect(await joined(await readLogText(lines, 'c', { tailLines: 2, timestamps: true, limitBytes: 100 }))).toContain(' one\n');
    // The lines are asked without `timestamps`, the text's limit bounding them.
    expect(asked).toEqual([{ tailLines: 2, limitBytes: 100 }]);
    const own: ContainerLogSource = {
      ...lines,
      text: async (id, options) =>
        (async function* () {
          yield encoder.encode(`${id} ${JSON.stringify(options)}`);
        })(),
    };
    expect(await joined(await readLogText(own, 'c', { follow: true }))).toBe('c {"follow":true}');
    expect(asked).toHaveLength(1);
  });
});

describe('podNameOf', () => {
  it("is a pod's metadata.name: the id without the namespace a v1 Pod's id carries", () => {
    expect(podNameOf('etcd.kube-system', 'kube-system')).toBe('etcd');
    expect(podNameOf('web', undefined)).toBe('web');
    expect(podNameOf('web', 'default')).toBe('web');
    // A 2014 id with dots is a name of its own, whatever it ends with.
    expect(podNameOf('web.kube-system', undefined)).toBe('web.kube-system');
    expect(podNameOf('web.other', 'kube-system')).toBe('web.other');
  });
  it('parseLogTime reads lines of one second by the fast path, and gives the same as the long one', () => {
    const first = parseLogTime('2026-12-04T03:24:06.123456789Z');
    expect(first).toEqual({ time: Date.parse('2026-12-04T03:24:06.123Z'), nanos: 456789 });
    // Same second: the fast path.
    expect(parseLogTime('2026-12-04T03:24:06.999000000Z')).toEqual({ time: Date.parse('2026-12-04T03:24:06.999Z') });
    expect(parseLogTime('2026-12-04T03:24:06.12x456789Z')).toBeUndefined();
    // Another second, an offset, fewer digits: the long way.
    expect(parseLogTime('2026-12-04T03:24:07.000000001Z')).toEqual({ time: Date.parse('2026-12-04T03:24:07Z'), nanos: 1 });
    expect(parseLogTime('2026-12-04T04:24:06.5+01:00')).toEqual({ time: Date.parse('2026-12-04T03:24:06.500Z') });
    expect(parseLogTime('2026-12-04T03:24:07.250000000Z')).toEqual({ time: Date.parse('2026-12-04T03:24:07.250Z') });
  });
});
