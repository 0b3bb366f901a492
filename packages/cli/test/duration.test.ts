import { describe, expect, it } from '@jest/globals';
import { buildProgram, normaliseFlagSpelling } from '../src/options.js';
import { parseDuration } from '../src/duration.js';

describe('parseDuration', () => {
  it.each([
    ['10s', 10_000],
    ['500ms', 500],
    ['1m', 60_000],
    ['1h', 3_600_000],
    ['1m30s', 90_000],
    ['1h1m1s1ms', 3_661_001],
    ['2', 2_000],
    ['0', 0],
    ['1.5s', 1_500],
    ['0.25', 250],
    [' 10s ', 10_000],
  ])('parses %j as %i ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(['abc', '', '10x', '10 s', '1m 30s', 's', '-1s', '10s!', '1.s'])('rejects %j, quoting it', (text) => {
    expect(() => parseDuration(text)).toThrow(JSON.stringify(text));
  });

  it('says what it expects', () => {
    expect(() => parseDuration('soon')).toThrow('invalid duration "soon": use e.g. 500ms, 10s, 1m');
  });
});

describe('normaliseFlagSpelling', () => {
  it('turns underscores in a flag name into dashes', () => {
    expect(normaliseFlagSpelling(['--hostname_override=x'])).toEqual(['--hostname-override=x']);
    expect(normaliseFlagSpelling(['--manifest_url'])).toEqual(['--manifest-url']);
    expect(normaliseFlagSpelling(['--sync_frequency', '5s'])).toEqual(['--sync-frequency', '5s']);
  });

  it('leaves values alone, after "=" or as the next argument', () => {
    expect(normaliseFlagSpelling(['--config=/a_b'])).toEqual(['--config=/a_b']);
    expect(normaliseFlagSpelling(['--hostname_override=my_host'])).toEqual(['--hostname-override=my_host']);
    expect(normaliseFlagSpelling(['--config', '/etc/my_manifests'])).toEqual(['--config', '/etc/my_manifests']);
  });

  it('leaves positional arguments, one-letter flags, negative numbers and dashed flags alone', () => {
    expect(normaliseFlagSpelling(['a_b', '-h', '-5', '-', '--already-dashed', '--'])).toEqual([
      'a_b',
      '-h',
      '-5',
      '-',
      '--already-dashed',
      '--',
    ]);
  });

  it("reads a single dash before a long name as Go's flag package did (-config=…, -etcd_servers)", () => {
    expect(normaliseFlagSpelling(['-config=/etc/kubelet', '-etcd_servers', 'http://a', '-x_y'])).toEqual([
      '--config=/etc/kubelet',
      '--etcd-servers',
      'http://a',
      '--x-y',
    ]);
  });

  it('does not change its input', () => {
    const argv = ['--hostname_override=x'];
    normaliseFlagSpelling(argv);
    expect(argv).toEqual(['--hostname_override=x']);
  });
});

describe('buildProgram', () => {
  const parse = (argv: string[]) =>
    buildProgram()
      .configureOutput({ writeOut: () => {}, writeErr: () => {} })
      .parse(normaliseFlagSpelling(argv), { from: 'user' })
      .opts();

  it('accepts the 2014 underscore spellings and parses durations', () => {
    expect(
      parse(['--hostname_override=node-a', '--sync_frequency=1m30s', '--file_check_frequency', '500ms', '--config', '/a_b']),
    ).toMatchObject({
      hostnameOverride: 'node-a',
      syncFrequency: 90_000,
      fileCheckFrequency: 500,
      config: '/a_b',
    });
  });

  it('has the documented defaults', () => {
    expect(parse([])).toMatchObject({ runtime: 'auto', syncFrequency: 10_000, fileCheckFrequency: 20_000, logLevel: 'info' });
  });

  it('rejects a bad duration with the text quoted', () => {
    expect(() => parse(['--sync-frequency', '10x'])).toThrow('"10x"');
  });

  it('takes --concurrency as a fixed whole number of pods, adaptive when absent', () => {
    expect(parse([]).concurrency).toBeUndefined();
    expect(parse(['--concurrency', '8'])).toMatchObject({ concurrency: 8 });
    for (const bad of ['0', '-1', '2.5', 'x', '2000'])
      expect(() => parse(['--concurrency', bad])).toThrow(
        /--concurrency: expected a whole number of pods from 1 to 1024, got .*adaptive default/,
      );
  });
});
