import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from '@kubelet-ts/core';
import { hostDnsOf } from '../src/host-flags.js';
import { buildProgram, normaliseFlagSpelling, optionsOf } from '../src/options.js';

/** A logger that keeps what was warned. */
function recording(): Logger & { warned: Array<[Record<string, unknown>, string]> } {
  const warned: Array<[Record<string, unknown>, string]> = [];
  const none = () => undefined;
  const logger = {
    warned,
    trace: none,
    debug: none,
    info: none,
    error: none,
    warn: (fields: Record<string, unknown>, message: string) => void warned.push([fields, message]),
    child: () => logger,
  };
  return logger as unknown as Logger & { warned: Array<[Record<string, unknown>, string]> };
}

describe('--resolv-conf (the host resolver a pod’s dnsConfig adds to)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kubelet-ts-resolv-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  const parse = (args: string[]) => {
    const program = buildProgram();
    program.parse(normaliseFlagSpelling(args), { from: 'user' });
    return optionsOf(program);
  };

  it('is /etc/resolv.conf unless given; "" is none', () => {
    expect(parse([]).resolvConf).toBe('/etc/resolv.conf');
    expect(parse(['--resolv-conf', '/run/systemd/resolve/resolv.conf']).resolvConf).toBe('/run/systemd/resolve/resolv.conf');
    expect(parse(['--resolv-conf', '']).resolvConf).toBe('');
  });

  it('reads the file given; a file that cannot be read is said, with the flag, and taken as none', async () => {
    const file = join(dir, 'resolv.conf');
    await writeFile(file, 'nameserver 10.0.0.2\nsearch corp.example\noptions ndots:2\n');
    const logger = recording();
    expect(await hostDnsOf(file, logger)).toEqual({ servers: ['10.0.0.2'], searches: ['corp.example'], options: ['ndots:2'] });
    expect(await hostDnsOf('', logger)).toBeUndefined();
    expect(logger.warned).toEqual([]);
    expect(await hostDnsOf(join(dir, 'missing'), logger)).toBeUndefined();
    expect(logger.warned).toHaveLength(1);
    expect(logger.warned[0]?.[0]).toMatchObject({ flag: '--resolv-conf', path: join(dir, 'missing') });
    expect(logger.warned[0]?.[1]).toContain("give --resolv-conf '' to say so");
  });
});
