import { describe, expect, it } from '@jest/globals';
import { buildProgram, normaliseFlagSpelling, optionsOf } from '../src/options.js';

function parse(argv: readonly string[]) {
  const program = buildProgram();
  program.exitOverride();
  program.configureOutput({ writeErr: () => {}, writeOut: () => {} });
  program.parse(normaliseFlagSpelling(['--runtime', 'memory', ...argv]), { from: 'user' });
  return optionsOf(program);
}
const refusal = (argv: readonly string[]) => {
  try {
    parse(argv);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
};

describe('container log flags (issue 22)', () => {
  it("default to the kubelet's: 10Mi × 5 files, /var/log/pods, links in /var/log/containers", () => {
    const options = parse([]);
    expect({
      size: options.containerLogMaxSize,
      files: options.containerLogMaxFiles,
      pods: options.podLogsDir,
      links: options.containerLogLinksDir,
    }).toEqual({ size: 10 * 1024 * 1024, files: 5, pods: '/var/log/pods', links: '/var/log/containers' });
  });

  it("take the kubelet's size units, a folder, and '' for no links", () => {
    const options = parse([
      '--container-log-max-size',
      '512Ki',
      '--container-log-max-files',
      '2',
      '--pod-logs-dir',
      '/srv/pods',
      '--container-log-links-dir',
      '',
    ]);
    expect([options.containerLogMaxSize, options.containerLogMaxFiles, options.podLogsDir, options.containerLogLinksDir]).toEqual([
      512 * 1024,
      2,
      '/srv/pods',
      '',
    ]);
    expect(parse(['--container-log-max-size', '1G']).containerLogMaxSize).toBe(1e9);
  });

  it('refuse a size under 1Ki or without a unit it knows, and fewer than 2 files (the current one and one rotated), naming the flag', () => {
    expect(refusal(['--container-log-max-size', '100'])).toMatch(/--container-log-max-size: expected a size of at least 1Ki/);
    expect(refusal(['--container-log-max-size', '10MB'])).toMatch(/--container-log-max-size/);
    expect(refusal(['--container-log-max-files', '1'])).toMatch(
      /--container-log-max-files: expected a whole number of files from 2 to 100/,
    );
    expect(refusal(['--container-log-max-files', 'many'])).toMatch(/--container-log-max-files/);
  });
});
