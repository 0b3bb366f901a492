import { describe, expect, it } from '@jest/globals';
import { CommanderError } from 'commander';
import { hostAccessOf } from '@kubelet-ts/core';
import { parseManifests } from '@kubelet-ts/manifest';
import { defaultHostname } from '../src/legacy-flags.js';
import { buildProgram, normaliseFlagSpelling, optionsOf } from '../src/options.js';

/** Parses a command line as `kubelet-ts` does. */
function parse(argv: readonly string[]) {
  const program = buildProgram();
  program.configureOutput({ writeErr: () => {}, writeOut: () => {} });
  program.parse(normaliseFlagSpelling(argv), { from: 'user' });
  return optionsOf(program);
}

describe('command lines of the 2014 agent', () => {
  it('takes a 2014 command line as it was written', () => {
    const o = parse([
      '-config=/etc/kubelet',
      '-etcd_servers',
      'http://127.0.0.1:4001',
      '--docker_endpoint=unix:///var/run/docker.sock',
      '--network_container_image=kubernetes/pause:latest',
      '-root_dir=/var/lib/kubelet',
      '--hostname_override=node-1',
      '-address=127.0.0.1',
      '-port=10250',
      '-sync_frequency=10s',
      '-allow_privileged=false',
      '-logtostderr=true',
      '--alsologtostderr',
      '-log_dir=/var/log',
      '-stderrthreshold=ERROR',
    ]);
    expect(o).toMatchObject({
      config: '/etc/kubelet',
      etcdServers: ['http://127.0.0.1:4001'],
      dockerHost: 'unix:///var/run/docker.sock',
      podInfraImage: 'kubernetes/pause:latest',
      volumesRoot: '/var/lib/kubelet/volumes',
      hostnameOverride: 'node-1',
      address: '127.0.0.1',
      port: 10250,
      syncFrequency: 10_000,
      allowPrivileged: false,
      logtostderr: true,
      alsologtostderr: true,
      enableServer: true,
    });
  });

  it('turns the server off with --enable_server=false, and on with the bare flag', () => {
    expect(parse(['--enable_server=false']).enableServer).toBe(false);
    expect(parse(['-enable_server=0']).enableServer).toBe(false);
    expect(parse(['--enable_server']).enableServer).toBe(true);
    expect(parse([]).enableServer).toBe(true);
  });

  it('maps glog verbosity onto the log level, unless --log-level is given', () => {
    expect(parse(['--v=0']).logLevel).toBe('info');
    expect(parse(['-v=2']).logLevel).toBe('debug');
    expect(parse(['--v', '4']).logLevel).toBe('trace');
    expect(parse(['--v=4', '--log-level=warn']).logLevel).toBe('warn');
  });

  it('keeps --volumes-root over --root_dir when both are given', () => {
    expect(parse(['--root_dir=/r', '--volumes-root=/v']).volumesRoot).toBe('/v');
  });

  it('takes --allow_privileged as the power to run privileged containers, which the manifest checks then grant', () => {
    const options = parse(['--allow_privileged']);
    expect(options.allowPrivileged).toBe(true);
    expect(parse([]).allowPrivileged).toBe(false);
    const privileged = JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p' },
      spec: { containers: [{ name: 'c', image: 'busybox', securityContext: { privileged: true } }] },
    });
    expect(parseManifests(privileged, 'p.json', hostAccessOf(options)).manifests).toHaveLength(1);
    expect(parseManifests(privileged, 'p.json', hostAccessOf(parse([]))).rejected[0]?.errors[0]?.message).toContain('--allow-privileged');
  });

  it('still refuses an unknown flag, or a bad boolean, naming it', () => {
    for (const [argv, message] of [
      [['-no_such_flag=1'], /unknown option '--no-such-flag=1'/],
      [['--enable_server=maybe'], /expected true or false, got "maybe"/],
      [['--v=loud'], /expected a verbosity/],
    ] as const) {
      const error = (() => {
        try {
          parse(argv);
          return undefined;
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(CommanderError);
      expect((error as Error).message).toMatch(message);
    }
  });

  it('takes the FQDN as the default hostname, as 2014 did', () => {
    const name = defaultHostname();
    expect(name).not.toBe('');
    expect(name.split('.')[0]).not.toBe('');
  });
});
